package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
)

// barrier takes checkpoint N = the current epoch: it waits for room among
// the pending checkpoints (checkpoint.max.pending; ingestion goes on
// meanwhile, up to checkpoint.max.buffered.bytes), takes the gate
// exclusively (every Write of N has returned), snapshots the ranges
// [frontier at the previous barrier, frontier now), bumps the epoch to
// N+1 and releases the gate; then, with writes of N+1 flowing, it calls
// Flush(N) and hands the checkpoint to the committer. A checkpoint with
// no ranges is no checkpoint: nothing is flushed or committed.
//
// Only the checkpointer goroutine calls barrier (and run, for the final
// one, after the checkpointer returned).
func (s *session) barrier() error {
	select {
	case s.pending <- struct{}{}:
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
	start := time.Now()
	s.gate.Lock()
	s.mu.Lock()
	var ranges []sdk.Range
	for p, next := range s.accepted {
		if from, ok := s.base[p]; !ok || from != next {
			ranges = append(ranges, sdk.Range{Partition: p, From: from, Next: next})
		}
	}
	if len(ranges) == 0 {
		s.mu.Unlock()
		s.gate.Unlock()
		<-s.pending
		return nil
	}
	slices.SortFunc(ranges, func(a, b sdk.Range) int { return strings.Compare(a.Partition, b.Partition) })
	var origins []string
	for _, r := range ranges {
		if s.origins[r.Partition] {
			origins = append(origins, r.Partition)
		}
	}
	clear(s.origins)
	cp := Checkpoint{
		ID:      s.epoch,
		Ranges:  ranges,
		Origins: origins,
		Records: s.epochRecords,
		Bytes:   s.epochBytes,
		Oldest:  s.epochOldest,
		Barrier: start,
	}
	s.base = maps.Clone(s.accepted)
	s.epoch++
	s.epochBytes, s.epochRecords, s.epochOldest = 0, 0, time.Time{}
	close(s.epochCh)
	s.epochCh = make(chan struct{})
	s.mu.Unlock()
	s.gate.Unlock()

	n := s.c.progress.pending.Add(1)
	s.c.metrics.PendingCheckpoints(int(n))
	flushed, err := s.sink.Flush(s.ctx, cp.ID)
	if err != nil {
		s.sinkFailed(fmt.Sprintf("flush of checkpoint %d", cp.ID), err)
		return fmt.Errorf("flush of checkpoint %d: %w", cp.ID, err)
	}
	sdk.CrashPoint("host.after-flush") // crash tests: phase 1 done, phase 2 not begun
	cp.Results = flushed.Results
	for _, r := range flushed.Results {
		cp.Files += r.Files
	}
	s.c.progress.files.Add(int64(cp.Files))
	s.c.progress.skipped.Add(flushed.Skipped)
	s.c.metrics.Checkpoint(time.Since(start), cp.Files)
	s.c.metrics.Skipped(flushed.Skipped)
	s.c.logger.Debug("checkpoint flushed", "checkpoint", cp.ID, "partitions", len(ranges), "records", cp.Records, "files", cp.Files, "skipped", flushed.Skipped)
	return s.results.Send(s.ctx, cp)
}

// commitLoop commits checkpoints in order until the channel is closed and
// drained (nil) or the session is aborted. It runs on the session's
// lifetime (s.ctx).
//
//nolint:contextcheck // see above
func (s *session) commitLoop() error {
	for {
		cp, err := s.results.Receive(s.ctx)
		if errors.Is(err, ErrChannelClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.commit(cp); err != nil {
			return err
		}
	}
}

// commit makes one checkpoint visible, retrying with backoff (see
// commitToSink); in a cluster the connector's committer makes it visible
// and this waits for its answer (awaitAnswer). After success it records
// the new frontier, acknowledges the sources and stores the offsets.
func (s *session) commit(cp Checkpoint) error {
	start := time.Now()
	var tcs []sdk.TableCommit
	var err error
	if s.c.share != nil {
		err = s.awaitAnswer(cp)
	} else {
		tcs, err = s.commitToSink(sdk.CommitRequest{Checkpoint: cp.ID, Ranges: cp.Ranges, Results: cp.Results})
	}
	if err != nil {
		return err
	}
	sdk.CrashPoint("host.after-commit") // crash tests: in the table, not yet acknowledged or stored
	now := time.Now()
	if s.c.share == nil {
		s.noteCommit(cp, tcs, start, now)
	}
	s.mu.Lock()
	for _, r := range cp.Ranges {
		s.committed[r.Partition] = r.Next
	}
	s.committedID = max(s.committedID, cp.ID)
	committed := maps.Clone(s.committed)
	perTask := map[int]map[string]int64{}
	for _, r := range cp.Ranges {
		if i, ok := s.owner[r.Partition]; ok {
			if perTask[i] == nil {
				perTask[i] = map[string]int64{}
			}
			perTask[i][r.Partition] = r.Next
		}
	}
	close(s.commitCh)
	s.commitCh = make(chan struct{})
	override := s.override
	s.override = nil
	s.mu.Unlock()

	n := s.c.progress.pending.Add(-1)
	s.c.metrics.PendingCheckpoints(int(n))
	s.runnersMu.Lock()
	for i, pos := range perTask {
		if r := s.runners[i]; r != nil {
			r.acknowledge(pos)
		}
	}
	s.runnersMu.Unlock()
	if s.c.share == nil {
		s.c.setCommitted(committed, cp.ID)
		s.storeCommitted(s.ctx, committed, cp.ID, now, override != nil)
	}

	// The token goes back only now: end of input is declared when no
	// token is out, and by then the stored offsets must be final.
	<-s.pending
	s.mu.Lock()
	if s.eoiFlushed && len(s.pending) == 0 {
		s.c.progress.endOfInput.Store(true)
	}
	s.mu.Unlock()
	return nil
}

// noteCommit records a commit in the connector's progress, metrics and
// table list; tcs is the sink's answer (none: cp's own counts).
func (s *session) noteCommit(cp Checkpoint, tcs []sdk.TableCommit, start, now time.Time) {
	var records int64
	for _, tc := range tcs {
		records += tc.Records
	}
	if len(tcs) == 0 {
		records = cp.Records
	}
	s.c.progress.committed(cp.ID, now, records)
	lag := time.Duration(0)
	if !cp.Oldest.IsZero() {
		lag = now.Sub(cp.Oldest)
	}
	s.c.metrics.Commit(now.Sub(start), lag, records)
	s.c.noteTableCommits(tcs, now)
	s.c.logger.Debug("checkpoint committed", "checkpoint", cp.ID, "records", records, "tables", len(tcs), "lag", lag)
}

// storeCommitted stores the offsets of a commit, and deletes the user's
// offset override once a commit carried it. Both are records only: the
// sink holds the truth.
func (s *session) storeCommitted(ctx context.Context, committed map[string]int64, id uint64, at time.Time, overrideSpent bool) {
	ctx, cancel := s.c.closeCtx(ctx)
	defer cancel()
	if err := s.c.opts.Offsets.PutCommitted(ctx, s.c.opts.Name, store.Committed{
		Checkpoint: id, Positions: committed, CommittedAt: at,
	}); err != nil {
		s.c.logger.Warn("cannot store the committed offsets (the sink holds them anyway)", "error", err)
	}
	if overrideSpent {
		if err := s.c.opts.Offsets.DeleteOverride(ctx, s.c.opts.Name); err != nil {
			s.c.logger.Warn("cannot delete the applied offset override", "error", err)
		}
	}
}

// commitToSink calls the sink's Commit, retrying with backoff. Past
// Tuning.CommitMaxAttempts attempts or CommitMaxElapsed it fails the
// connector: never stop committing silently.
func (s *session) commitToSink(req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	t := s.c.opts.Tuning
	start := time.Now()
	wait := t.CommitBackoff
	for attempt := 1; ; attempt++ {
		sdk.CrashPoint("host.before-commit") // crash tests
		tcs, err := s.sink.Commit(s.ctx, req)
		if err == nil {
			return tcs, nil
		}
		if s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		if processGone(s.sinkProc, err) {
			s.sinkFailed(fmt.Sprintf("commit of checkpoint %d", req.Checkpoint), err)
			return nil, s.ctx.Err()
		}
		s.c.metrics.CommitFailure()
		if errors.Is(err, sdk.ErrPermanent) {
			return nil, fmt.Errorf("commit of checkpoint %d failed, and the sink says retrying cannot help; the tasks stop so that nothing is acknowledged that is not in the table (restart the connector once the cause is fixed): %w",
				req.Checkpoint, err)
		}
		elapsed := time.Since(start)
		if attempt >= t.CommitMaxAttempts || elapsed+wait > t.CommitMaxElapsed {
			return nil, fmt.Errorf("commit of checkpoint %d failed %d times over %s; the tasks stop so that nothing is acknowledged that is not in the table (restart the connector once the cause is fixed): %w",
				req.Checkpoint, attempt, elapsed.Round(time.Millisecond), err)
		}
		s.c.logger.Warn("commit failed; retrying", "checkpoint", req.Checkpoint, "attempt", attempt, "retry_in", wait,
			"unavailable", errors.Is(err, sdk.ErrTransient), "error", err)
		if !sleepCtx(s.ctx, wait) {
			return nil, s.ctx.Err()
		}
		wait = min(2*wait, t.CommitMaxBackoff)
	}
}
