package runtime

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

	"github.com/floehq/floe/host/dlq"
	"github.com/floehq/floe/host/metrics"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
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

// Options configure one connector's runtime.
type Options struct {
	Name string
	// Config is the connector's validated config, as the user wrote it.
	Config map[string]string
	// Components holds the component of each kind as the registry
	// describes it: its canonical name (aliases resolved) and its spec's
	// fields, which decide the keys its plugin receives ([PluginConfig]).
	// Source, partitioner and sink are required; maintenance is optional.
	Components map[sdk.Kind]client.Component
	// DataDir is the worker's data.dir, given to plugins as floe.data.dir.
	DataDir  string
	Plugins  Plugins
	Offsets  store.OffsetStore
	Statuses store.StatusStore  // for the topics seen; nil keeps them in memory
	Metrics  *metrics.Connector // nil records nothing
	Logger   hclog.Logger       // nil discards
	// Paused starts the connector with its tasks paused.
	Paused bool
	Tuning Tuning
}

// Tuning holds internal timings; zero values take the defaults. Tests
// shorten them.
type Tuning struct {
	// ReadPoll bounds one Read, so a task can act between reads on an
	// idle source (deliver source commits, notice a stop). Default 1 s.
	ReadPoll time.Duration
	// ShutdownTimeout bounds the final checkpoint when the lifetime ctx
	// of Start ends. Default 60 s.
	ShutdownTimeout time.Duration
	// CloseTimeout bounds closing a task or a plugin. Default 10 s.
	CloseTimeout time.Duration
	// CommitMaxAttempts and CommitMaxElapsed bound the retries of one
	// checkpoint's commit; past either the tasks fail. Default 10, 5 min.
	CommitMaxAttempts int
	CommitMaxElapsed  time.Duration
	// CommitBackoff doubles per retry up to CommitMaxBackoff. Default
	// 200 ms and 10 s.
	CommitBackoff    time.Duration
	CommitMaxBackoff time.Duration
	// RevokeTimeout bounds PartitionsRevoked's wait for the commit of the
	// revoked partitions. Default max(30 s, 3 commit intervals).
	RevokeTimeout time.Duration
	// RestartStableAfter: a plugin process that lived this long resets
	// the count of consecutive restarts. Default 60 s.
	RestartStableAfter time.Duration
	// DeadLetterConnectTimeout bounds connecting the dead-letter producer
	// and creating its topic. Default dlq.DefaultConnectTimeout (30 s).
	DeadLetterConnectTimeout time.Duration
}

func (t Tuning) withDefaults(commitInterval time.Duration) Tuning {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReadPoll, time.Second)
	def(&t.ShutdownTimeout, 60*time.Second)
	def(&t.CloseTimeout, 10*time.Second)
	def(&t.CommitMaxElapsed, 5*time.Minute)
	def(&t.CommitBackoff, 200*time.Millisecond)
	def(&t.CommitMaxBackoff, 10*time.Second)
	def(&t.RevokeTimeout, max(30*time.Second, 3*commitInterval))
	def(&t.RestartStableAfter, 60*time.Second)
	if t.CommitMaxAttempts <= 0 {
		t.CommitMaxAttempts = 10
	}
	return t
}

// TaskStatus is one source task's state.
type TaskStatus struct {
	State State
	Trace string
}

// Status is a connector's state, its tasks' and its progress.
type Status struct {
	State    State
	Trace    string
	Tasks    []TaskStatus
	Progress Progress
}

// Connector runs one connector: its plugin processes, its pipelines, its
// checkpoints and commits. Create it with [Start]; its methods are safe
// for concurrent use.
type Connector struct {
	opts     Options
	settings Settings
	logger   hclog.Logger
	metrics  *metrics.Connector
	dlq      *dlq.Reporter
	progress progress

	roles map[sdk.Kind]*role
	part  *partitionerHolder

	mu       sync.Mutex
	state    State
	trace    string
	tasks    []TaskStatus
	reading  []bool // per task: a Read is under way
	paused   bool
	pauseCh  chan struct{} // closed and replaced when paused changes
	sess     *session
	topics   map[string]bool
	maint    MaintenanceTask
	maintErr error
	maintLog maintenanceLog
	tables   map[string]tableInfo
	// committed holds the positions of the last commit this runtime made
	// or found (the sink's frontier), and its checkpoint.
	committed     map[string]int64
	committedCkpt uint64
	haveCommitted bool

	topicsMu  sync.Mutex // serialises topic persistence
	stopOnce  sync.Once
	stopReq   chan struct{} // closed by Stop (or when the lifetime ctx ends)
	abortOnce sync.Once
	abortReq  chan struct{} // closed when the graceful stop must give up
	done      chan struct{} // closed when run returns
	err       error         // set before done is closed
}

// tableInfo is what the sink reported about a table in its commits.
type tableInfo struct {
	snapshot   int64
	records    int64
	files      int64
	commits    int64
	lastCommit time.Time
}

// Start validates opts and starts the connector in the background: the
// plugin processes, the sink (resuming from its frontier), the partitioner
// and the source tasks. It returns at once; progress and failures show in
// [Connector.Status].
//
// ctx is the connector's lifetime: when it ends the connector stops as
// [Connector.Stop] does, with a final checkpoint bounded by
// Tuning.ShutdownTimeout.
func Start(ctx context.Context, opts Options) (*Connector, error) {
	if opts.Name == "" {
		return nil, errors.New("runtime: connector without a name")
	}
	for _, k := range []sdk.Kind{sdk.KindSource, sdk.KindPartitioner, sdk.KindSink} {
		if opts.Components[k].Name == "" {
			return nil, fmt.Errorf("runtime: connector %s: no %s component", opts.Name, k)
		}
	}
	if opts.Plugins == nil || opts.Offsets == nil {
		return nil, fmt.Errorf("runtime: connector %s: Plugins and Offsets are required", opts.Name)
	}
	set, err := ParseSettings(opts.Name, opts.Config)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	opts.Tuning = opts.Tuning.withDefaults(set.CommitInterval)
	logger := opts.Logger.With("connector", opts.Name)
	set.DLQ.ConnectTimeout = opts.Tuning.DeadLetterConnectTimeout
	c := &Connector{
		opts:     opts,
		settings: set,
		logger:   logger,
		metrics:  opts.Metrics,
		dlq:      dlq.NewReporter(set.DLQ, logger),
		roles:    map[sdk.Kind]*role{},
		state:    StateRunning,
		tasks:    make([]TaskStatus, set.Tasks),
		reading:  make([]bool, set.Tasks),
		paused:   opts.Paused,
		pauseCh:  make(chan struct{}),
		topics:   map[string]bool{},
		tables:   map[string]tableInfo{},
		stopReq:  make(chan struct{}),
		abortReq: make(chan struct{}),
		done:     make(chan struct{}),
	}
	if c.paused {
		c.state = StatePaused
	}
	for i := range c.tasks {
		c.tasks[i] = TaskStatus{State: StateUnassigned}
	}
	if opts.Statuses != nil {
		if ts, err := opts.Statuses.Topics(ctx, opts.Name); err == nil {
			for _, t := range ts {
				c.topics[t] = true
			}
		}
	}
	for _, k := range sdk.AllKinds() {
		if comp := opts.Components[k].Name; comp != "" {
			c.roles[k] = newRole(c, k, comp)
		}
	}
	c.part = &partitionerHolder{c: c}
	go c.run(ctx)
	return c, nil
}

// Stop stops the connector: no more reads, a final checkpoint and commit,
// tasks and plugins closed. ctx bounds the wait; when it ends first, the
// connector is killed and the uncommitted data is read again next time
// (nothing is lost, but Stop says so). Stop after the connector ended
// returns how it ended.
func (c *Connector) Stop(ctx context.Context) error {
	c.requestStop()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		c.abort()
		<-c.done
		return fmt.Errorf("connector %s: %w (%w): uncommitted data will be read again on the next start", c.opts.Name, ErrStopCutShort, ctx.Err())
	}
}

// Done is closed when the connector has stopped, by Stop, by its
// lifetime ctx or by a failure that ends it (see Err).
func (c *Connector) Done() <-chan struct{} { return c.done }

// Err returns why the connector ended, after Done is closed: nil for a
// clean stop.
func (c *Connector) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

func (c *Connector) requestStop() { c.stopOnce.Do(func() { close(c.stopReq) }) }
func (c *Connector) abort()       { c.abortOnce.Do(func() { close(c.abortReq) }) }

func (c *Connector) stopping() bool {
	select {
	case <-c.stopReq:
		return true
	default:
		return false
	}
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
			c.tasks[i] = TaskStatus{State: StateFailed, Trace: err.Error()}
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

// Offsets returns the positions of the last commit (the sink's frontier as
// this runtime knows it) and its checkpoint id; ok is false before the
// sink's frontier was read.
func (c *Connector) Offsets() (positions map[string]int64, checkpoint uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.committed), c.committedCkpt, c.haveCommitted
}

func (c *Connector) setCommitted(pos map[string]int64, ckpt uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.committed, c.committedCkpt, c.haveCommitted = maps.Clone(pos), ckpt, true
}

// Topics returns the topics of the partitions seen since the last reset,
// sorted: the part before the last '/' of Kafka-style partition names, the
// whole name otherwise.
func (c *Connector) Topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Collect(maps.Keys(c.topics))
	slices.Sort(out)
	return out
}

// ResetTopics forgets the topics seen (PUT /connectors/{c}/topics/reset).
func (c *Connector) ResetTopics(ctx context.Context) error {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	c.mu.Lock()
	c.topics = map[string]bool{}
	c.mu.Unlock()
	if c.opts.Statuses != nil {
		return c.opts.Statuses.PutTopics(ctx, c.opts.Name, nil)
	}
	return nil
}

// noteTopic records the topic of partition p; new topics are persisted.
func (c *Connector) noteTopic(ctx context.Context, p string) {
	topic, _, _ := dlq.SplitPartition(p)
	c.mu.Lock()
	known := c.topics[topic]
	c.mu.Unlock()
	if known {
		return
	}
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	c.mu.Lock()
	c.topics[topic] = true
	all := slices.Collect(maps.Keys(c.topics))
	c.mu.Unlock()
	if c.opts.Statuses != nil {
		if err := c.opts.Statuses.PutTopics(ctx, c.opts.Name, all); err != nil {
			c.logger.Warn("cannot store the topics seen", "error", err)
		}
	}
}

// Tables reports table health and maintenance runs from the maintenance
// plugin when the connector has one (fromMaintenance true), else (or once
// the connector ended) what the sink reported in its commits: tables,
// records and files committed by this runtime, last commit time.
func (c *Connector) Tables(ctx context.Context) (st sdk.MaintenanceStatus, fromMaintenance bool, err error) {
	c.mu.Lock()
	m, merr := c.maint, c.maintErr
	hasMaint := c.opts.Components[sdk.KindMaintenance].Name != ""
	var tables []sdk.TableHealth
	for name, t := range c.tables {
		tables = append(tables, sdk.TableHealth{Table: name, Records: t.records, DataFiles: t.files, LastCommit: t.lastCommit})
	}
	c.mu.Unlock()
	ended := false
	select {
	case <-c.done:
		ended = true
	default:
	}
	if hasMaint && m != nil {
		st, err := m.Status(ctx)
		return st, true, err
	}
	if hasMaint && !ended {
		if merr == nil {
			merr = errors.New("the maintenance plugin is starting")
		}
		return st, true, fmt.Errorf("connector %s: maintenance: %w", c.opts.Name, merr)
	}
	slices.SortFunc(tables, func(a, b sdk.TableHealth) int { return strings.Compare(a.Table, b.Table) })
	return sdk.MaintenanceStatus{Tables: tables}, false, nil
}

// TableCommits is what this runtime's commits told about one table: the
// sink reports per commit the snapshot it made, the records and the files;
// nothing about the table as a whole (snapshots, bytes, manifests), which
// only a maintenance plugin reads.
type TableCommits struct {
	Table string
	// SnapshotID is the snapshot of the last commit.
	SnapshotID int64
	// Commits, Records and Files count since this runtime started.
	Commits    int64
	Records    int64
	Files      int64
	LastCommit time.Time
}

// CommittedTables lists the tables this runtime committed to, by name.
func (c *Connector) CommittedTables() []TableCommits {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]TableCommits, 0, len(c.tables))
	for name, t := range c.tables {
		out = append(out, TableCommits{Table: name, SnapshotID: t.snapshot, Commits: t.commits,
			Records: t.records, Files: t.files, LastCommit: t.lastCommit})
	}
	slices.SortFunc(out, func(a, b TableCommits) int { return strings.Compare(a.Table, b.Table) })
	return out
}

func (c *Connector) noteTableCommits(tcs []sdk.TableCommit, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tc := range tcs {
		t := c.tables[tc.Table]
		t.snapshot = tc.SnapshotID
		t.records += tc.Records
		t.files += int64(tc.Files)
		t.commits++
		t.lastCommit = at
		c.tables[tc.Table] = t
	}
}

// pluginConfig is the config the plugin of kind receives: the keys its
// component declares, plus floe.data.dir (see [PluginConfig]).
func (c *Connector) pluginConfig(k sdk.Kind) map[string]string {
	return PluginConfig(c.opts.Components[k].Fields, c.opts.Config, c.opts.DataDir)
}

// closeCtx returns a context for closing things: it survives the end of
// ctx (the close must still happen) but is bounded by CloseTimeout.
func (c *Connector) closeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.opts.Tuning.CloseTimeout)
}

// run is the connector's life. See the package doc for the sequence.
func (c *Connector) run(lifetime context.Context) {
	// hard ends every plugin call at once: a stop that gave up, or a
	// lifetime that ended and ran out of ShutdownTimeout.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(lifetime))
	defer hardCancel()
	go func() {
		select {
		case <-lifetime.Done():
			c.requestStop()
			t := time.NewTimer(c.opts.Tuning.ShutdownTimeout)
			defer t.Stop()
			select {
			case <-t.C:
				c.logger.Warn("final checkpoint took longer than the shutdown timeout; killing the plugins")
				c.abort()
			case <-c.done:
			}
		case <-c.done:
		}
	}()
	go func() {
		select {
		case <-c.abortReq:
			hardCancel()
		case <-c.done:
		}
	}()

	rolesCtx, stopRoles := context.WithCancel(hard)
	var wg sync.WaitGroup
	for _, r := range c.roles {
		wg.Add(1)
		go func() { defer wg.Done(); r.supervise(rolesCtx) }()
	}
	var maintWG sync.WaitGroup
	maintCtx, stopMaint := context.WithCancel(hard)
	if r := c.roles[sdk.KindMaintenance]; r != nil {
		maintWG.Add(1)
		go func() { defer maintWG.Done(); c.maintain(maintCtx, r) }()
	}

	err := c.sessions(hard)

	stopMaint()
	maintWG.Wait()
	cctx, cancel := c.closeCtx(hard)
	c.part.close(cctx)
	cancel()
	stopRoles()
	wg.Wait()
	dctx, cancel := c.closeCtx(hard)
	c.dlq.Close(dctx)
	cancel()
	if err != nil {
		c.fail(err)
	} else {
		c.logger.Info("connector stopped")
	}
	c.err = err
	close(c.done)
}

// sessions runs sink sessions until a stop or a failure. A session ends
// early when the sink process is lost: then the sink restarts and a new
// session resumes every task from the sink's fresh frontier.
func (c *Connector) sessions(ctx context.Context) error {
	sinkRole := c.roles[sdk.KindSink]
	// Waiting for a sink process (a restart backoff) ends with a stop.
	awaitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopReq:
			cancel()
		case <-awaitCtx.Done():
		}
	}()
	var lastEpoch uint64
	gen := 0
	for !c.stopping() {
		proc, g, err := sinkRole.await(awaitCtx, gen)
		if err != nil {
			if c.stopping() {
				return nil
			}
			return err
		}
		gen = g
		s, err := openSession(ctx, c, proc, lastEpoch)
		if err != nil {
			if ctx.Err() != nil && c.stopping() {
				return nil
			}
			if processGone(proc, err) {
				c.logger.Warn("sink process lost while opening; waiting for its restart", "error", err)
				continue
			}
			return err
		}
		c.mu.Lock()
		c.sess = s
		c.mu.Unlock()
		err = s.run(ctx)
		c.mu.Lock()
		c.sess = nil
		c.mu.Unlock()
		lastEpoch = s.lastEpoch()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errSinkLost):
			c.logger.Warn("sink process lost: uncommitted checkpoints dropped; resuming every task from the sink's frontier", "error", err)
		default:
			return err
		}
	}
	return nil
}

// ErrStopCutShort is wrapped by [Connector.Stop] when its ctx ended before
// the final commit: nothing is lost, but the uncommitted data is read again
// on the next start.
var ErrStopCutShort = errors.New("stop cut short")

// errSinkLost marks a session that ended because the sink process died.
var errSinkLost = errors.New("sink process lost")

// taskConfig returns the source open request of task i.
func (c *Connector) sourceOpen(i int, host client.SourceHost) client.SourceOpen {
	return client.SourceOpen{
		Component: c.opts.Components[sdk.KindSource].Name,
		Connector: c.opts.Name,
		Task:      i,
		Tasks:     c.settings.Tasks,
		Config:    c.pluginConfig(sdk.KindSource),
		Host:      host,
	}
}
