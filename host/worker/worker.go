package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

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
	Logger *slog.Logger
	// Version and Commit are shown by GET /.
	Version, Commit string
	// Tuning overrides internal timings of every connector (tests).
	Tuning runtime.Tuning
	// Stores, when set, replace the files under the data dir (distributed
	// mode: the stores on the cluster's internal topics).
	Stores *Stores
	// Placement, when set, decides which connectors run on this worker
	// (distributed mode); nil runs every connector here.
	Placement Placement
}

// Worker runs connectors in one process (standalone mode): it validates
// and stores their configs, runs them, and answers the REST API. It
// implements [API]; its methods are safe for concurrent use.
type Worker struct {
	cfg      Config
	plugins  Plugins
	logger   *slog.Logger
	deps     Deps
	configs  store.ConfigStore
	statuses store.StatusStore
	offsets  store.OffsetStore
	metrics  *metrics.Metrics
	// life is the worker's lifetime: connectors run on it, not on the
	// request that started them. Close ends it once they stopped.
	life    context.Context
	endLife context.CancelFunc

	mu     sync.Mutex
	conns  map[string]*conn
	ready  bool
	closed bool
	// healPasses counts the restart policy's passes over the connectors.
	healPasses atomic.Int64
}

var _ API = (*Worker)(nil)

// conn is one connector the worker holds.
type conn struct {
	name string
	// op serialises lifecycle operations (create, reconfigure, pause,
	// stop, delete, restart) on this connector.
	op opLock

	mu      sync.Mutex
	config  map[string]string // as stored, secrets included
	target  store.TargetState
	secrets map[string]bool
	comps   map[sdk.Kind]client.Component
	rt      *runtime.Connector // nil while STOPPED or when the start failed
	failure string             // why the connector could not start
	deleted bool
	// remote marks a connector another worker created, until this
	// worker applied its stored record (Reconcile).
	remote bool
	// restart marks the instances an accepted restart (KIP-745) is
	// restarting; nil when none is.
	restart *pendingRestart
	// heal holds the restart policy's records of failed instances of
	// healRT, the runtime they failed in (heal.go); restarts counts the
	// policy's restarts.
	heal     map[int]*healing
	healRT   *runtime.Connector
	restarts int64
	// share is what of the connector runs here (distributed mode), as
	// last handed to rt.
	share ShareSpec
}

func newConn(name string, target store.TargetState) *conn {
	return &conn{name: name, target: target, op: make(opLock, 1)}
}

// opLock is a connector's lifecycle lock. Unlike a sync.Mutex, a request
// waiting for it (behind a slow stop, a validation, a restart) gives up
// when its ctx ends.
type opLock chan struct{}

// lock takes l, or returns ctx's error once ctx ends first (at once when
// ctx has ended already, even if l is free).
func (l opLock) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l opLock) unlock() { <-l }

// tryLock takes l when it is free.
func (l opLock) tryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// lockOp takes c.op for a request on connector c, bounded by ctx.
func (c *conn) lockOp(ctx context.Context) error {
	if err := c.op.lock(ctx); err != nil {
		return fmt.Errorf("connector %s: waiting for another operation on it to finish: %w", c.name, err)
	}
	return nil
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
	stores := deps.Stores
	if stores == nil {
		st, err := store.OpenLocal(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		stores = &Stores{Configs: st, Statuses: st, Offsets: st}
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limitHostMemory(cfg.MemoryMaxBytes)
	life, endLife := context.WithCancel(context.WithoutCancel(ctx))
	w := &Worker{
		cfg: cfg, plugins: withTransport(deps.Plugins, cfg), logger: logger, deps: deps,
		configs: stores.Configs, statuses: stores.Statuses, offsets: stores.Offsets,
		metrics: metrics.New(), conns: map[string]*conn{},
		life: life, endLife: endLife,
	}
	stored, err := w.configs.Connectors(ctx)
	if err != nil {
		endLife()
		return nil, fmt.Errorf("worker: %w", err)
	}
	for _, sc := range stored {
		target := sc.Target
		if target == "" {
			target = store.TargetRunning
		}
		c := newConn(sc.Name, target)
		c.config = sc.Config
		w.conns[sc.Name] = c
		_ = c.op.lock(context.WithoutCancel(ctx)) // c is new: nobody holds it
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
		c.op.unlock()
		w.logger.Info("connector restored", "connector", sc.Name, "target", c.target)
	}
	w.mu.Lock()
	w.ready = true
	w.mu.Unlock()
	go w.healLoop(life)
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
			if err := c.lockOp(ctx); err != nil {
				errs[i] = err
				return
			}
			defer c.op.unlock()
			errs[i] = w.stopLocked(ctx, c)
		}()
	}
	wg.Wait()
	w.endLife()
	return errors.Join(errs...)
}

// ServerInfo implements [API].
func (w *Worker) ServerInfo(context.Context) ServerInfo {
	v := w.deps.Version
	if v == "" {
		v = "dev"
	}
	return ServerInfo{Version: v, Commit: w.deps.Commit}
}

// Ready implements [API].
func (w *Worker) Ready(context.Context) error {
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

func (w *Worker) get(name string) (*conn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.conns[name]
	if !ok {
		return nil, fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	return c, nil
}
