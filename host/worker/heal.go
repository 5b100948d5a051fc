package worker

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
)

// The restart policy: a connector or task that failed with anything but a
// permanent error (see [runtime.Permanent]) is restarted with exponential
// backoff and jitter, from restart.backoff.initial.ms up to
// errors.retry.delay.max.ms, for at most errors.retry.timeout after the
// failure began. Flink restarts failed tasks by policy; Kafka Connect
// leaves them for a human. A failure heals once the restarted runtime
// commits a checkpoint, or stays up for [healthyAfter] (a task, whose
// peers' commits prove nothing about it, only then); a new
// failure after that starts the count again.

// healTick is how often the worker looks for failures to heal.
const healTick = 200 * time.Millisecond

// connectorInstance keys the connector's own entry in conn.heal; tasks
// use their index.
const connectorInstance = -1

// healing is the restart policy's record of one failed instance.
type healing struct {
	since     time.Time // the failure began
	attempts  int       // restarts made for it
	next      time.Time // when the next restart is due
	restarted time.Time // the last restart; zero before the first
	commits   int64     // the runtime's commits at the last restart
	trace     string    // the failure's reason
	permanent bool      // no restart can fix it
	gaveUp    bool      // errors.retry.timeout ran out
	busy      bool      // a restart is under way
}

// healLoop applies the restart policy until life (the worker's) ends.
func (w *Worker) healLoop(life context.Context) {
	t := time.NewTicker(healTick)
	defer t.Stop()
	for {
		select {
		case <-life.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		conns := make([]*conn, 0, len(w.conns))
		for _, c := range w.conns {
			conns = append(conns, c)
		}
		w.mu.Unlock()
		for _, c := range conns {
			w.heal(life, c, time.Now())
		}
		w.healPasses.Add(1)
	}
}

// heal looks at one connector: failures get an entry and, when due, a
// restart; entries whose instance is healthy again are dropped.
func (w *Worker) heal(life context.Context, c *conn, now time.Time) {
	_, target, rt, _, _ := c.snapshot()
	c.mu.Lock()
	deleted := c.deleted
	if rt != c.healRT && !c.healBusy() {
		// A runtime someone else started (a create, an update, a manual
		// restart): its failures are new ones.
		c.heal, c.healRT = nil, rt
	}
	c.mu.Unlock()
	if deleted || rt == nil || target == store.TargetStopped || !w.runsHere(c.name) {
		return
	}
	failed := map[int]runtime.TaskStatus{}
	st := rt.Status()
	select {
	case <-rt.Done():
		err := rt.Err()
		if err == nil {
			return // stopped, or read to its end
		}
		failed[connectorInstance] = runtime.TaskStatus{State: runtime.StateFailed, Trace: err.Error(), Permanent: runtime.Permanent(err)}
	default:
		for i, t := range st.Tasks {
			if t.State == runtime.StateFailed {
				failed[i] = t
			}
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(failed) == 0 && len(c.heal) == 0 {
		return
	}
	policy := rt.RetryPolicy()
	for id, h := range c.heal {
		if _, still := failed[id]; still || h.busy {
			continue
		}
		// A commit proves the connector healthy, not one task of it.
		committed := id == connectorInstance && st.Progress.Commits > h.commits
		if committed || now.Sub(h.restarted) >= healthyAfter(policy) {
			delete(c.heal, id)
			w.logger.Info("failure healed", "connector", c.name, "instance", instanceName(id), "restarts", h.attempts)
		}
	}
	if policy.Timeout == 0 {
		return // restarts are off: failures wait for a human, as in Connect
	}
	for id, t := range failed {
		h := c.heal[id]
		if h == nil {
			if c.heal == nil {
				c.heal = map[int]*healing{}
			}
			h = &healing{since: now, next: now.Add(retryDelay(policy, 1))}
			c.heal[id] = h
		}
		if h.busy || h.gaveUp || h.permanent {
			continue
		}
		h.trace, h.permanent = t.Trace, t.Permanent
		switch {
		case h.permanent:
			w.logger.Error("failure is permanent; it waits for a human", "connector", c.name, "instance", instanceName(id), "error", t.Trace)
			continue
		case policy.Timeout > 0 && now.Sub(h.since) >= policy.Timeout:
			h.gaveUp = true
			w.logger.Error("gave up restarting", "connector", c.name, "instance", instanceName(id),
				"restarts", h.attempts, "failing_for", now.Sub(h.since).Round(time.Second), "error", t.Trace)
			continue
		case now.Before(h.next):
			continue
		}
		if !c.op.tryLock() {
			continue // a request is working on the connector; look again next tick
		}
		h.busy = true
		go w.healRestart(life, c, rt, id, h, policy)
	}
}

// healRestart restarts one failed instance; c.op is held and is released
// here. A whole restart keeps the policy's record across the new runtime.
func (w *Worker) healRestart(life context.Context, c *conn, rt *runtime.Connector, id int, h *healing, policy runtime.RetryPolicy) {
	defer c.op.unlock()
	ctx, cancel := context.WithTimeout(life, w.restartBound())
	defer cancel()
	c.mu.Lock()
	h.attempts++
	attempt := h.attempts
	current := c.rt == rt && !c.deleted
	c.mu.Unlock()
	w.logger.Warn("restarting after a failure", "connector", c.name, "instance", instanceName(id),
		"attempt", attempt, "failing_for", time.Since(h.since).Round(time.Millisecond), "error", h.trace)
	var err error
	switch {
	case !current:
		// Another operation replaced the runtime meanwhile.
	case id == connectorInstance:
		if e := w.stopLocked(ctx, c); e != nil {
			w.logger.Warn("restart: the stop of the failed connector was cut short", "connector", c.name, "error", e)
		}
		w.startLocked(c)
	default:
		err = rt.RestartTask(ctx, id)
	}
	if current {
		w.metrics.Connector(c.name).Restart(id == connectorInstance)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h.busy = false
	h.restarted = time.Now()
	h.next = h.restarted.Add(retryDelay(policy, attempt+1))
	c.restarts++
	if id == connectorInstance && c.rt != nil && current {
		c.healRT = c.rt // the record carries over to the runtime it started
		h.commits = 0
	} else if c.rt != nil {
		h.commits = c.rt.Status().Progress.Commits
	}
	if err != nil {
		w.logger.Warn("restart failed", "connector", c.name, "instance", instanceName(id), "error", err)
	}
}

// healthyAfter is how long a restarted instance must stay up to count as
// healed: a restart may take a while to meet its cause again (a source
// connecting to Kafka, a sink to its catalog).
func healthyAfter(p runtime.RetryPolicy) time.Duration {
	return max(2*p.Max, time.Minute)
}

// retryDelay is the wait before restart attempt n (from 1): the first
// delay doubled per attempt, capped at the longest, ±20 % so that many
// tasks failing together do not restart in step.
func retryDelay(p runtime.RetryPolicy, n int) time.Duration {
	d := p.First
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	return min(time.Duration(float64(d)*(0.8+0.4*rand.Float64())), p.Max)
}

func instanceName(id int) string {
	if id == connectorInstance {
		return "connector"
	}
	return fmt.Sprintf("task %d", id)
}

// healBusy reports whether the policy is restarting something; c.mu is
// held.
func (c *conn) healBusy() bool {
	for _, h := range c.heal {
		if h.busy {
			return true
		}
	}
	return false
}

// forgetHealing drops the policy's records, as a human acted (a manual
// restart): the count starts again.
func (c *conn) forgetHealing() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, h := range c.heal {
		if !h.busy {
			delete(c.heal, id)
		}
	}
}

// healStatus adds the restart policy's view to st: each failure's trace
// says whether and when floe restarts it, and floe's progress lists them.
func (w *Worker) healStatus(c *conn, st ConnectorStatus) ConnectorStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.Floe != nil {
		st.Floe.Restarts = c.restarts
	}
	if len(c.heal) == 0 {
		return st
	}
	for _, id := range slices.Sorted(maps.Keys(c.heal)) {
		h := c.heal[id]
		if h.trace == "" {
			continue
		}
		r := Healing{Instance: instanceName(id), Attempts: h.attempts, FailingSince: h.since,
			Permanent: h.permanent, GaveUp: h.gaveUp}
		if !h.permanent && !h.gaveUp {
			r.NextAttempt = h.next
		}
		if st.Floe != nil {
			st.Floe.Healing = append(st.Floe.Healing, r)
		}
		note := "\n\n" + r.note(c.name)
		if id == connectorInstance {
			if st.Connector.State == StateFailed {
				st.Connector.Trace += note
			}
			continue
		}
		for i := range st.Tasks {
			if st.Tasks[i].ID == id && st.Tasks[i].State == StateFailed {
				st.Tasks[i].Trace += note
			}
		}
	}
	return st
}

// note says in the trace what the restart policy does about the failure.
func (r Healing) note(connector string) string {
	manual := fmt.Sprintf("fix the cause, then POST /connectors/%s/restart?includeTasks=true&onlyFailed=true", connector)
	switch {
	case r.Permanent:
		return "floe does not restart it: the failure is permanent (a configuration error, or a plugin said no retry can help); " + manual
	case r.GaveUp:
		return fmt.Sprintf("floe gave up restarting it after %d attempts over %s (errors.retry.timeout); %s",
			r.Attempts, time.Since(r.FailingSince).Round(time.Second), manual)
	}
	return fmt.Sprintf("floe restarts it automatically: attempt %d at %s (failing since %s; errors.retry.timeout bounds the attempts)",
		r.Attempts+1, r.NextAttempt.UTC().Format(time.RFC3339), r.FailingSince.UTC().Format(time.RFC3339))
}
