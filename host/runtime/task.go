package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// taskRunner is one source task's pipeline within a session: a reader
// goroutine that owns the source task (Read, Commit and Close are never
// concurrent) and a writer goroutine that writes what was read, in order.
// At most pipeline.max.inflight.batches batches are between the two.
type taskRunner struct {
	s   *session
	idx int

	// ctx ends the task's calls: cancelled by a task failure, a task
	// restart or the session's end. Writes use the session's ctx, so a
	// task restart never cuts a Write in half. readCtx also ends when the
	// session stops, which cuts a waiting Read short but leaves the final
	// Commit and Close to ctx.
	ctx        context.Context
	cancel     context.CancelFunc
	readCtx    context.Context
	cancelRead context.CancelFunc
	// handover is set when the task moves to another worker of the
	// cluster: once what it read is written, the runner waits until that
	// is committed before it closes the task.
	handover atomic.Bool
	// refused is set when the host refused the source's dead letters for
	// good (errors.tolerance=none): the Read failing with that answer
	// fails permanently, a class the answer loses on its way through the
	// plugin.
	refused atomic.Bool

	queue chan item
	slots chan struct{} // a token per batch read and not yet written

	readMu     sync.Mutex
	readCancel context.CancelFunc // ends the Read under way; nil between Reads

	ackMu  sync.Mutex
	ackPos map[string]int64 // positions to pass to the source's Commit
	ackSig chan struct{}

	failOnce sync.Once
	drained  chan struct{} // writer returned: all read batches written
	done     chan struct{} // reader returned: task closed
}

// item is a batch between reader and writer, or the end-of-input marker.
type item struct {
	batch    client.Batch
	received time.Time
	eoi      bool
}

func newTaskRunner(s *session, i int) *taskRunner {
	ctx, cancel := context.WithCancel(s.ctx)
	readCtx, cancelRead := context.WithCancel(ctx)
	n := s.c.settings.MaxInflight
	return &taskRunner{
		s: s, idx: i, ctx: ctx, cancel: cancel, readCtx: readCtx, cancelRead: cancelRead,
		queue:   make(chan item, n+1),
		slots:   make(chan struct{}, n),
		ackPos:  map[string]int64{},
		ackSig:  make(chan struct{}, 1),
		drained: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

func (r *taskRunner) setReadCancel(cancel context.CancelFunc) {
	r.readMu.Lock()
	defer r.readMu.Unlock()
	r.readCancel = cancel
}

// endCurrentRead ends the Read under way, if any, as its poll timeout
// would: the source returns what it has, and nothing is lost (see
// sourceHost.DeadLetter).
func (r *taskRunner) endCurrentRead() {
	r.readMu.Lock()
	defer r.readMu.Unlock()
	if r.readCancel != nil {
		r.readCancel()
	}
}

// stop ends the task without failing it (a restart).
func (r *taskRunner) stop() { r.cancel() }

// fail marks the task FAILED with err and stops it; the batches it read
// before are still written.
func (r *taskRunner) fail(err error) {
	r.failOnce.Do(func() {
		r.s.c.logger.Error("task failed", "task", r.idx, "error", err)
		r.s.c.setTaskFailed(r.idx, err)
		r.cancel()
	})
}

// acknowledge queues positions for the source's Commit; the reader
// delivers them between reads.
func (r *taskRunner) acknowledge(pos map[string]int64) {
	r.ackMu.Lock()
	maps.Copy(r.ackPos, pos)
	r.ackMu.Unlock()
	select {
	case r.ackSig <- struct{}{}:
	default:
	}
}

// ackTimeout bounds one source Commit. The commit is for monitoring only
// (the table holds the truth), so a consumer group in the middle of a
// rebalance, or a broker away, must hold up neither reading nor a clean
// stop.
const ackTimeout = 5 * time.Second

// deliverAcks calls the source's Commit with what was acknowledged since
// the last call, within ackTimeout. An error is logged: the sink is
// floe's truth.
func (r *taskRunner) deliverAcks(ctx context.Context, t SourceTask) {
	r.ackMu.Lock()
	pos := r.ackPos
	r.ackPos = map[string]int64{}
	r.ackMu.Unlock()
	if len(pos) == 0 || t == nil {
		return
	}
	actx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	if err := t.Commit(actx, pos); err != nil && ctx.Err() == nil {
		r.s.c.logger.Warn("source commit failed (monitoring only: the table holds the positions)", "task", r.idx, "error", err)
	}
}

// run is the reader; it starts the writer and returns after the task is
// closed.
func (r *taskRunner) run() {
	s, c := r.s, r.s.c
	defer close(r.done)
	defer r.cancel()
	go r.write()
	go func() {
		select {
		case <-s.stopping:
			r.cancelRead()
		case <-r.readCtx.Done():
		}
	}()

	task, proc, gen := r.open(0)
	eoi := false
	for task != nil {
		if r.ctx.Err() != nil || r.readCtx.Err() != nil {
			break
		}
		if stoppingNow(s) {
			break
		}
		paused, pauseCh := c.pausedNow()
		if paused || eoi {
			select {
			case <-pauseCh:
			case <-r.ackSig:
				r.deliverAcks(r.ctx, task)
			case <-s.stopping:
			case <-r.readCtx.Done():
			}
			continue
		}
		r.deliverAcks(r.ctx, task)
		n := r.acquire(pauseCh)
		if n == 0 {
			continue
		}
		// A pause that came meanwhile wins; one that comes during the
		// Read shows once it returned (see Connector.Pause).
		if !c.beginRead(r.idx) {
			for range n {
				<-r.slots
			}
			continue
		}
		rctx, cancel := context.WithTimeout(r.readCtx, c.opts.Tuning.ReadPoll)
		r.setReadCancel(cancel)
		res, err := task.Read(rctx, n)
		r.setReadCancel(nil)
		cancel()
		for range n - len(res.Batches) {
			<-r.slots
		}
		now := time.Now()
		for _, b := range res.Batches {
			c.progress.recordsIn.Add(b.NumRecords)
			c.metrics.RecordsIn(r.idx, b.NumRecords, b.Size())
		}
		c.endRead(r.idx)
		for _, b := range res.Batches {
			c.metrics.BatchesInFlight(r.idx, 1)
			r.queue <- item{batch: b, received: now}
		}
		if err != nil {
			if r.readCtx.Err() != nil {
				break
			}
			if !processGone(proc, err) {
				var ce *client.Error
				if !errors.As(err, &ce) { // a client.Error names the plugin, the task and the call
					err = fmt.Errorf("source task %d: read: %w", r.idx, err)
				}
				if r.refused.Load() {
					err = sdk.Permanent(err)
				}
				r.fail(err)
				break
			}
			// The source process died: once what was read is written,
			// reopen the task on the restarted process; it resumes from
			// the accepted frontier, so nothing is lost or doubled.
			c.logger.Warn("source process lost; reopening the task after its restart", "task", r.idx, "error", err)
			if !r.waitWritten() {
				break
			}
			task, proc, gen = r.open(gen)
			continue
		}
		if res.EndOfInput {
			eoi = true
			r.queue <- item{eoi: true}
			c.logger.Info("source task reached end of input", "task", r.idx)
		}
	}
	close(r.queue)
	<-r.drained
	if task == nil {
		return
	}
	// A task handed over to another worker closes once what it read is
	// committed: its successor then starts where it stopped.
	if r.handover.Load() && r.ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(r.ctx, c.opts.Tuning.RevokeTimeout)
		if err := s.waitCommitted(wctx, s.handedOn(r.idx)); err != nil {
			c.logger.Warn("task handed over before what it read was committed; its successor resumes from the committed frontier", "task", r.idx, "error", err)
		}
		cancel()
		r.deliverAcks(r.ctx, task)
	}
	// After a stop, pass on the final commit before closing (within
	// ackTimeout, see deliverAcks).
	if r.ctx.Err() == nil && stoppingNow(s) {
		select {
		case <-s.finished:
		case <-r.ctx.Done():
		}
		r.deliverAcks(r.ctx, task)
	}
	cctx, cancel := c.closeCtx(s.ctx)
	defer cancel()
	if err := task.Close(cctx); err != nil && !processGone(proc, err) {
		c.logger.Warn("closing source task", "task", r.idx, "error", err)
	}
}

func stoppingNow(s *session) bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// open opens the source task on a process newer than generation after.
// It returns a nil task when the task failed or the pipeline stops.
func (r *taskRunner) open(after int) (SourceTask, Process, int) {
	c := r.s.c
	role := c.roles[sdk.KindSource]
	for {
		proc, gen, err := role.await(r.readCtx, after)
		if err != nil {
			if r.readCtx.Err() == nil {
				r.fail(fmt.Errorf("source task %d: %w", r.idx, err))
			}
			return nil, nil, 0
		}
		t, err := proc.OpenSource(r.readCtx, c.sourceOpen(r.idx, &sourceHost{s: r.s, r: r}))
		if err != nil {
			if r.readCtx.Err() != nil {
				return nil, nil, 0
			}
			if processGone(proc, err) {
				after = gen
				continue
			}
			r.fail(fmt.Errorf("source task %d: open: %w", r.idx, err))
			return nil, nil, 0
		}
		c.setTask(r.idx, StateRunning, "")
		return t, proc, gen
	}
}

// acquire waits for at least one free in-flight slot and takes every free
// one; 0 means it was interrupted (pause, stop, acknowledgements).
func (r *taskRunner) acquire(pauseCh <-chan struct{}) int {
	select {
	case r.slots <- struct{}{}:
	case <-pauseCh:
		return 0
	case <-r.s.stopping:
		return 0
	case <-r.ctx.Done():
		return 0
	}
	n := 1
	for n < cap(r.slots) {
		select {
		case r.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// waitWritten waits until the writer has written every batch read so far.
func (r *taskRunner) waitWritten() bool {
	for range cap(r.slots) {
		select {
		case r.slots <- struct{}{}:
		case <-r.ctx.Done():
			return false
		}
	}
	for range cap(r.slots) {
		<-r.slots
	}
	return true
}

// write is the writer goroutine: it writes the queued batches in order.
// Once the task failed or stopped, what remains queued is still written
// when it was read fine; only a session abort drops it.
func (r *taskRunner) write() {
	defer close(r.drained)
	s := r.s
	for it := range r.queue {
		if it.eoi {
			s.taskEndOfInput(r.idx)
			continue
		}
		if s.ctx.Err() == nil {
			if err := s.writeBatch(r, it); err != nil {
				r.fail(err)
			}
		}
		// Written, dropped or abandoned: its shared memory, if any, goes.
		it.batch.Release()
		s.c.metrics.BatchesInFlight(r.idx, -1)
		<-r.slots
	}
}

// errDropped marks a batch the chain check drops: all of it was written.
var errDropped = errors.New("batch already written")
