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

// This file is the cluster side of phase 2 (distributed mode): every
// worker publishes its flushed checkpoints through the connector's
// ControlLink and waits for the committer's answer (awaitAnswer); the
// one worker that holds the connector's committer gathers them and
// commits, once per commit interval, every checkpoint that continues the
// connector's frontier, in one commit (commitForCluster).

// errCommitterOpen ends the session when the committer's own sink task
// cannot be opened or cannot read the table's frontier (a service down):
// a new session tries again, with the reopen's backoff.
var errCommitterOpen = errors.New("cannot open the committer's sink task")

// errCommitRefused ends the committer's session when the sink refused a
// cluster commit for a reason other than an outage (the table moved under
// it: another committer, a zombie, committed first). A new session reads
// the table's frontier and plans again.
var errCommitRefused = errors.New("cluster commit refused")

// errCommitterLeft is a cluster commit cut short because this worker
// stopped committing (ctx ended) while the sink was committing: the
// commit may or may not have landed, so nothing is answered about it.
// The successor reads the table and decides.
var errCommitterLeft = errors.New("the committer left during a commit")

// stopAnswerWait bounds, once the connector stops, the wait for the
// committer's answers: a committer that died with the stopping worker's
// checkpoints unanswered would hold the stop (and a reconfiguration, or
// the worker's exit) for nothing, since whoever runs the tasks next
// reads them again from the committed frontier.
const stopAnswerWait = 2 * resendEvery

// errUnanswered ends a stopping session whose last checkpoints the
// committer did not answer within stopAnswerWait: nothing is lost, they
// are read again from the frontier.
var errUnanswered = errors.New("the committer did not answer the last checkpoints")

// awaitAnswer publishes a flushed checkpoint for the connector's
// committer and waits for its answer, publishing it again every
// resendEvery, and at once when the committer moves or a committer says
// it is ready. A refusal ends the session (errSuperseded): its
// uncommitted work is dropped and a new session resumes from the
// frontier. Once the connector stops, the wait is bounded by
// stopAnswerWait (errUnanswered).
func (s *session) awaitAnswer(cp Checkpoint) error {
	st := s.c.share
	ref := CheckpointRef{Worker: st.worker, Session: s.id, Checkpoint: cp.ID}
	results := slices.Clone(cp.Results)
	for i := range results {
		results[i].Checkpoint = cp.ID
	}
	msg := ControlMessage{Flushed: &FlushedCheckpoint{Ref: ref, Ranges: cp.Ranges, Origins: cp.Origins, Results: results, Records: cp.Records, Oldest: cp.Oldest}}
	s.c.logger.Debug("checkpoint published for the committer", "checkpoint", ref.String(), "ranges", describeRanges(cp.Ranges))
	_, epoch, _ := st.role()
	readies := st.readyCount()
	stopping := s.stopping
	var giveUp <-chan time.Time
	for {
		if err := st.link.Publish(s.ctx, msg); err != nil {
			if s.ctx.Err() != nil {
				return s.ctx.Err()
			}
			s.c.logger.Warn("cannot publish a flushed checkpoint for the committer; publishing it again soon", "checkpoint", cp.ID, "error", err)
		}
		resend := time.NewTimer(resendEvery)
		for wait := true; wait; {
			o, ok, answered := st.takeOutcome(ref)
			if ok {
				resend.Stop()
				if o.committed {
					return nil
				}
				return fmt.Errorf("%w: checkpoint %d: %s", errSuperseded, cp.ID, o.reason)
			}
			_, e, changed := st.role()
			if e != epoch {
				epoch = e // a new committer: it has not seen the checkpoint
				break
			}
			if n := st.readyCount(); n != readies {
				readies = n // a committer started, maybe after the move was seen
				break
			}
			select {
			case <-answered:
			case <-changed:
			case <-resend.C:
				wait = false
			case <-stopping:
				stopping, giveUp = nil, time.After(stopAnswerWait)
			case <-giveUp:
				resend.Stop()
				return fmt.Errorf("%w: checkpoint %d within %s of the stop", errUnanswered, cp.ID, stopAnswerWait)
			case <-s.ctx.Done():
				resend.Stop()
				return s.ctx.Err()
			}
		}
		resend.Stop()
	}
}

// clusterCommitter runs the connector's committer whenever this worker
// holds it, for the session's life. The committer may leave (another
// worker takes it; the checkpoints waiting here are published to it
// again by their workers) and come back; the session's writers go on
// meanwhile.
func (s *session) clusterCommitter(ctx context.Context) {
	st := s.c.share
	committer, _, changed := st.role()
	for {
		if committer {
			var ended bool
			if changed, ended = s.holdCommitter(ctx, changed); ended {
				return
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
		committer, _, changed = st.role()
	}
}

// holdCommitter commits for the cluster (commitForCluster) until the
// committer moves to another worker; it returns the role's next change
// and whether the committer ended with the session instead.
func (s *session) holdCommitter(ctx context.Context, changed <-chan struct{}) (<-chan struct{}, bool) {
	st := s.c.share
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.commitForCluster(ctx); err != nil && ctx.Err() == nil {
			s.abort(err)
		}
	}()
	for committer := true; committer; {
		select {
		case <-changed:
			committer, _, changed = st.role()
		case <-done:
			return changed, true
		}
	}
	cancel()
	<-done
	s.c.logger.Info("the connector's committer moved to another worker")
	return changed, false
}

// committerTask is the sink task the committer commits through: a task
// of its own on the worker's sink process, opened with the committer.
// Reading the table's frontier on it leaves the session's writing task
// (its replay floors, its checkpoints in flight) alone, so the worker
// the committer moves to goes on writing, and commits what its own
// writers flushed before the move too.
type committerTask struct {
	sink SinkTask
	// start and checkpoint are the frontier the committer begins at (the
	// table's, or the user's pending override, then override is set).
	start      map[string]int64
	checkpoint uint64
	override   *store.Override
}

// openCommitterTask opens the committer's sink task and reads the table's
// frontier on it. A failure wraps errSinkLost when the sink process died,
// errCommitterOpen otherwise.
func (s *session) openCommitterTask(ctx context.Context) (*committerTask, error) {
	c := s.c
	sink, ov, err := openSinkTask(ctx, c, s.sinkProc, 1)
	if err == nil {
		var fr sdk.Frontier
		if fr, err = sinkFrontier(ctx, sink, c.opts.Offsets, c.opts.Name); err == nil {
			start, override := resumeFrom(ctx, c, fr, ov)
			return &committerTask{sink: sink, start: start, checkpoint: fr.Checkpoint, override: override}, nil
		}
		closeQuietly(c, ctx, sink)
	}
	if processGone(s.sinkProc, err) {
		return nil, fmt.Errorf("%w: open the committer's sink task: %w", errSinkLost, err)
	}
	return nil, fmt.Errorf("%w: %w", errCommitterOpen, err)
}

// commitForCluster is the connector's committer: it gathers the flushed
// checkpoints of every worker and commits those that continue the
// frontier (planCommit) in one commit per round, a round every commit
// interval, or sooner once every worker of the previous commit has a
// checkpoint ready; its first commit as soon as a checkpoint continues
// the frontier. After each commit it answers through the link and
// stores the offsets. It starts from the frontier the committer opened at
// (the table's, read on its own sink task). It returns nil when ctx ends.
func (s *session) commitForCluster(ctx context.Context) error {
	c, st := s.c, s.c.share
	ct, err := s.openCommitterTask(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer closeQuietly(c, ctx, ct.sink)
	frontier := maps.Clone(ct.start)
	commitID := ct.checkpoint
	override := ct.override
	waiting := map[CheckpointRef]FlushedCheckpoint{}
	newest := map[string]string{} // each worker's newest session seen
	log := newAnswerLog(answerLogSize)
	var lastWorkers []string // the workers of the last commit
	gaps := newGapWatch(c.opts.Tuning.GapWait)
	tick := time.NewTicker(c.settings.CommitInterval)
	defer tick.Stop()
	c.logger.Info("committing the connector's checkpoints for the cluster", "worker", st.worker, "table_checkpoint", commitID)
	s.answer(ctx, CommitAnswer{Committer: st.worker, Epoch: s.committerEpoch(), Ready: true})

	for {
		due := false
		select {
		case <-ctx.Done():
			return nil
		case <-st.inboxCh:
		case <-tick.C:
			due = true
		}
		// Another committer committed after this one read the table (the
		// old one, until it applied the move): continue from its answer.
		// The sink checks against the table itself anyway.
		if f, id := st.frontierAt(); id > commitID {
			frontier, commitID = f, id
		}
		for _, f := range st.takeInbox() {
			if a, ok := log.get(f.Ref); ok {
				s.answer(ctx, a) // a repeat: answer as before
				continue
			}
			if f.Ref.Worker == st.worker && f.Ref.Session != s.id {
				c.logger.Debug("dropped a checkpoint of this worker's ended session", "checkpoint", f.Ref.String())
				continue // a session of this worker that ended: no one waits
			}
			switch n := newest[f.Ref.Worker]; {
			case f.Ref.Session < n:
				c.logger.Debug("dropped a checkpoint of a replaced session", "checkpoint", f.Ref.String())
				continue // replaced by a newer session of its worker
			case f.Ref.Session > n:
				newest[f.Ref.Worker] = f.Ref.Session
				for ref := range waiting {
					if ref.Worker == f.Ref.Worker && ref.Session < f.Ref.Session {
						delete(waiting, ref)
					}
				}
			}
			waiting[f.Ref] = f
		}
		plan := planCommit(frontier, slices.Collect(maps.Values(waiting)))
		if lingering := gaps.lingering(plan.gaps, time.Now()); len(lingering) > 0 {
			if fr, moved := s.tableMoved(ctx, ct.sink, frontier, lingering); moved {
				frontier, commitID = fr.Positions, max(commitID, fr.Checkpoint)
				c.setCommitted(frontier, commitID)
				plan = planCommit(frontier, slices.Collect(maps.Values(waiting)))
			} else if fr != nil {
				plan.refused = append(plan.refused, lingering...)
			}
		}
		for _, r := range plan.refused {
			delete(waiting, r.Ref)
			c.logger.Info("refused a flushed checkpoint", "checkpoint", r.Ref.String(), "reason", r.Reason)
		}
		// Until its first commit the committer commits what it has at once:
		// after a failover, the checkpoints published again have waited.
		if len(plan.chosen) == 0 || (!due && lastWorkers != nil && !covers(plan.workers(), lastWorkers)) {
			if len(plan.refused) > 0 {
				a := CommitAnswer{Committer: st.worker, Epoch: s.committerEpoch(), Refused: plan.refused}
				for _, r := range plan.refused {
					log.put(r.Ref, CommitAnswer{Committer: a.Committer, Epoch: a.Epoch, Refused: []Refusal{r}})
				}
				s.answer(ctx, a)
			}
			continue
		}
		start := time.Now()
		req := plan.request(commitID + 1)
		tcs, err := s.commitClusterRequest(ctx, ct.sink, req)
		if errors.Is(err, errCommitterLeft) {
			return nil // the commit's fate is unknown: no answer, the successor decides
		}
		if err != nil {
			return err
		}
		now := time.Now()
		commitID, frontier = req.Checkpoint, plan.next
		lastWorkers = plan.workers()
		refs := make([]CheckpointRef, len(plan.chosen))
		for i, f := range plan.chosen {
			refs[i] = f.Ref
			delete(waiting, f.Ref)
		}
		a := CommitAnswer{Committer: st.worker, Epoch: s.committerEpoch(), Commit: commitID, Frontier: maps.Clone(frontier), Covered: refs, Refused: plan.refused}
		for _, ref := range refs {
			log.put(ref, CommitAnswer{Committer: a.Committer, Epoch: a.Epoch, Commit: a.Commit, Frontier: a.Frontier, Covered: []CheckpointRef{ref}})
		}
		for _, r := range plan.refused {
			log.put(r.Ref, CommitAnswer{Committer: a.Committer, Epoch: a.Epoch, Refused: []Refusal{r}})
		}
		s.answer(ctx, a)
		s.noteCommit(plan.checkpoint(commitID), tcs, start, now)
		c.setCommitted(frontier, commitID)
		s.storeCommitted(ctx, maps.Clone(frontier), commitID, now, override != nil)
		override = nil
		c.logger.Debug("cluster commit", "commit", commitID, "checkpoints", describeRefs(refs), "ranges", describeRanges(req.Ranges),
			"refused", len(plan.refused))
	}
}

// tableMoved reads the table's frontier (on the committer's sink task)
// for checkpoints that waited on a gap for Tuning.GapWait. moved reports
// that the table is ahead of frontier somewhere: a commit this committer
// never heard of (its committer stopped before answering); the committer
// continues from fr. Otherwise nothing will fill the gaps, and lingering
// gets the reason for refusing them (their workers resume from the
// frontier); fr is nil when the table could not be read (the gaps are
// looked at again later).
func (s *session) tableMoved(ctx context.Context, sink SinkTask, frontier map[string]int64, lingering []Refusal) (fr *sdk.Frontier, moved bool) {
	c := s.c
	got, err := sinkFrontier(ctx, sink, c.opts.Offsets, c.opts.Name)
	if err != nil {
		c.logger.Warn("checkpoints wait on a gap, and the table's frontier cannot be read to tell why; looking again later", "checkpoints", len(lingering), "error", err)
		return nil, false
	}
	for p, at := range got.Positions {
		if f, ok := frontier[p]; !ok || at > f {
			c.logger.Warn("the table holds commits this committer did not hear of (their committer stopped before answering); continuing from the table's frontier",
				"partition", p, "committed", f, "table", at, "table_checkpoint", got.Checkpoint)
			return &got, true
		}
	}
	for i := range lingering {
		lingering[i].Reason += fmt.Sprintf(", and nothing filled the gap within %s: resume from the frontier", c.opts.Tuning.GapWait)
		lingering[i].Gap = true
	}
	c.logger.Warn("refusing checkpoints that waited on a gap the table does not explain", "checkpoints", len(lingering), "table_checkpoint", got.Checkpoint)
	return &got, false
}

// committerEpoch is the assignment epoch this worker holds the
// committer with.
func (s *session) committerEpoch() int64 {
	_, e, _ := s.c.share.role()
	return e
}

// answer publishes the committer's answer; a failure is logged (the
// workers publish their checkpoints again, and get the answer again).
func (s *session) answer(ctx context.Context, a CommitAnswer) {
	if err := s.c.share.link.Publish(ctx, ControlMessage{Answer: &a}); err != nil && ctx.Err() == nil {
		s.c.logger.Warn("cannot publish the committer's answer; the workers will ask again", "commit", a.Commit, "error", err)
	}
}

// commitClusterRequest commits a cluster commit, retrying while the
// sink reports an outage (sdk.ErrTransient). Any other failure ends the
// session (errCommitRefused), so that a new one plans from the table's
// frontier again; a permanent one fails the connector.
func (s *session) commitClusterRequest(ctx context.Context, sink SinkTask, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	t := s.c.opts.Tuning
	start := time.Now()
	wait := t.CommitBackoff
	for {
		tcs, err := sink.Commit(ctx, req)
		if err == nil {
			return tcs, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: commit %d: %w", errCommitterLeft, req.Checkpoint, err)
		}
		if processGone(s.sinkProc, err) {
			s.sinkFailed(fmt.Sprintf("cluster commit %d", req.Checkpoint), err)
			return nil, fmt.Errorf("cluster commit %d: %w", req.Checkpoint, err)
		}
		s.c.metrics.CommitFailure()
		switch {
		case errors.Is(err, sdk.ErrPermanent):
			return nil, fmt.Errorf("cluster commit %d failed, and the sink says retrying cannot help (restart the connector once the cause is fixed): %w", req.Checkpoint, err)
		case !errors.Is(err, sdk.ErrTransient) || time.Since(start)+wait > t.CommitMaxElapsed:
			return nil, fmt.Errorf("%w: commit %d: %w", errCommitRefused, req.Checkpoint, err)
		}
		s.c.logger.Warn("cluster commit waits for the sink's service; retrying", "commit", req.Checkpoint, "retry_in", wait, "error", err)
		if !sleepCtx(ctx, wait) {
			return nil, fmt.Errorf("%w: commit %d: %w", errCommitterLeft, req.Checkpoint, err)
		}
		wait = min(2*wait, t.CommitMaxBackoff)
	}
}

// commitPlan is what one round of the cluster committer commits.
type commitPlan struct {
	// chosen continue the frontier, in commit order.
	chosen []FlushedCheckpoint
	// refused start below the frontier somewhere: never committable.
	refused []Refusal
	// gaps start above the frontier somewhere and wait for what fills
	// the gap; the reason names the first such range.
	gaps []Refusal
	// next is the frontier after chosen.
	next map[string]int64
}

// planCommit picks from the waiting checkpoints those that continue
// frontier: each of its ranges starts exactly at the frontier, or covers
// a partition the frontier does not have yet from where its source began
// (an origin: a range that continues a worker's uncommitted work instead
// is refused, or rows before it would never be committed); a checkpoint chosen moves
// the frontier to its ranges' ends, so that the next one of the same
// worker can follow in the same commit. A checkpoint with a range that
// starts below the frontier is refused: what it covers is committed from
// other files (another worker took the partition over, or it read from a
// stale position). One that starts above it waits: a checkpoint that
// fills the gap may still come. Waiting checkpoints are taken in a fixed
// order (by worker, session, checkpoint), so that of two that start at
// the same place the same one wins on every committer.
func planCommit(frontier map[string]int64, waiting []FlushedCheckpoint) commitPlan {
	slices.SortFunc(waiting, func(a, b FlushedCheckpoint) int { return compareRefs(a.Ref, b.Ref) })
	plan := commitPlan{next: maps.Clone(frontier)}
	if plan.next == nil {
		plan.next = map[string]int64{}
	}
	done := make([]bool, len(waiting))
	for progress := true; progress; {
		progress = false
		for i, f := range waiting {
			if done[i] {
				continue
			}
			stale, gap := "", false
			for _, r := range f.Ranges {
				at, ok := plan.next[r.Partition]
				switch {
				case !ok && !slices.Contains(f.Origins, r.Partition):
					stale = fmt.Sprintf("partition %s has no committed position, and the checkpoint continues at %d from uncommitted work", r.Partition, r.From)
				case !ok || r.From == at:
				case r.From < at:
					stale = fmt.Sprintf("partition %s is committed up to %d, the checkpoint starts at %d", r.Partition, at, r.From)
				default:
					gap = true
				}
				if stale != "" {
					break
				}
			}
			switch {
			case stale != "":
				plan.refused = append(plan.refused, Refusal{Ref: f.Ref, Reason: stale})
			case gap:
				continue
			default:
				plan.chosen = append(plan.chosen, f)
				for _, r := range f.Ranges {
					plan.next[r.Partition] = r.Next
				}
			}
			done[i] = true
			progress = true
		}
	}
	for i, f := range waiting {
		if !done[i] {
			plan.gaps = append(plan.gaps, Refusal{Ref: f.Ref, Reason: gapReason(plan.next, f)})
		}
	}
	return plan
}

// gapReason names the first range of f that starts above frontier.
func gapReason(frontier map[string]int64, f FlushedCheckpoint) string {
	for _, r := range f.Ranges {
		if at, ok := frontier[r.Partition]; ok && r.From > at {
			return fmt.Sprintf("partition %s is committed up to %d, the checkpoint starts at %d", r.Partition, at, r.From)
		}
	}
	return "a range starts above the frontier"
}

// workers returns the workers of the chosen checkpoints, sorted.
func (p commitPlan) workers() []string {
	var ws []string
	for _, f := range p.chosen {
		if !slices.Contains(ws, f.Ref.Worker) {
			ws = append(ws, f.Ref.Worker)
		}
	}
	slices.Sort(ws)
	return ws
}

// covers reports whether have holds every worker of want (and want is
// not empty).
func covers(have, want []string) bool {
	if len(want) == 0 {
		return false
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// request is the sink's commit of the plan: one range per partition,
// from the frontier to the end of the last chosen checkpoint of it, and
// every chosen checkpoint's results, each naming its own checkpoint.
func (p commitPlan) request(id uint64) sdk.CommitRequest {
	req := sdk.CommitRequest{Checkpoint: id}
	merged := map[string]sdk.Range{}
	for _, f := range p.chosen {
		for _, r := range f.Ranges {
			if m, ok := merged[r.Partition]; ok {
				r.From = min(m.From, r.From)
				r.Next = max(m.Next, r.Next)
			}
			merged[r.Partition] = r
		}
		req.Results = append(req.Results, f.Results...)
	}
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		req.Ranges = append(req.Ranges, merged[name])
	}
	return req
}

// checkpoint sums the chosen checkpoints, for the connector's progress
// and metrics.
func (p commitPlan) checkpoint(id uint64) Checkpoint {
	cp := Checkpoint{ID: id}
	for _, f := range p.chosen {
		cp.Records += f.Records
		for _, r := range f.Results {
			cp.Files += r.Files
			cp.Bytes += r.Bytes
		}
		if !f.Oldest.IsZero() && (cp.Oldest.IsZero() || f.Oldest.Before(cp.Oldest)) {
			cp.Oldest = f.Oldest
		}
	}
	return cp
}

// answerLogSize bounds the answers the committer keeps to repeat.
const answerLogSize = 4096

// answerLog keeps the committer's latest answers by checkpoint, to
// answer a checkpoint published again (the first answer was lost, or
// crossed it) as it was answered, oldest forgotten first.
type answerLog struct {
	byRef map[CheckpointRef]CommitAnswer
	order []CheckpointRef
	size  int
}

func newAnswerLog(size int) *answerLog {
	return &answerLog{byRef: map[CheckpointRef]CommitAnswer{}, size: size}
}

func (l *answerLog) get(ref CheckpointRef) (CommitAnswer, bool) {
	a, ok := l.byRef[ref]
	return a, ok
}

func (l *answerLog) put(ref CheckpointRef, a CommitAnswer) {
	if _, ok := l.byRef[ref]; !ok {
		l.order = append(l.order, ref)
	}
	l.byRef[ref] = a
	for len(l.order) > l.size {
		delete(l.byRef, l.order[0])
		l.order = l.order[1:]
	}
}

// describeRanges renders ranges for a log line.
func describeRanges(rs []sdk.Range) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s[%d,%d)", r.Partition, r.From, r.Next)
	}
	return strings.Join(parts, " ")
}

// describeRefs renders refs for a log line.
func describeRefs(refs []CheckpointRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}
