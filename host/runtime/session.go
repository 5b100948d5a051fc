package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// session is one run of the pipeline on one open sink, from the sink's
// frontier. It ends with a stop (after a final checkpoint and commit),
// with the loss of the sink process (everything uncommitted is dropped
// and a new session rewinds to the new frontier) or with a failure.
//
// Locking: gate is the checkpoint barrier (pipelines hold it shared per
// batch, the barrier exclusively); mu guards the frontiers, the epoch and
// the counters below it. Never take gate while holding mu.
type session struct {
	c        *Connector
	sink     SinkTask
	sinkProc Process
	results  ResultChannel
	// id names the session in a cluster's control messages.
	id string

	ctx    context.Context // the session's calls; cancelled by abort
	cancel context.CancelFunc

	gate sync.RWMutex

	mu sync.Mutex
	// epoch is the checkpoint being written; it changes only under gate.
	epoch uint64
	// accepted is, per partition, the Next of the last batch written to
	// the sink (or the start frontier): the host's accepted frontier.
	accepted map[string]int64
	// base is accepted as it was at the previous barrier: where the
	// current checkpoint's ranges start.
	base map[string]int64
	// origins holds the partitions whose first batch of this session came
	// since the last barrier, from where the source began on its own (no
	// start position was known for them).
	origins map[string]bool
	// committed is the frontier of the last successful commit.
	committed   map[string]int64
	committedID uint64
	owner       map[string]int // task that last wrote each partition
	// Counters of the current epoch.
	epochBytes   int64
	epochRecords int64
	epochOldest  time.Time
	epochCh      chan struct{} // closed and replaced at each barrier
	commitCh     chan struct{} // closed and replaced at each commit
	partLocks    map[string]*sync.Mutex
	override     *store.Override
	eoi          []bool // per task: end of input seen and drained
	eoiFlushed   bool   // the final checkpoint after end of input is sent
	err          error  // why the session was aborted (first reason)

	pending     chan struct{} // one token per checkpoint between barrier and commit
	barrierReq  chan struct{}
	stopping    chan struct{} // closed when the graceful stop begins
	finished    chan struct{} // closed when the last commit is done (or the session aborted)
	runnersMu   sync.Mutex
	runners     []*taskRunner
	runnersDone bool          // set when the session stops taking new runners
	restartMu   sync.Mutex    // one task restart at a time
	ckptStopped chan struct{} // closed when the checkpointer returned
}

// openSession opens the sink on proc and reads its frontier.
func openSession(ctx context.Context, c *Connector, proc Process, lastEpoch uint64) (*session, error) {
	sink, ov, err := openSinkTask(ctx, c, proc, c.settings.Tasks)
	if err != nil {
		return nil, err
	}
	fr, err := sinkFrontier(ctx, sink, c.opts.Offsets, c.opts.Name)
	if err != nil {
		closeQuietly(c, ctx, sink)
		return nil, err
	}
	start, override := resumeFrom(ctx, c, fr, ov)
	c.setCommitted(fr.Positions, fr.Checkpoint)

	sctx, cancel := context.WithCancel(ctx)
	s := &session{
		c: c, sink: sink, sinkProc: proc, results: NewMemoryChannel(),
		id:  newSessionID(),
		ctx: sctx, cancel: cancel,
		epoch:       max(fr.Checkpoint, lastEpoch) + 1,
		accepted:    maps.Clone(start),
		base:        maps.Clone(start),
		origins:     map[string]bool{},
		committed:   maps.Clone(start),
		committedID: fr.Checkpoint,
		owner:       map[string]int{},
		epochCh:     make(chan struct{}),
		commitCh:    make(chan struct{}),
		partLocks:   map[string]*sync.Mutex{},
		override:    override,
		eoi:         make([]bool, c.settings.Tasks),
		pending:     make(chan struct{}, c.settings.MaxPending),
		barrierReq:  make(chan struct{}, 1),
		stopping:    make(chan struct{}),
		finished:    make(chan struct{}),
		runners:     make([]*taskRunner, c.settings.Tasks),
		ckptStopped: make(chan struct{}),
	}
	return s, nil
}

// openSinkTask opens a task of the connector's sink on proc with
// writers writers, handing it the user's pending offset override, which
// it returns too (nil when there is none).
func openSinkTask(ctx context.Context, c *Connector, proc Process, writers int) (SinkTask, *store.Override, error) {
	var reset *sdk.OffsetsReset
	ov, err := c.opts.Offsets.Override(ctx, c.opts.Name)
	switch {
	case err == nil:
		reset = &sdk.OffsetsReset{Positions: maps.Clone(ov.Positions), AfterCheckpoint: ov.AfterCheckpoint}
	case errors.Is(err, store.ErrNotFound):
	default:
		return nil, nil, fmt.Errorf("read offset override: %w", err)
	}
	sink, err := proc.OpenSink(ctx, client.SinkOpen{
		Component:    c.opts.Components[sdk.KindSink].Name,
		Connector:    c.opts.Name,
		Config:       c.pluginConfig(sdk.KindSink),
		Writers:      writers,
		OffsetsReset: reset,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("open sink: %w", err)
	}
	if reset == nil {
		return sink, nil, nil
	}
	return sink, &ov, nil
}

// resumeFrom returns where a task opened with the override ov resumes:
// the sink's frontier fr, or the override's positions while no commit
// after the override carried it (then override is ov). A spent override
// is deleted.
func resumeFrom(ctx context.Context, c *Connector, fr sdk.Frontier, ov *store.Override) (start map[string]int64, override *store.Override) {
	if ov == nil {
		return fr.Positions, nil
	}
	if fr.Checkpoint > ov.AfterCheckpoint {
		// A commit after the override carried it already.
		if err := c.opts.Offsets.DeleteOverride(ctx, c.opts.Name); err != nil {
			c.logger.Warn("cannot delete the spent offset override", "error", err)
		}
		return fr.Positions, nil
	}
	c.logger.Info("resuming from the offsets set by the user, not the sink's frontier", "positions", len(ov.Positions), "reset", ov.Reset)
	return maps.Clone(ov.Positions), ov
}

// errSessionEnding is returned by restartTask once the session no longer
// starts tasks.
var errSessionEnding = errors.New("the pipeline is ending")

func closeQuietly(c *Connector, ctx context.Context, sink SinkTask) {
	cctx, cancel := c.closeCtx(ctx)
	defer cancel()
	_ = sink.Close(cctx)
}

// lastEpoch returns the last checkpoint id the session used, so the next
// session never reuses one.
func (s *session) lastEpoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// abort ends the session at once with err (the first reason wins).
func (s *session) abort(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.cancel()
}

// sinkFailed handles an error of a sink call: a dead sink process aborts
// the session for a rewind, anything else fails the connector.
func (s *session) sinkFailed(op string, err error) {
	if s.ctx.Err() != nil {
		return
	}
	if processGone(s.sinkProc, err) {
		s.abort(fmt.Errorf("%w: %s: %w", errSinkLost, op, err))
		return
	}
	if errors.Is(err, sdk.ErrTransient) {
		s.abort(fmt.Errorf("%w: %s: %w", errSinkUnavailable, op, err))
		return
	}
	s.abort(fmt.Errorf("sink %s: %w", op, err))
}

// run runs the session until it ends; nil means a clean stop with
// everything committed.
func (s *session) run(ctx context.Context) error {
	c := s.c
	// A dead sink process ends the session even when the pipeline is idle.
	go func() {
		select {
		case <-s.sinkProc.Exited():
			s.abort(fmt.Errorf("%w: %s", errSinkLost, s.sinkProc.ExitReason()))
		case <-s.ctx.Done():
		}
	}()
	committerDone := make(chan struct{})
	go func() {
		defer close(committerDone)
		if err := s.commitLoop(); err != nil && s.ctx.Err() == nil {
			s.abort(err)
		}
	}()
	go func() {
		defer close(s.ckptStopped)
		s.checkpointLoop()
	}()
	clusterCommitterDone := make(chan struct{})
	if c.share != nil {
		go func() {
			defer close(clusterCommitterDone)
			s.clusterCommitter(s.ctx)
		}()
	} else {
		close(clusterCommitterDone)
	}
	s.runnersMu.Lock()
	for i := range c.settings.Tasks {
		if s.runners[i] == nil && !c.taskFailed(i) && c.runsTask(i) {
			s.startRunnerLocked(i)
		}
	}
	s.runnersMu.Unlock()

	// Wait for a stop or an abort.
	select {
	case <-c.stopReq:
	case <-s.ctx.Done():
	}
	graceful := s.ctx.Err() == nil
	close(s.stopping)
	s.runnersMu.Lock()
	s.runnersDone = true
	runners := append([]*taskRunner(nil), s.runners...)
	s.runnersMu.Unlock()
	for _, r := range runners {
		if r != nil {
			<-r.drained
		}
	}
	<-s.ckptStopped
	if graceful {
		if err := s.barrier(); err != nil && s.ctx.Err() == nil {
			s.abort(fmt.Errorf("final checkpoint: %w", err))
		}
	}
	s.results.Close()
	select {
	case <-committerDone:
	case <-s.ctx.Done():
		<-committerDone
	}
	close(s.finished)
	for _, r := range runners {
		if r != nil {
			<-r.done
		}
	}
	// The cluster's committer here commits what other workers flushed
	// until the session ends: a stop hands that on to the next committer.
	s.cancel()
	<-clusterCommitterDone
	if c.share != nil {
		c.share.forgetSession(s.id)
	}
	closeQuietly(c, ctx, s.sink)
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	s.cancel()
	c.progress.pending.Store(0)
	c.metrics.PendingCheckpoints(0)
	return err
}

// startRunnerLocked starts source task i's pipeline; runnersMu is held.
// The pipeline lives as long as the session (s.ctx), not as long as the
// caller's ctx (a task restart's request, say).
//
//nolint:contextcheck // see above
func (s *session) startRunnerLocked(i int) {
	r := newTaskRunner(s, i)
	s.runners[i] = r
	go r.run()
}

// restartTask closes task i's pipeline (what it read is still written)
// and starts a new one, which resumes from the accepted frontier.
func (s *session) restartTask(ctx context.Context, i int) error {
	s.restartMu.Lock()
	defer s.restartMu.Unlock()
	s.runnersMu.Lock()
	old, closed := s.runners[i], s.runnersDone
	s.runnersMu.Unlock()
	if closed {
		return errSessionEnding
	}
	if old != nil {
		old.stop()
		select {
		case <-old.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	s.eoi[i] = false
	s.mu.Unlock()
	s.c.setTask(i, StateUnassigned, "")
	s.runnersMu.Lock()
	defer s.runnersMu.Unlock()
	if s.runnersDone {
		return errSessionEnding
	}
	s.startRunnerLocked(i)
	return nil
}

// stopTask stops task i's pipeline for good in this session (its task
// moved to another worker of the cluster): it stops reading, writes what
// it read, waits until that is committed, and closes the task, within
// RevokeTimeout.
func (s *session) stopTask(i int) {
	s.runnersMu.Lock()
	r := s.runners[i]
	s.runnersMu.Unlock()
	if r == nil {
		return
	}
	r.handover.Store(true)
	r.cancelRead()
	t := time.NewTimer(s.c.opts.Tuning.RevokeTimeout + s.c.opts.Tuning.CloseTimeout)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		r.stop()
		<-r.done
	}
	s.runnersMu.Lock()
	if s.runners[i] == r {
		s.runners[i] = nil
	}
	s.runnersMu.Unlock()
}

// startTask starts task i's pipeline (its task was placed on this worker),
// unless the session is ending or already runs it.
func (s *session) startTask(i int) {
	s.runnersMu.Lock()
	defer s.runnersMu.Unlock()
	if s.runnersDone || s.runners[i] != nil || s.c.taskFailed(i) {
		return
	}
	s.mu.Lock()
	s.eoi[i] = false
	s.mu.Unlock()
	s.startRunnerLocked(i)
}

// handedOn returns, for the partitions task i wrote last, the position
// after what it handed on.
func (s *session) handedOn(i int) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for p, t := range s.owner {
		if t == i {
			out[p] = s.accepted[p]
		}
	}
	return out
}

// requestBarrier asks the checkpointer for a checkpoint soon.
func (s *session) requestBarrier() {
	select {
	case s.barrierReq <- struct{}{}:
	default:
	}
}

// checkpointLoop takes a barrier every commit interval and on request,
// until the session stops.
func (s *session) checkpointLoop() {
	t := time.NewTicker(s.c.settings.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.barrierReq:
		case <-s.stopping:
			return
		case <-s.ctx.Done():
			return
		}
		if err := s.barrier(); err != nil {
			if s.ctx.Err() == nil {
				s.abort(err)
			}
			return
		}
		s.checkEndOfInput()
	}
}

// partitionLock serialises the pipelines on one partition (two tasks can
// briefly hold batches of the same partition around a rebalance).
func (s *session) partitionLock(p string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.partLocks[p]
	if l == nil {
		l = &sync.Mutex{}
		s.partLocks[p] = l
	}
	return l
}

// startPositions answers StartPositions from the accepted frontier (which
// starts as the sink's frontier or the user's override). In a cluster
// another worker may have committed a partition past what this session
// accepted of it: once the control link caught up, such a partition
// (when this session holds nothing uncommitted of it) starts at the
// connector's committed frontier instead.
func (s *session) startPositions(ctx context.Context, partitions []string) map[string]int64 {
	var known map[string]int64
	if st := s.c.share; st != nil {
		sctx, cancel := context.WithTimeout(ctx, syncTimeout)
		if err := st.link.Sync(sctx); err != nil {
			s.c.logger.Warn("the control link did not catch up; new partitions start from what this worker knows (the committer refuses a stale start)", "error", err)
		}
		cancel()
		known = st.knownFrontier()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, f := range known {
		if a, ok := s.accepted[p]; (!ok || f > a) && s.base[p] == a && s.committed[p] == a {
			s.accepted[p], s.base[p], s.committed[p] = f, f, f
			delete(s.origins, p)
			s.c.logger.Debug("partition starts at the cluster's committed frontier", "partition", p, "at", f, "accepted", a)
		}
	}
	out := map[string]int64{}
	if len(partitions) == 0 {
		maps.Copy(out, s.accepted)
		return out
	}
	for _, p := range partitions {
		if v, ok := s.accepted[p]; ok {
			out[p] = v
		}
	}
	return out
}

// taskEndOfInput records that task i reached end of input and wrote all
// it read; once every task has, a final checkpoint follows.
func (s *session) taskEndOfInput(i int) {
	s.mu.Lock()
	s.eoi[i] = true
	all := true
	for j, e := range s.eoi {
		all = all && (e || !s.c.runsTask(j))
	}
	s.mu.Unlock()
	if all {
		s.requestBarrier()
	}
}

// checkEndOfInput runs after each barrier: when every task reached end of
// input and this barrier flushed what remained, the connector is done
// once the last commit lands.
func (s *session) checkEndOfInput() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.eoi {
		if !e && s.c.runsTask(i) {
			return
		}
	}
	// Every task stopped reading before this barrier took the gate, so
	// nothing can follow it.
	s.eoiFlushed = true
	if len(s.pending) == 0 {
		s.c.progress.endOfInput.Store(true)
	}
}

// waitCommitted waits until every partition in next is committed at least
// to its position there, taking checkpoints meanwhile (PartitionsRevoked).
func (s *session) waitCommitted(ctx context.Context, next map[string]int64) error {
	deadline := time.NewTimer(s.c.opts.Tuning.RevokeTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(min(100*time.Millisecond, s.c.settings.CommitInterval))
	defer poll.Stop()
	for {
		s.mu.Lock()
		var missing []string
		for p, n := range next {
			if s.committed[p] < n {
				missing = append(missing, p)
			}
		}
		ch := s.commitCh
		s.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		s.requestBarrier()
		select {
		case <-ch:
		case <-poll.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctx.Done():
			return fmt.Errorf("connector %s: the pipeline restarted before partitions %v were committed; they resume from the sink's frontier", s.c.opts.Name, missing)
		case <-deadline.C:
			return fmt.Errorf("connector %s: partitions %v not committed within %s of their revocation; whoever takes them over resumes from the sink's frontier", s.c.opts.Name, missing, s.c.opts.Tuning.RevokeTimeout)
		}
	}
}
