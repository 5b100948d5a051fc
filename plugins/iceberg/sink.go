package iceberg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// Version is the plugin's version.
const Version = "0.1.0"

// Component returns the Iceberg sink component.
func Component() sdk.Component {
	return sdk.Component{
		Name: "iceberg",
		// The Apache Iceberg sink's class, and Tabular's from before it
		// moved to Apache: a Connect config starts by changing nothing.
		Aliases: []string{"org.apache.iceberg.connect.IcebergSinkConnector", "io.tabular.iceberg.connect.IcebergSinkConnector"},
		Version: Version,
		Summary: "Writes records to Apache Iceberg tables, exactly once: data files per checkpoint, one commit per table with the source positions in the snapshot.",
		Spec:    Spec(),
		// The task keeps a frontier (sdk.SinkTaskWithFrontier) and
		// readies tables for new schemas (sdk.SinkTaskWithSchemas); the
		// sink says which service it waits for (sdk.SinkWithWaits).
		Capabilities: []sdk.Capability{sdk.CapabilityFrontier, sdk.CapabilitySchemas, sdk.CapabilityWaits},
		Sink:         sink{waits: &waits{}},
	}
}

// errClosed is returned by calls after Close.
var errClosed = errors.New("iceberg sink: closed")

// sink is the process's Iceberg sink: it opens one task per connector and
// keeps what each connector's sink is waiting for.
type sink struct {
	waits *waits
}

// Waits implements sdk.SinkWithWaits.
func (s sink) Waits(connector string) []sdk.ServiceWait { return s.waits.list(connector) }

// Open connects to the catalog and starts the writers. Tables are loaded
// on first use (PrepareSchema, Frontier, Write or Commit).
func (s sink) Open(ctx context.Context, req sdk.SinkOpenRequest) (sdk.SinkTask, error) {
	cfg, err := parseSettings(req.Config)
	if err != nil {
		return nil, err
	}
	if req.Connector == "" {
		return nil, errors.New("iceberg sink: no connector name: the snapshot summaries record it")
	}
	services := cfg.catalog.Services()
	cat, closeCat, err := lake.OpenCatalog(ctx, cfg.catalog)
	if err != nil {
		if unavailable(err) {
			s.waits.failed(req.Connector, services.Catalog, err)
		}
		return nil, fmt.Errorf("iceberg sink: %w", err)
	}
	s.waits.answered(req.Connector, services.Catalog)
	logger := req.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Before any table is created: a store that refuses floe's keys
	// would otherwise leave a table the catalog made and no data.
	if err := awaitWarehouse(ctx, cfg, logger, func(err error) { s.waits.failed(req.Connector, services.Store, err) }); err != nil {
		_ = closeCat()
		return nil, fmt.Errorf("iceberg sink: %w", err)
	}
	s.waits.answered(req.Connector, services.Store)
	s3 := func(ctx context.Context) *aws.Config {
		c, err := lake.SharedS3Config(context.WithoutCancel(ctx), cfg.catalog)
		if err != nil {
			// iceberg-go loads its own per call and reports what fails.
			logger.Warn("iceberg sink: s3 file IO: each call configures its own client", "error", err)
		}
		return c
	}
	writers := max(req.Writers, 1)
	// The pipelines outlive each call: they live as long as the task,
	// until Close cancels them.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t := &task{
		connector:   req.Connector,
		cfg:         cfg,
		reset:       (*offsetsReset)(req.OffsetsReset),
		log:         logger.With("sink", "iceberg"),
		cat:         keepLists(boundCatalog(cat, cfg.requestTimeout), s3, cfg.catalog.Type == lake.CatalogREST),
		waits:       s.waits,
		services:    services,
		closeCat:    closeCat,
		committerID: committerID(),
		mem:         memory.DefaultAllocator,
		life:        life,
		cancel:      cancel,
		tables:      map[string]*tableState{},
		schemas:     map[int64]*arrow.Schema{},
	}
	if cfg.memoryBytes > 0 {
		t.rowGroupBytes = int64(float64(cfg.memoryBytes)*rowGroupPart) / int64(writers)
	}
	for i := range writers {
		t.writers = append(t.writers, newWriter(t, i)) //nolint:contextcheck // a writer lives as long as the task (t.life), not this call
	}
	return t, nil
}

// committerID names this committer in snapshot summaries: host, process
// and a random part, so two committers never share one.
func committerID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// task is one connector's open sink.
type task struct {
	connector string
	cfg       settings
	// reset is the host's pending offset override, if any.
	reset       *offsetsReset
	log         *slog.Logger
	cat         catalog.Catalog
	closeCat    func() error
	committerID string
	mem         memory.Allocator
	// waits is the sink's record of the services its connectors wait
	// for, services the names of this task's catalog and object store.
	waits    *waits
	services lake.Services

	life   context.Context
	cancel context.CancelFunc

	// structMu serializes catalog changes to table structure (create,
	// evolve, mark) and progress reloads.
	structMu sync.Mutex

	mu       sync.RWMutex
	tables   map[string]*tableState
	schemas  map[int64]*arrow.Schema
	flushed  uint64 // highest flushed checkpoint
	anyFlush bool
	closed   bool

	// beforeCommit, when set (tests), runs between planning a table's
	// commit and sending it: where a concurrent writer's commit conflicts
	// and where a crash hurts most. An error ends the Commit call.
	beforeCommit func(table string, attempt int) error

	// closeMu lets Close wait for Writes that are handing items over.
	closeMu sync.RWMutex
	writers []*writer
	// rowGroupBytes bounds the Arrow bytes of a writer's row group, from
	// the process's share of the memory budget (0: no budget; the table's
	// row-group limit applies).
	rowGroupBytes int64

	// unrouted counts records skipped for reaching no table; Flush logs
	// them and Skipped hands them to the host.
	unrouted unroutedCounter
}

var (
	_ sdk.SinkTask             = (*task)(nil)
	_ sdk.SinkTaskWithFrontier = (*task)(nil)
	_ sdk.SinkTaskWithSchemas  = (*task)(nil)
	_ sdk.SinkTaskWithSkips    = (*task)(nil)
)

func (t *task) closedErr() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return errClosed
	}
	return nil
}

// Close stops the writers and releases the catalog. Files of checkpoints
// not committed stay behind as orphans, for maintenance to delete.
func (t *task) Close(ctx context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()

	t.cancel() // ends pipelines and unblocks Writes waiting on full queues
	t.closeMu.Lock()
	for _, w := range t.writers {
		close(w.queue)
	}
	t.closeMu.Unlock()
	for _, w := range t.writers {
		select {
		case <-w.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return t.closeCat()
}
