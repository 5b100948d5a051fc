package worker

import (
	"context"

	"fmt"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
)

// ConnectorStatus implements [API].
func (w *Worker) ConnectorStatus(_ context.Context, name string) (ConnectorStatus, error) {
	c, err := w.get(name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	return w.status(c), nil
}

// status is the connector's status: in a cluster, what this worker runs
// of it completed by what the others published.
func (w *Worker) status(c *conn) ConnectorStatus { return w.statusParts(c, true) }

// ownStatus is the status of what this worker runs of the connector: the
// part it publishes itself.
func (w *Worker) ownStatus(c *conn) ConnectorStatus { return w.statusParts(c, false) }

func (w *Worker) statusParts(c *conn, merge bool) ConnectorStatus {
	cfg, target, rt, failure, _ := c.snapshot()
	st := ConnectorStatus{Name: c.name, Type: connectorType, Tasks: []TaskState{},
		Connector: ConnectorState{State: StateRunning, WorkerID: w.cfg.WorkerID}}
	switch {
	case failure != "" && w.deps.Placement != nil && rt == nil:
		// This worker refuses the connector (its config fails here); the
		// others may run it: their status, else the refusal.
		if w.deps.Placement.Placed(c.name) {
			return w.remoteStatus(c, cfg)
		}
		st.Connector.State, st.Connector.Trace = StateFailed, fmt.Sprintf("worker %s cannot run it: %s", w.cfg.WorkerID, failure)
	case failure != "":
		st.Connector.State, st.Connector.Trace = StateFailed, failure
	case rt == nil && target == store.TargetStopped:
		st.Connector.State = StateStopped
	case rt == nil && !w.runsHere(c.name):
		return w.remoteStatus(c, cfg)
	case rt == nil:
		st.Connector.State = StateUnassigned
		for i := range tasksMax(cfg) {
			st.Tasks = append(st.Tasks, TaskState{ID: i, State: StateUnassigned, WorkerID: w.cfg.WorkerID})
		}
	default:
		rs := rt.Status()
		st.Connector.State, st.Connector.Trace = State(rs.State), rs.Trace
		for i, t := range rs.Tasks {
			st.Tasks = append(st.Tasks, TaskState{ID: i, State: State(t.State), WorkerID: w.cfg.WorkerID, Trace: t.Trace})
		}
		p := rs.Progress
		st.Floe = &Progress{
			RecordsIn: p.RecordsIn, RecordsOut: p.RecordsOut, DeadLetters: p.DeadLetters, Skipped: p.Skipped,
			Checkpoint: p.Checkpoint, CommittedAt: p.CommittedAt, Commits: p.Commits,
			FilesWritten: p.FilesWritten, PendingCheckpoints: p.PendingCheckpoints,
			WriterLoad: p.WriterLoad, PluginRestarts: p.PluginRestarts, EndOfInput: p.EndOfInput,
		}
		for _, w := range p.Waits {
			st.Floe.Waiting = append(st.Floe.Waiting, ServiceWait{Service: w.Service, Since: w.Since, Attempts: w.Attempts, LastError: w.LastError})
		}
		if m := p.Maintenance; m != nil {
			sum := &MaintenanceSummary{Runs: m.Runs, FailedRuns: m.FailedRuns, LastRuns: []MaintenanceRun{}, Error: m.Error}
			for _, r := range m.LastRuns {
				sum.LastRuns = append(sum.LastRuns, MaintenanceRunOf(r))
			}
			st.Floe.Maintenance = sum
		}
		if w.deps.Placement != nil && merge {
			st = w.mergeShare(c, cfg, st, rt)
		}
	}
	return w.markRestarting(c, w.healStatus(c, st), rt, cfg)
}

// mergeShare completes the status of a connector this worker runs a
// share of (distributed mode): the tasks of other workers, and the
// connector itself unless its committer runs here, come from the status
// store, where their workers publish them.
func (w *Worker) mergeShare(c *conn, cfg map[string]string, local ConnectorStatus, rt *runtime.Connector) ConnectorStatus {
	st := w.remoteStatus(c, cfg)
	if rt.Commits() {
		st.Connector = local.Connector
		st.Floe = local.Floe
	}
	for _, i := range rt.LocalTasks() {
		if i >= len(local.Tasks) {
			continue
		}
		for len(st.Tasks) <= i {
			st.Tasks = append(st.Tasks, TaskState{ID: len(st.Tasks), State: StateUnassigned})
		}
		st.Tasks[i] = local.Tasks[i]
	}
	return st
}

// markRestarting shows the instances of an accepted restart as RESTARTING
// in st (read from rt): all of them while the restart works, then each
// task until the runtime the restart left has it past UNASSIGNED. A
// restart that is over, or that another operation overtook, is forgotten.
func (w *Worker) markRestarting(c *conn, st ConnectorStatus, rt *runtime.Connector, cfg map[string]string) ConnectorStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	pr := c.restart
	if pr == nil {
		return st
	}
	if pr.done && (c.rt == nil || c.rt != pr.rt) {
		c.restart = nil // the start failed, or another operation took over
		return st
	}
	// st may have been read from the runtime being replaced.
	done := pr.done && rt == pr.rt
	if !done {
		if pr.connector {
			st.Connector.State, st.Connector.Trace = StateRestarting, ""
		}
		if len(pr.tasks) > 0 && len(st.Tasks) == 0 {
			for i := range tasksMax(cfg) {
				st.Tasks = append(st.Tasks, TaskState{ID: i, State: StateUnassigned, WorkerID: w.cfg.WorkerID})
			}
		}
	}
	waiting := false
	for i, t := range st.Tasks {
		if !pr.tasks[t.ID] || (done && t.State != StateUnassigned) {
			continue
		}
		st.Tasks[i].State, st.Tasks[i].Trace = StateRestarting, ""
		waiting = true
	}
	if done && !waiting {
		c.restart = nil
	}
	return st
}

// TaskStatus implements [API].
func (w *Worker) TaskStatus(ctx context.Context, name string, task int) (TaskState, error) {
	st, err := w.ConnectorStatus(ctx, name)
	if err != nil {
		return TaskState{}, err
	}
	for _, t := range st.Tasks {
		if t.ID == task {
			return t, nil
		}
	}
	return TaskState{}, fmt.Errorf("connector %s has no task %d: %w", name, task, ErrNotFound)
}
