package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
)

// Stores are where a worker keeps connector configs, statuses and
// offsets.
type Stores struct {
	Configs  store.ConfigStore
	Statuses store.StatusStore
	Offsets  store.OffsetStore
}

// Placement decides what of each connector runs on this worker
// (distributed mode: the cluster's assignment). A worker records every
// connector of the config store and answers for all of them, but runs
// only its share of each: some source tasks, and maybe the connector's
// committer. It answers for the rest from the status store, where the
// workers running it publish.
type Placement interface {
	// Share returns connector name's share on this worker; ok is false
	// when nothing of it runs here.
	Share(name string) (spec ShareSpec, ok bool)
	// Link opens the connector's control link, which carries its
	// checkpoints between the workers and its committer.
	Link(ctx context.Context, name string) (runtime.ControlLink, error)
	// Placed reports whether the newest assignment places connector name
	// on any worker (false: STOPPED, or no live worker can run it).
	Placed(name string) bool
}

// ShareSpec is a connector's share on one worker.
type ShareSpec struct {
	// Tasks are the source tasks that run here, sorted.
	Tasks []int
	// Committer is set when the connector's committer runs here;
	// CommitterEpoch is the epoch its current committer (here or not)
	// was placed with.
	Committer      bool
	CommitterEpoch int64
}

func (s ShareSpec) equal(o ShareSpec) bool {
	return slices.Equal(s.Tasks, o.Tasks) && s.Committer == o.Committer && s.CommitterEpoch == o.CommitterEpoch
}

// statusPublishInterval is how often a placed connector's status is
// compared with what was last published; statusRepublishInterval is how
// often it is published even when unchanged, so a record some other
// worker wrote over (a zombie's last word) does not stay.
const (
	statusPublishInterval   = time.Second
	statusRepublishInterval = 10 * time.Second
)

// runsHere reports whether any of connector name runs on this worker.
func (w *Worker) runsHere(name string) bool {
	if w.deps.Placement == nil {
		return true
	}
	_, ok := w.deps.Placement.Share(name)
	return ok
}

// Reconcile makes the worker match the config store and the placement:
// connectors that another worker created, changed, paused or deleted are
// taken in, and each connector's runtime runs here exactly when the
// placement says so. It returns once what the placement took away has
// stopped (its final commit made, within ctx).
func (w *Worker) Reconcile(ctx context.Context) error {
	stored, err := w.configs.Connectors(ctx)
	if err != nil {
		return fmt.Errorf("worker: read the connectors: %w", err)
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	for _, sc := range stored {
		if _, ok := w.conns[sc.Name]; !ok {
			c := newConn(sc.Name, sc.Target)
			c.remote = true
			w.conns[sc.Name] = c
		}
	}
	names := slices.Sorted(maps.Keys(w.conns))
	w.mu.Unlock()
	var errs []error
	for _, name := range names {
		if err := w.reconcile(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("connector %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// reconcile applies the stored record of one connector. The record is
// read again under the connector's lock, so an operation of this worker
// that was writing it is never undone by an older read.
func (w *Worker) reconcile(ctx context.Context, name string) error {
	w.mu.Lock()
	c := w.conns[name]
	w.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := c.lockOp(ctx); err != nil {
		return err
	}
	defer c.op.unlock()
	if c.deleted {
		return nil
	}
	sc, err := w.configs.Connector(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return w.forgetLocked(ctx, c)
	}
	if err != nil {
		return err
	}
	if sc.Target == "" {
		sc.Target = store.TargetRunning
	}
	c.mu.Lock()
	fresh, changed := c.remote, !maps.Equal(c.config, sc.Config)
	retarget := c.target != sc.Target
	c.remote = false
	c.mu.Unlock()
	if fresh || changed {
		if err := w.stopLocked(ctx, c); err != nil {
			w.logger.Warn("connector did not stop cleanly before taking its new config", "connector", name, "error", err)
		}
		v := w.validate(ctx, sc.Config)
		c.mu.Lock()
		c.config, c.target, c.secrets, c.comps, c.failure = sc.Config, sc.Target, v.secrets, v.comps, ""
		if !v.ok() {
			c.failure = (&ValidationError{Infos: v.infos}).Error()
		}
		c.mu.Unlock()
		if !fresh {
			w.logger.Info("connector config changed by another worker", "connector", name)
		}
	} else if retarget {
		c.mu.Lock()
		c.target = sc.Target
		c.mu.Unlock()
		w.logger.Info("connector state changed by another worker", "connector", name, "to", sc.Target)
	}
	c.mu.Lock()
	rt, failure, target := c.rt, c.failure, c.target
	c.mu.Unlock()
	runs := w.runsHere(name)
	if rt != nil && runs && target != store.TargetStopped && w.deps.Placement != nil {
		w.applyShare(c, rt)
	}
	switch {
	case rt != nil && (!runs || target == store.TargetStopped):
		if !runs {
			w.logger.Info("connector placed on another worker; stopping it here", "connector", name)
		}
		return w.stopLocked(ctx, c)
	case rt == nil && runs && target != store.TargetStopped && failure == "":
		w.logger.Info("connector placed on this worker; starting it", "connector", name)
		w.startLocked(c)
	case rt != nil && retarget && target == store.TargetPaused:
		rt.Pause()
	case rt != nil && retarget && target == store.TargetRunning:
		rt.Resume()
	}
	return nil
}

// applyShare hands a running connector its share when the placement
// changed it (tasks moved, the committer moved).
func (w *Worker) applyShare(c *conn, rt *runtime.Connector) {
	spec, ok := w.deps.Placement.Share(c.name)
	c.mu.Lock()
	same := c.share.equal(spec)
	c.share = spec
	c.mu.Unlock()
	if !ok || same {
		return
	}
	w.logger.Info("connector's share on this worker changed", "connector", c.name, "tasks", spec.Tasks, "committer", spec.Committer)
	rt.SetShare(runtime.Share{Worker: w.cfg.WorkerID, Tasks: spec.Tasks, Committer: spec.Committer, CommitterEpoch: spec.CommitterEpoch})
}

// Refusals names, by connector, why this worker cannot run it: its
// config failed validation here, or its runtime could not start. The
// cluster's leader places none of those connectors here.
func (w *Worker) Refusals() map[string]string {
	w.mu.Lock()
	conns := slices.Collect(maps.Values(w.conns))
	w.mu.Unlock()
	out := map[string]string{}
	for _, c := range conns {
		c.mu.Lock()
		if c.failure != "" && !c.deleted {
			out[c.name] = c.failure
		}
		c.mu.Unlock()
	}
	return out
}

// forgetLocked drops a connector another worker deleted: its runtime
// stops here, and the store is left as that worker left it. c.op is held.
func (w *Worker) forgetLocked(ctx context.Context, c *conn) error {
	err := w.stopLocked(ctx, c)
	c.mu.Lock()
	c.deleted = true
	c.mu.Unlock()
	w.mu.Lock()
	if w.conns[c.name] == c {
		delete(w.conns, c.name)
	}
	w.mu.Unlock()
	w.metrics.Forget(c.name)
	w.logger.Info("connector deleted by another worker", "connector", c.name)
	return err
}

// remoteStatus is the status of a connector that runs on another worker,
// as that worker last published it; UNASSIGNED until it has. The read is
// bounded by the worker's lifetime and 5 s: status answers take no ctx.
//
//nolint:contextcheck // see above
func (w *Worker) remoteStatus(c *conn, cfg map[string]string) ConnectorStatus {
	st := ConnectorStatus{Name: c.name, Type: connectorType, Tasks: []TaskState{}, Connector: ConnectorState{State: StateUnassigned}}
	ctx, cancel := context.WithTimeout(w.life, 5*time.Second)
	defer cancel()
	rec, err := w.statuses.Status(ctx, c.name)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			st.Connector.Trace = "the status store could not be read: " + err.Error()
		}
		for i := range tasksMax(cfg) {
			st.Tasks = append(st.Tasks, TaskState{ID: i, State: StateUnassigned})
		}
		return st
	}
	st.Connector = ConnectorState{State: State(rec.Connector.State), WorkerID: rec.Connector.WorkerID, Trace: rec.Connector.Trace}
	for i, t := range rec.Tasks {
		st.Tasks = append(st.Tasks, TaskState{ID: i, State: State(t.State), WorkerID: t.WorkerID, Trace: t.Trace})
	}
	return st
}

// publishStatus writes a placed connector's status to the status store
// whenever its states change, until rt ends, so that every worker can
// answer for it.
func (w *Worker) publishStatus(c *conn, rt *runtime.Connector) {
	t := time.NewTicker(statusPublishInterval)
	defer t.Stop()
	var last string
	var published time.Time
	for {
		st, ours := w.statusOf(c, rt)
		if !ours {
			return // stopped or replaced: whoever runs it now reports
		}
		rec := storedStatus(st, w.cfg.WorkerID)
		if key := fmt.Sprint(rec.Connector, rec.Tasks); key != last || time.Since(published) >= statusRepublishInterval {
			ctx, cancel := context.WithTimeout(w.life, 5*time.Second)
			if err := w.putStatus(ctx, c.name, rec, rt); err != nil {
				w.logger.Warn("cannot publish the connector's status", "connector", c.name, "error", err)
			} else {
				last, published = key, time.Now()
			}
			cancel()
		}
		select {
		case <-rt.Done():
			return
		case <-t.C:
		}
	}
}

// putStatus publishes rec, the status of a connector rt runs: all of it,
// or in a cluster the part rt runs (its tasks, and the connector when its
// committer runs here), when the store takes parts.
func (w *Worker) putStatus(ctx context.Context, name string, rec store.Status, rt *runtime.Connector) error {
	ps, ok := w.statuses.(store.PartStatusStore)
	if !ok || w.deps.Placement == nil {
		return w.statuses.PutStatus(ctx, name, rec)
	}
	var conn *store.InstanceStatus
	if rt.Commits() {
		conn = &rec.Connector
	}
	tasks := map[int]store.InstanceStatus{}
	for _, i := range rt.LocalTasks() {
		if i < len(rec.Tasks) {
			tasks[i] = rec.Tasks[i]
		}
	}
	return ps.PutPartStatus(ctx, name, conn, tasks)
}

// statusOf returns the connector's status as rt reports it (in a
// cluster, only what this worker runs of it), and false when c no
// longer runs rt (it was stopped or replaced).
func (w *Worker) statusOf(c *conn, rt *runtime.Connector) (ConnectorStatus, bool) {
	c.mu.Lock()
	current := c.rt == rt
	c.mu.Unlock()
	if !current {
		return ConnectorStatus{}, false
	}
	return w.ownStatus(c), true
}

// storedStatus is st as the status store keeps it.
func storedStatus(st ConnectorStatus, workerID string) store.Status {
	rec := store.Status{Connector: store.InstanceStatus{State: string(st.Connector.State), WorkerID: workerID, Trace: st.Connector.Trace}, Updated: time.Now().UTC()}
	for _, t := range st.Tasks {
		rec.Tasks = append(rec.Tasks, store.InstanceStatus{State: string(t.State), WorkerID: t.WorkerID, Trace: t.Trace})
	}
	return rec
}
