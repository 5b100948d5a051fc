package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floehq/floe/host/metrics"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Hidden is what Connector and Tasks show instead of the value of a key a
// component declares PASSWORD, as Connect prints a password. A Put or
// Patch that sends Hidden back for such a key keeps the stored value.
const Hidden = sdk.HiddenValue

// connectorType is the Connect type of every floe connector: it consumes
// a stream and writes tables, which Connect calls a sink.
const connectorType = "sink"

// Deps are what a worker is built on.
type Deps struct {
	// Plugins lists and starts plugin binaries (see FromRegistry).
	Plugins Plugins
	// Logger is the worker's logger; nil discards.
	Logger hclog.Logger
	// Version and Commit are shown by GET /.
	Version, Commit string
	// Tuning overrides internal timings of every connector (tests).
	Tuning runtime.Tuning
}

// Worker runs connectors in one process (standalone mode): it validates
// and stores their configs, runs them, and answers the REST API. It
// implements [API]; its methods are safe for concurrent use.
type Worker struct {
	cfg     Config
	plugins Plugins
	logger  hclog.Logger
	deps    Deps
	store   *store.Local
	metrics *metrics.Metrics
	// life is the worker's lifetime: connectors run on it, not on the
	// request that started them. Close ends it once they stopped.
	life    context.Context
	endLife context.CancelFunc

	mu     sync.Mutex
	conns  map[string]*conn
	ready  bool
	closed bool
}

var _ API = (*Worker)(nil)

// conn is one connector the worker holds.
type conn struct {
	name string
	// op serialises lifecycle operations (create, reconfigure, pause,
	// stop, delete, restart) on this connector.
	op sync.Mutex

	mu      sync.Mutex
	config  map[string]string // as stored, secrets included
	target  store.TargetState
	secrets map[string]bool
	comps   map[sdk.Kind]client.Component
	rt      *runtime.Connector // nil while STOPPED or when the start failed
	failure string             // why the connector could not start
	deleted bool
	// restart marks the instances an accepted restart (KIP-745) is
	// restarting; nil when none is.
	restart *pendingRestart
}

// pendingRestart is a restart accepted and under way or just done. Its
// instances show RESTARTING until the work is done and, for tasks, until
// the new runtime has them past UNASSIGNED.
type pendingRestart struct {
	connector bool
	tasks     map[int]bool
	done      bool               // the restart work finished
	rt        *runtime.Connector // the runtime the restart left (done)
}

func (c *conn) snapshot() (cfg map[string]string, target store.TargetState, rt *runtime.Connector, failure string, secrets map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.config), c.target, c.rt, c.failure, c.secrets
}

// New opens the worker's store under cfg.DataDir and brings back every
// stored connector in its target state. A stored connector that no longer
// validates (a plugin went missing) is listed as FAILED with the reason.
// ctx bounds the startup only: connectors run until [Worker.Close], on a
// lifetime that keeps ctx's values but not its end.
func New(ctx context.Context, cfg Config, deps Deps) (*Worker, error) {
	if deps.Plugins == nil {
		return nil, errors.New("worker: no plugins given (see worker.FromRegistry)")
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.WorkerID == "" {
		cfg.WorkerID = "standalone"
	}
	st, err := store.OpenLocal(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	logger := deps.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	life, endLife := context.WithCancel(context.WithoutCancel(ctx))
	w := &Worker{
		cfg: cfg, plugins: deps.Plugins, logger: logger, deps: deps,
		store: st, metrics: metrics.New(), conns: map[string]*conn{},
		life: life, endLife: endLife,
	}
	stored, err := st.Connectors(ctx)
	if err != nil {
		endLife()
		return nil, fmt.Errorf("worker: %w", err)
	}
	for _, sc := range stored {
		c := &conn{name: sc.Name, config: sc.Config, target: sc.Target}
		if c.target == "" {
			c.target = store.TargetRunning
		}
		w.conns[sc.Name] = c
		c.op.Lock()
		v := w.validate(ctx, sc.Config)
		c.mu.Lock()
		c.secrets, c.comps = v.secrets, v.comps
		c.mu.Unlock()
		if !v.ok() {
			err := &ValidationError{Infos: v.infos}
			w.logger.Error("stored connector does not validate any more; it stays FAILED until its config is fixed", "connector", sc.Name, "error", err)
			c.mu.Lock()
			c.failure = err.Error()
			c.mu.Unlock()
		} else if c.target != store.TargetStopped {
			w.startLocked(c)
		}
		c.op.Unlock()
		w.logger.Info("connector restored", "connector", sc.Name, "target", c.target)
	}
	w.mu.Lock()
	w.ready = true
	w.mu.Unlock()
	return w, nil
}

// Config returns the worker's config.
func (w *Worker) Config() Config { return w.cfg }

// Metrics returns the registry holding every connector's metrics, to be
// served on /metrics.
func (w *Worker) Metrics() *prometheus.Registry { return w.metrics.Registry() }

// Close stops every connector, each with a final checkpoint and commit,
// within ctx. Later calls do nothing. The error joins the connectors that
// could not stop cleanly.
func (w *Worker) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	conns := slices.Collect(maps.Values(w.conns))
	w.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.op.Lock()
			defer c.op.Unlock()
			errs[i] = w.stopLocked(ctx, c)
		}()
	}
	wg.Wait()
	w.endLife()
	return errors.Join(errs...)
}

// ServerInfo implements [API].
func (w *Worker) ServerInfo() ServerInfo {
	v := w.deps.Version
	if v == "" {
		v = "dev"
	}
	return ServerInfo{Version: v, Commit: w.deps.Commit}
}

// Ready implements [API].
func (w *Worker) Ready() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return errors.New("the worker is shutting down")
	case !w.ready:
		return errors.New("the worker is starting")
	}
	return nil
}

// Connectors implements [API].
func (w *Worker) Connectors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.conns))
}

func (w *Worker) get(name string) (*conn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.conns[name]
	if !ok {
		return nil, fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	return c, nil
}

// Connector implements [API]. Values of keys declared PASSWORD are Hidden.
func (w *Worker) Connector(name string) (ConnectorInfo, error) {
	c, err := w.get(name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	cfg, target, _, _, secrets := c.snapshot()
	return ConnectorInfo{Name: name, Config: hideSecrets(cfg, secrets), Tasks: taskIDs(name, cfg, target), Type: connectorType}, nil
}

func hideSecrets(cfg map[string]string, secrets map[string]bool) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	for k := range out {
		if secrets[k] {
			out[k] = Hidden
		}
	}
	return out
}

// tasksMax reads tasks.max (1 when unset or unreadable).
func tasksMax(cfg map[string]string) int {
	set, err := runtime.ParseSettings("", withName(cfg, "x"))
	if err != nil || set.Tasks < 1 {
		return 1
	}
	return set.Tasks
}

func withName(cfg map[string]string, name string) map[string]string {
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]string{}
	}
	if out[runtime.KeyName] == "" {
		out[runtime.KeyName] = name
	}
	return out
}

// taskIDs lists the tasks of a connector: none while STOPPED, as Connect.
func taskIDs(name string, cfg map[string]string, target store.TargetState) []TaskID {
	out := []TaskID{}
	if target == store.TargetStopped {
		return out
	}
	for i := range tasksMax(cfg) {
		out = append(out, TaskID{Connector: name, Task: i})
	}
	return out
}

// Tasks implements [API]: each task's config is the connector's (secrets
// Hidden) plus task.id.
func (w *Worker) Tasks(name string) ([]TaskInfo, error) {
	c, err := w.get(name)
	if err != nil {
		return nil, err
	}
	cfg, target, _, _, secrets := c.snapshot()
	out := []TaskInfo{}
	for _, id := range taskIDs(name, cfg, target) {
		tc := hideSecrets(cfg, secrets)
		tc["task.id"] = fmt.Sprint(id.Task)
		out = append(out, TaskInfo{ID: id, Config: tc})
	}
	return out, nil
}

// ConnectorStatus implements [API].
func (w *Worker) ConnectorStatus(name string) (ConnectorStatus, error) {
	c, err := w.get(name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	return w.status(c), nil
}

func (w *Worker) status(c *conn) ConnectorStatus {
	cfg, target, rt, failure, _ := c.snapshot()
	st := ConnectorStatus{Name: c.name, Type: connectorType, Tasks: []TaskState{},
		Connector: ConnectorState{State: StateRunning, WorkerID: w.cfg.WorkerID}}
	switch {
	case failure != "":
		st.Connector.State, st.Connector.Trace = StateFailed, failure
	case rt == nil && target == store.TargetStopped:
		st.Connector.State = StateStopped
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
			RecordsIn: p.RecordsIn, RecordsOut: p.RecordsOut, DeadLetters: p.DeadLetters,
			Checkpoint: p.Checkpoint, CommittedAt: p.CommittedAt, Commits: p.Commits,
			FilesWritten: p.FilesWritten, PendingCheckpoints: p.PendingCheckpoints,
			WriterLoad: p.WriterLoad, PluginRestarts: p.PluginRestarts, EndOfInput: p.EndOfInput,
		}
		if m := p.Maintenance; m != nil {
			sum := &MaintenanceSummary{Runs: m.Runs, FailedRuns: m.FailedRuns, LastRuns: []MaintenanceRun{}, Error: m.Error}
			for _, r := range m.LastRuns {
				sum.LastRuns = append(sum.LastRuns, MaintenanceRunOf(r))
			}
			st.Floe.Maintenance = sum
		}
	}
	return w.markRestarting(c, st, rt, cfg)
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
func (w *Worker) TaskStatus(name string, task int) (TaskState, error) {
	st, err := w.ConnectorStatus(name)
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

// CreateConnector implements [API]: the config is validated first, so an
// invalid one leaves nothing stored or started.
func (w *Worker) CreateConnector(ctx context.Context, name string, config map[string]string, initial State) (ConnectorInfo, error) {
	target, err := targetOf(initial)
	if err != nil {
		return ConnectorInfo{}, err
	}
	if err := checkName(name); err != nil {
		return ConnectorInfo{}, err
	}
	cfg, err := configWithName(name, config)
	if err != nil {
		return ConnectorInfo{}, err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ConnectorInfo{}, errors.New("the worker is shutting down")
	}
	if _, ok := w.conns[name]; ok {
		w.mu.Unlock()
		return ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, ErrExists)
	}
	c := &conn{name: name, target: target}
	c.op.Lock()
	defer c.op.Unlock()
	w.conns[name] = c // reserved: a concurrent create of the name fails
	w.mu.Unlock()

	v := w.validate(ctx, cfg)
	if !v.ok() {
		w.release(c)
		return ConnectorInfo{}, &ValidationError{Infos: v.infos}
	}
	c.mu.Lock()
	c.config, c.secrets, c.comps = cfg, v.secrets, v.comps
	c.mu.Unlock()
	if err := w.persist(ctx, c, true); err != nil {
		w.release(c)
		return ConnectorInfo{}, err
	}
	if target != store.TargetStopped {
		w.startLocked(c)
	}
	w.logger.Info("connector created", "connector", name, "state", target)
	return w.Connector(name)
}

// release drops the reservation of a create that failed; c.op is held.
// It marks c deleted first, so that an operation waiting on c.op (a PUT
// of the same name that found the reservation) sees the connector is
// gone instead of configuring and starting one nobody lists.
func (w *Worker) release(c *conn) {
	c.mu.Lock()
	c.deleted = true
	c.mu.Unlock()
	w.mu.Lock()
	if w.conns[c.name] == c {
		delete(w.conns, c.name)
	}
	w.mu.Unlock()
}

// errGone is wrapped (with ErrNotFound) by operations that waited for a
// connector that was deleted, or whose create failed, meanwhile.
var errGone = errors.New("deleted while this request waited")

// PutConnectorConfig implements [API]: a new config restarts the
// connector (its final checkpoint commits first) in its target state. A
// PUT that waited for a create of the same name that then failed, or for
// a delete, creates the connector: the answer always says what runs.
func (w *Worker) PutConnectorConfig(ctx context.Context, name string, config map[string]string) (ConnectorInfo, bool, error) {
	for {
		if _, err := w.get(name); errors.Is(err, ErrNotFound) {
			info, err := w.CreateConnector(ctx, name, config, StateRunning)
			if errors.Is(err, ErrExists) { // created meanwhile: replace it
				continue
			}
			return info, err == nil, err
		}
		info, err := w.reconfigure(ctx, name, func(map[string]string) map[string]string { return maps.Clone(config) })
		if errors.Is(err, errGone) {
			continue
		}
		return info, false, err
	}
}

// PatchConnectorConfig implements [API].
func (w *Worker) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (ConnectorInfo, error) {
	return w.reconfigure(ctx, name, func(old map[string]string) map[string]string {
		cfg := maps.Clone(old)
		for k, v := range patch {
			if v == nil {
				delete(cfg, k)
			} else {
				cfg[k] = *v
			}
		}
		return cfg
	})
}

// reconfigure replaces a connector's config by edit(old config).
func (w *Worker) reconfigure(ctx context.Context, name string, edit func(map[string]string) map[string]string) (ConnectorInfo, error) {
	c, err := w.get(name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	c.op.Lock()
	defer c.op.Unlock()
	if c.deleted {
		return ConnectorInfo{}, fmt.Errorf("connector %s: %w: %w", name, ErrNotFound, errGone)
	}
	old, _, _, _, secrets := c.snapshot()
	cfg := edit(old)
	// A secret sent back as shown keeps its stored value.
	for k, v := range cfg {
		if v == Hidden && secrets[k] {
			if ov, ok := old[k]; ok {
				cfg[k] = ov
			}
		}
	}
	cfg, err = configWithName(name, cfg)
	if err != nil {
		return ConnectorInfo{}, err
	}
	v := w.validate(ctx, cfg)
	if !v.ok() {
		return ConnectorInfo{}, &ValidationError{Infos: v.infos}
	}
	if err := w.stopLocked(ctx, c); err != nil {
		w.logger.Warn("connector did not stop cleanly before its reconfiguration", "connector", name, "error", err)
	}
	c.mu.Lock()
	c.config, c.secrets, c.comps, c.failure = cfg, v.secrets, v.comps, ""
	target := c.target
	c.mu.Unlock()
	if err := w.persist(ctx, c, false); err != nil {
		return ConnectorInfo{}, err
	}
	if target != store.TargetStopped {
		w.startLocked(c)
	}
	w.logger.Info("connector reconfigured", "connector", name)
	return w.Connector(name)
}

// DeleteConnector implements [API]: the connector stops (final commit)
// and every trace of it goes from the store and the metrics.
func (w *Worker) DeleteConnector(ctx context.Context, name string) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	c.op.Lock()
	defer c.op.Unlock()
	if c.deleted {
		return fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	if err := w.stopLocked(ctx, c); err != nil {
		w.logger.Warn("connector did not stop cleanly before its deletion", "connector", name, "error", err)
	}
	err = errors.Join(
		w.store.DeleteConnector(ctx, name),
		w.store.DeleteStatus(ctx, name),
		w.store.DeleteOffsets(ctx, name),
	)
	c.mu.Lock()
	c.deleted = true
	c.mu.Unlock()
	w.mu.Lock()
	delete(w.conns, name)
	w.mu.Unlock()
	w.metrics.Forget(name)
	w.logger.Info("connector deleted", "connector", name)
	return err
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
	c.op.Lock()
	handedOver := false
	defer func() {
		if !handedOver {
			c.op.Unlock()
		}
	}()
	if c.deleted {
		return ConnectorStatus{}, fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	cfg, target, rt, failure, _ := c.snapshot()
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
	bound := w.cfg.ShutdownTimeout
	if bound <= 0 {
		bound = DefaultShutdownTimeout
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound+time.Minute)
	go func() {
		defer cancel()
		defer c.op.Unlock()
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

// RestartTask implements [API]: the task reopens and resumes from what the
// host accepted; a connector that failed as a whole restarts whole.
func (w *Worker) RestartTask(ctx context.Context, name string, task int) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	c.op.Lock()
	defer c.op.Unlock()
	if c.deleted {
		return fmt.Errorf("connector %s: %w: %w", name, ErrNotFound, errGone)
	}
	cfg, target, rt, failure, _ := c.snapshot()
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

// Pause implements [API]: tasks stop reading; what was read commits.
func (w *Worker) Pause(ctx context.Context, name string) error {
	return w.setTarget(ctx, name, store.TargetPaused)
}

// Resume implements [API]; it also starts a STOPPED connector.
func (w *Worker) Resume(ctx context.Context, name string) error {
	return w.setTarget(ctx, name, store.TargetRunning)
}

// Stop implements [API]: final checkpoint and commit, then every plugin
// process ends; the config stays. Offsets can then be altered or reset.
func (w *Worker) Stop(ctx context.Context, name string) error {
	return w.setTarget(ctx, name, store.TargetStopped)
}

func (w *Worker) setTarget(ctx context.Context, name string, target store.TargetState) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	c.op.Lock()
	defer c.op.Unlock()
	if c.deleted {
		return fmt.Errorf("connector %s: %w: %w", name, ErrNotFound, errGone)
	}
	c.mu.Lock()
	prev, rt, failure := c.target, c.rt, c.failure
	c.target = target
	c.mu.Unlock()
	if err := w.persist(ctx, c, false); err != nil {
		return err
	}
	switch target {
	case store.TargetStopped:
		return w.stopLocked(ctx, c)
	case store.TargetPaused, store.TargetRunning:
		if rt == nil && failure == "" {
			w.startLocked(c)
			return nil
		}
		if rt != nil {
			if target == store.TargetPaused {
				rt.Pause()
			} else {
				rt.Resume()
			}
		}
	}
	if prev != target {
		w.logger.Info("connector state changed", "connector", name, "from", prev, "to", target)
	}
	return nil
}

// persist stores the connector's config and target state.
func (w *Worker) persist(ctx context.Context, c *conn, created bool) error {
	c.mu.Lock()
	rec := store.Connector{Name: c.name, Config: maps.Clone(c.config), Target: c.target, Updated: time.Now().UTC()}
	c.mu.Unlock()
	if created {
		rec.Created = rec.Updated
	} else if old, err := w.store.Connector(ctx, c.name); err == nil {
		rec.Created = old.Created
	}
	if err := w.store.PutConnector(ctx, rec); err != nil {
		return fmt.Errorf("connector %s: %w", c.name, err)
	}
	return nil
}

// runtimeOptions are the runtime settings of a connector. It runs with
// its effective config (Connect's keys translated); the stored one stays
// as given.
func (w *Worker) runtimeOptions(c *conn, paused bool) runtime.Options {
	c.mu.Lock()
	defer c.mu.Unlock()
	return runtime.Options{
		Name: c.name, Config: w.effective(c.config), Components: maps.Clone(c.comps),
		DataDir: w.cfg.DataDir, Plugins: w.plugins, Offsets: w.store, Statuses: w.store,
		Metrics: w.metrics.Connector(c.name), Logger: w.logger, Paused: paused, Tuning: w.deps.Tuning,
	}
}

// startLocked starts the connector's runtime in its target state; c.op is
// held. A start that fails leaves the connector FAILED with the reason.
// The runtime runs on the worker's lifetime (w.life), not on the ctx of
// the request that started it.
//
//nolint:contextcheck // see above
func (w *Worker) startLocked(c *conn) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return
	}
	c.mu.Lock()
	paused := c.target == store.TargetPaused
	c.mu.Unlock()
	// The runtime lives until stopped or the worker closes, not as long
	// as a request.
	rt, err := runtime.Start(w.life, w.runtimeOptions(c, paused))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.rt, c.failure = nil, err.Error()
		w.logger.Error("connector could not start", "connector", c.name, "error", err)
		return
	}
	c.rt, c.failure = rt, ""
	go w.watch(c, rt)
}

// watch records a runtime's end in the status store.
func (w *Worker) watch(c *conn, rt *runtime.Connector) {
	<-rt.Done()
	st := w.status(c)
	rec := store.Status{Connector: store.InstanceStatus{State: string(st.Connector.State), WorkerID: w.cfg.WorkerID, Trace: st.Connector.Trace}, Updated: time.Now().UTC()}
	for _, t := range st.Tasks {
		rec.Tasks = append(rec.Tasks, store.InstanceStatus{State: string(t.State), WorkerID: t.WorkerID, Trace: t.Trace})
	}
	if rt.Err() == nil {
		return
	}
	// A failure is recorded even while the worker closes.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.life), 10*time.Second)
	defer cancel()
	if err := w.store.PutStatus(ctx, c.name, rec); err != nil {
		w.logger.Warn("cannot store the connector's status", "connector", c.name, "error", err)
	}
}

// stopLocked stops the runtime (final checkpoint and commit within ctx);
// c.op is held.
func (w *Worker) stopLocked(ctx context.Context, c *conn) error {
	c.mu.Lock()
	rt := c.rt
	c.rt = nil
	c.mu.Unlock()
	if rt == nil {
		return nil
	}
	err := rt.Stop(ctx)
	if err != nil && !errors.Is(err, runtime.ErrStopCutShort) {
		// A runtime that had failed reports its failure; the stop itself
		// went fine.
		w.logger.Info("stopped a connector that had failed", "connector", c.name, "error", err)
		return nil
	}
	return err
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

// targetOf maps a requested initial state to a target state.
func targetOf(s State) (store.TargetState, error) {
	switch s {
	case "", StateRunning:
		return store.TargetRunning, nil
	case StatePaused:
		return store.TargetPaused, nil
	case StateStopped:
		return store.TargetStopped, nil
	}
	return "", fmt.Errorf("initial state %q: use RUNNING, PAUSED or STOPPED", s)
}

// checkName rejects names Connect rejects (empty, or control characters),
// "." and ".." (no URL reaches them), and names too long to store.
func checkName(name string) error {
	if strings.TrimSpace(name) == "" {
		return validationError("name", name, "a connector needs a name")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return validationError("name", name, fmt.Sprintf("connector name %q contains control characters", name))
		}
	}
	if name == "." || name == ".." {
		return validationError("name", name, fmt.Sprintf("connector name %q cannot be used: /connectors/%s is not a path to it", name, name))
	}
	if err := store.CheckName(name); err != nil {
		return validationError("name", name[:min(len(name), 64)]+"…", err.Error())
	}
	return nil
}

// configWithName puts the connector's name in its config; a different
// name there is an error.
func configWithName(name string, config map[string]string) (map[string]string, error) {
	cfg := maps.Clone(config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	if n, ok := cfg[runtime.KeyName]; ok && n != name {
		return nil, validationError(runtime.KeyName, n, fmt.Sprintf("the config's name %q differs from the connector's name %q", n, name))
	}
	cfg[runtime.KeyName] = name
	return cfg, nil
}

// validationError is a ValidationError with one error on one key.
func validationError(key, value, msg string) *ValidationError {
	v := value
	return &ValidationError{Infos: ConfigInfos{ErrorCount: 1, Groups: []string{}, Configs: []ConfigInfo{{
		Definition: ConfigDef{Name: key, Type: string(sdk.TypeString), Dependents: []string{}},
		Value:      ConfigValue{Name: key, Value: &v, Errors: []string{msg}, RecommendedValues: []string{}, Visible: true},
	}}}}
}
