package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/floehq/floe/sdk"
)

// State is a connector's or task's state, with Kafka Connect's names.
type State string

// States the runtime reports.
const (
	StateUnassigned State = "UNASSIGNED"
	StateRunning    State = "RUNNING"
	StatePaused     State = "PAUSED"
	StateFailed     State = "FAILED"
)

// TaskStatus is one source task's state.
type TaskStatus struct {
	State State
	Trace string
	// Permanent marks a failure no restart can fix (see [Permanent]).
	Permanent bool
}

// Status is a connector's state, its tasks' and its progress.
type Status struct {
	State    State
	Trace    string
	Tasks    []TaskStatus
	Progress Progress
}

// Pause stops reading; writes in flight finish and checkpoints go on, so
// what was read gets committed. Processes stay. A task shows PAUSED once
// the Read it had under way (at most pipeline.max.inflight.batches
// batches) has returned, and the connector once every task has: from then
// on nothing more is read.
func (c *Connector) Pause() { c.setPaused(true) }

// Resume undoes Pause.
func (c *Connector) Resume() { c.setPaused(false) }

func (c *Connector) setPaused(p bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused == p {
		return
	}
	c.paused = p
	close(c.pauseCh)
	c.pauseCh = make(chan struct{})
	c.settleLocked()
}

// settleLocked brings the states in line with paused: a RUNNING task is
// PAUSED when paused and not inside a Read, a PAUSED one RUNNING when not
// paused; the connector is PAUSED when paused and no task is reading.
// c.mu is held.
func (c *Connector) settleLocked() {
	reading := false
	for i, t := range c.tasks {
		switch {
		case c.paused && t.State == StateRunning && !c.reading[i]:
			c.tasks[i].State = StatePaused
		case !c.paused && t.State == StatePaused:
			c.tasks[i].State = StateRunning
		}
		reading = reading || (c.reading[i] && c.tasks[i].State == StateRunning)
	}
	if c.state == StateRunning || c.state == StatePaused {
		c.state = StateRunning
		if c.paused && !reading {
			c.state = StatePaused
		}
	}
}

// beginRead marks task i as reading, unless reading is paused (then it
// returns false and the task must not read).
func (c *Connector) beginRead(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return false
	}
	c.reading[i] = true
	return true
}

// endRead marks task i's Read as returned: a pause waiting for it shows.
func (c *Connector) endRead(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reading[i] = false
	c.settleLocked()
}

// pausedNow returns whether reading is paused and a channel closed when
// that changes.
func (c *Connector) pausedNow() (bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused, c.pauseCh
}

// Status returns the connector's and its tasks' states and its progress.
func (c *Connector) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{
		State:    c.state,
		Trace:    c.trace,
		Tasks:    slices.Clone(c.tasks),
		Progress: c.progress.snapshot(),
	}
	if c.opts.Components[sdk.KindMaintenance].Name != "" {
		m := c.maintLog.summary()
		if c.maintErr != nil {
			m.Error = c.maintErr.Error()
		}
		st.Progress.Maintenance = &m
	}
	return st
}

func (c *Connector) setTask(i int, st State, trace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.tasks) {
		return
	}
	c.tasks[i] = TaskStatus{State: st, Trace: trace}
	c.settleLocked()
}

// setTaskFailed marks task i FAILED with err, classified by [Permanent].
func (c *Connector) setTaskFailed(i int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.tasks) {
		return
	}
	c.tasks[i] = TaskStatus{State: StateFailed, Trace: err.Error(), Permanent: Permanent(err)}
	c.settleLocked()
}

func (c *Connector) taskFailed(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tasks[i].State == StateFailed
}

// fail ends the connector with err: it and every task not already FAILED
// become FAILED with err as the trace.
func (c *Connector) fail(err error) {
	c.logger.Error("connector failed", "error", err)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state, c.trace = StateFailed, err.Error()
	for i, t := range c.tasks {
		if t.State != StateFailed {
			c.tasks[i] = TaskStatus{State: StateFailed, Trace: err.Error(), Permanent: Permanent(err)}
		}
	}
}

// RestartTask restarts source task i in place: it is closed (its batches
// already read still get written) and opened again, resuming from what
// the host accepted. Between sessions it only clears a FAILED state, as the
// next session opens the task anyway. It fails once the connector ended.
func (c *Connector) RestartTask(ctx context.Context, i int) error {
	if i < 0 || i >= c.settings.Tasks {
		return fmt.Errorf("connector %s has no task %d (tasks.max is %d)", c.opts.Name, i, c.settings.Tasks)
	}
	if !c.runsTask(i) {
		return fmt.Errorf("connector %s: task %d runs on another worker of the cluster; restart it there", c.opts.Name, i)
	}
	select {
	case <-c.done:
		return fmt.Errorf("connector %s has ended; restart the connector instead", c.opts.Name)
	default:
	}
	for {
		c.mu.Lock()
		s := c.sess
		if s == nil {
			// Between sessions (starting, or the sink restarting): the
			// next session opens every task that is not FAILED.
			if c.tasks[i].State == StateFailed {
				c.tasks[i] = TaskStatus{State: StateUnassigned}
			}
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		err := s.restartTask(ctx, i)
		if !errors.Is(err, errSessionEnding) {
			return err
		}
		if c.stopping() {
			return fmt.Errorf("connector %s is stopping", c.opts.Name)
		}
		// The session is ending for a rewind: wait for it to go.
		if !sleepCtx(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
}
