package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/floehq/floe/host/dlq"
	"github.com/floehq/floe/host/metrics"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
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
	Logger   *slog.Logger       // nil discards
	// Paused starts the connector with its tasks paused.
	Paused bool
	// Share, in a cluster, is the part of the connector this worker
	// runs; nil runs all of it here (standalone).
	Share  *Share
	Tuning Tuning
	// MemoryBytes is the connector's share of the worker's memory budget
	// (memory.max.bytes), divided among its plugin processes (see
	// memoryWeights); 0 sets no budget.
	MemoryBytes int64
}

// Connector runs one connector: its plugin processes, its pipelines, its
// checkpoints and commits. Create it with [Start]; its methods are safe
// for concurrent use.
type Connector struct {
	opts     Options
	settings Settings
	logger   *slog.Logger
	metrics  *metrics.Connector
	dlq      *dlq.Reporter
	progress progress

	roles map[sdk.Kind]*role
	part  *partitionerHolder
	share *shareState // nil: the whole connector runs here

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
	if sh := opts.Share; sh != nil && (sh.Link == nil || sh.Worker == "") {
		return nil, fmt.Errorf("runtime: connector %s: a Share needs a Link and a Worker", opts.Name)
	}
	set, err := ParseSettings(opts.Name, opts.Config)
	if err != nil {
		return nil, err
	}
	set.applyMemory(opts.MemoryBytes)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Tuning, err = opts.Tuning.withDefaults(set.CommitInterval); err != nil {
		return nil, fmt.Errorf("runtime: connector %s: %w", opts.Name, err)
	}
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
		// In a cluster maintenance runs beside the committer only
		// (maintainWhileCommitting).
		if comp := opts.Components[k].Name; comp != "" && (k != sdk.KindMaintenance || opts.Share == nil) {
			c.roles[k] = newRole(c, k, comp)
		}
	}
	c.part = &partitionerHolder{c: c}
	if opts.Share != nil {
		c.share = newShareState(*opts.Share)
	}
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

// RetryPolicy is the restart policy its config sets (the worker applies it).
func (c *Connector) RetryPolicy() RetryPolicy { return c.settings.Retry }

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

// pluginConfig is the config the plugin of kind receives: the keys its
// component declares, plus floe.data.dir (see [PluginConfig]), the
// process's memory share and, for a source, the commit interval.
func (c *Connector) pluginConfig(k sdk.Kind) map[string]string {
	cfg := PluginConfig(c.opts.Components[k].Fields, c.opts.Config, c.opts.DataDir)
	if b := c.settings.Memory[k]; b > 0 {
		cfg[sdk.KeyMemoryBytes] = strconv.FormatInt(b, 10)
	}
	if k == sdk.KindSource {
		cfg[sdk.KeyCommitInterval] = strconv.FormatInt(c.settings.CommitInterval.Milliseconds(), 10)
	}
	return cfg
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
	// Beside the sessions: maintenance, and asking the sink what it waits for.
	var sideWG sync.WaitGroup
	sideCtx, stopSide := context.WithCancel(hard)
	if r := c.roles[sdk.KindMaintenance]; r != nil {
		sideWG.Add(1)
		go func() { defer sideWG.Done(); c.maintain(sideCtx, r) }()
	}
	if c.share != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.receiveControl(rolesCtx) }()
		if comp := c.opts.Components[sdk.KindMaintenance].Name; comp != "" {
			sideWG.Add(1)
			go func() { defer sideWG.Done(); c.maintainWhileCommitting(sideCtx, comp) }()
		}
	}
	sideWG.Add(1)
	go func() { defer sideWG.Done(); c.watchWaits(sideCtx, c.roles[sdk.KindSink]) }()

	err := c.sessions(hard)

	stopSide()
	sideWG.Wait()
	cctx, cancel := c.closeCtx(hard)
	c.part.close(cctx)
	cancel()
	stopRoles()
	if c.share != nil {
		c.share.link.Close()
	}
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
	// Sessions ended by a service outage in a row, with no commit between:
	// since when, and how long to wait before the next reopen.
	var unavailableSince time.Time
	reopenWait := c.opts.Tuning.CommitBackoff
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
		openedAt := s.committedID
		c.mu.Lock()
		c.sess = s
		c.mu.Unlock()
		err = s.run(ctx)
		c.mu.Lock()
		c.sess = nil
		c.mu.Unlock()
		lastEpoch = s.lastEpoch()
		s.mu.Lock()
		progressed := s.committedID > openedAt
		s.mu.Unlock()
		if progressed {
			unavailableSince, reopenWait = time.Time{}, c.opts.Tuning.CommitBackoff
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errSinkLost):
			c.logger.Warn("sink process lost: uncommitted checkpoints dropped; resuming every task from the sink's frontier", "error", err)
		case errors.Is(err, errUnanswered) && c.stopping():
			c.logger.Warn("stopped with checkpoints the committer did not answer (it may have died); whoever runs these tasks next reads them again from the committed frontier",
				"error", err)
			return nil
		case errors.Is(err, errSinkUnavailable), errors.Is(err, errSuperseded), errors.Is(err, errCommitRefused), errors.Is(err, errCommitterOpen):
			// The process lives: reopen it, with a doubling pause so that
			// a service that stays down is not hammered, for as long as a
			// commit may retry; past that the connector fails and the
			// restart policy takes over.
			if unavailableSince.IsZero() {
				unavailableSince = time.Now()
			}
			if down := time.Since(unavailableSince); down+reopenWait > c.opts.Tuning.CommitMaxElapsed {
				return fmt.Errorf("the sink found a service unavailable on every reopen for %s, with no commit in between: %w", down.Round(time.Second), err)
			}
			c.logger.Warn("uncommitted checkpoints dropped (a service unavailable, or the committer refused them); reopening the sink and resuming every task from its frontier",
				"retry_in", reopenWait, "error", err)
			if !sleepCtx(awaitCtx, reopenWait) {
				return nil
			}
			reopenWait = min(2*reopenWait, c.opts.Tuning.CommitMaxBackoff)
			gen--
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

// errSinkUnavailable marks a session that ended because the sink failed
// a write or a flush on a service that is down (sdk.ErrTransient): its
// task cannot go on, but the process can open a new one.
var errSinkUnavailable = errors.New("sink unavailable")

// sourceOpen returns the source open request of task i.
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
