package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
)

// pendingRestart is a restart accepted and under way or just done. Its
// instances show RESTARTING until the work is done and, for tasks, until
// the new runtime has them past UNASSIGNED.
type pendingRestart struct {
	connector bool
	tasks     map[int]bool
	done      bool               // the restart work finished
	rt        *runtime.Connector // the runtime the restart left (done)
}

// RestartConnector implements [API]. floe has no connector instance apart
// from its runtime (the processes, pipelines and committer of all its
// tasks, sharing one sink), so restarting "the connector" restarts that
// runtime whole: a final commit, then a fresh start from the sink's
// frontier, every task with it.
//
//   - Neither flag: the runtime restarts whole, before the call returns
//     (Connect's restart from before KIP-745; the REST API answers 204).
//   - includeTasks: the runtime restarts whole.
//   - onlyFailed: only what is FAILED restarts. A connector that failed
//     as a whole (or could not start) restarts whole; otherwise, with
//     includeTasks, its FAILED tasks restart in place; else nothing does.
//
// With a flag the restart is asynchronous, as KIP-745's: the status
// returned at once shows the instances being restarted as RESTARTING
// (the connector and every task on a whole restart, since the tasks live
// in the runtime; only the FAILED tasks on an in-place restart), and they
// stay so until they run again. The restart outlives ctx (the request):
// its final commit is bounded by the worker's
// task.shutdown.graceful.timeout.ms, the new start by a minute more.
func (w *Worker) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (ConnectorStatus, error) {
	c, err := w.get(name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	if err := c.lockOp(ctx); err != nil {
		return ConnectorStatus{}, err
	}
	handedOver := false
	defer func() {
		if !handedOver {
			c.op.unlock()
		}
	}()
	if c.deleted {
		return ConnectorStatus{}, fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	cfg, target, rt, failure, _ := c.snapshot()
	c.forgetHealing() // a human acted: the policy counts afresh
	if target == store.TargetStopped {
		// As in Connect: a STOPPED connector restarts into STOPPED, which
		// leaves nothing to do (PUT resume starts it).
		return w.status(c), nil
	}
	ended := rt == nil
	if rt != nil {
		select {
		case <-rt.Done():
			ended = true
		default:
		}
	}
	failed := failure != "" || ended
	if !includeTasks && !onlyFailed {
		if err := w.restartLocked(ctx, c); err != nil {
			return ConnectorStatus{}, err
		}
		return w.status(c), nil
	}

	pr := &pendingRestart{tasks: map[int]bool{}}
	var inPlace []int
	switch {
	case failed || !onlyFailed:
		pr.connector = true
		for i := range tasksMax(cfg) {
			pr.tasks[i] = true
		}
	case includeTasks:
		for i, t := range rt.Status().Tasks {
			if t.State == runtime.StateFailed {
				pr.tasks[i] = true
				inPlace = append(inPlace, i)
			}
		}
	}
	if !pr.connector && len(pr.tasks) == 0 {
		return w.status(c), nil // nothing FAILED: nothing to restart
	}
	c.mu.Lock()
	c.restart = pr
	c.mu.Unlock()
	st := w.status(c)

	// The restart goes on after the answer: it owns c.op until done.
	handedOver = true
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.restartBound())
	go func() {
		defer cancel()
		defer c.op.unlock()
		var err error
		if pr.connector {
			err = w.restartLocked(rctx, c)
		} else {
			for _, i := range inPlace {
				if e := rt.RestartTask(rctx, i); e != nil {
					err = errors.Join(err, fmt.Errorf("task %d: %w", i, e))
				}
			}
		}
		if err != nil {
			w.logger.Error("connector restart failed", "connector", name, "error", err)
		}
		c.mu.Lock()
		pr.done, pr.rt = true, c.rt
		c.mu.Unlock()
	}()
	return st, nil
}

// restartBound bounds a restart: its final commit within
// task.shutdown.graceful.timeout.ms, the new start within a minute more.
func (w *Worker) restartBound() time.Duration {
	bound := w.cfg.ShutdownTimeout
	if bound <= 0 {
		bound = DefaultShutdownTimeout
	}
	return bound + time.Minute
}

// RestartTask implements [API]: the task reopens and resumes from what the
// host accepted; a connector that failed as a whole restarts whole.
func (w *Worker) RestartTask(ctx context.Context, name string, task int) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	if err := c.lockOp(ctx); err != nil {
		return err
	}
	defer c.op.unlock()
	if c.deleted {
		return fmt.Errorf("connector %s: %w: %w", name, ErrNotFound, errGone)
	}
	cfg, target, rt, failure, _ := c.snapshot()
	c.forgetHealing()
	if task < 0 || task >= tasksMax(cfg) || target == store.TargetStopped {
		return fmt.Errorf("connector %s has no task %d: %w", name, task, ErrNotFound)
	}
	if rt == nil || failure != "" {
		return w.restartLocked(ctx, c)
	}
	select {
	case <-rt.Done():
		return w.restartLocked(ctx, c)
	default:
	}
	return rt.RestartTask(ctx, task)
}

// restartLocked stops and starts the connector again; c.op is held. A
// stop cut short by ctx still restarts: what was not committed is read
// again.
func (w *Worker) restartLocked(ctx context.Context, c *conn) error {
	if err := w.stopLocked(ctx, c); err != nil {
		w.logger.Warn("connector restart: the stop was cut short; restarting anyway", "connector", c.name, "error", err)
	}
	c.mu.Lock()
	cfg := maps.Clone(c.config)
	c.mu.Unlock()
	// Plugins may have come back (or gone) since the last validation.
	v := w.validate(ctx, cfg)
	c.mu.Lock()
	c.secrets, c.comps = v.secrets, v.comps
	if !v.ok() {
		c.failure = (&ValidationError{Infos: v.infos}).Error()
		c.mu.Unlock()
		return nil
	}
	c.failure = ""
	c.mu.Unlock()
	w.startLocked(c)
	return nil
}
