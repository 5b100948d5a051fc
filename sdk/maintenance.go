package sdk

import (
	"context"
	"log/slog"
	"time"
)

// Maintenance keeps a sink's tables healthy (compaction, snapshot expiry,
// manifest rewrite, orphan cleanup). It runs in its own process with its own
// CPU and memory limits, so it never slows ingestion.
type Maintenance interface {
	Open(ctx context.Context, req MaintenanceOpenRequest) (MaintenanceTask, error)
}

// MaintenanceOpenRequest carries what a maintenance task needs.
type MaintenanceOpenRequest struct {
	Connector string
	Config    Config
	Logger    *slog.Logger
}

// MaintenanceTask is a connector's (or `floe maintain`'s) maintenance.
// Cycle and Status may be called concurrently.
type MaintenanceTask interface {
	// Cycle looks at the tables, decides from its triggers what is due,
	// and runs it. It returns what ran and when it wants the next cycle.
	// ctx bounds the whole cycle; a task cut short commits nothing.
	Cycle(ctx context.Context, req CycleRequest) (CycleResult, error)
	// Status returns table health and recent runs.
	Status(ctx context.Context) (MaintenanceStatus, error)
	// Close releases the task. It runs only once no Cycle or Status is
	// running: the SDK cancels the ctx of calls still in flight (a cycle
	// cut short commits nothing) and waits for them to return. No other
	// call follows.
	Close(ctx context.Context) error
}

// CycleRequest asks for one maintenance round.
type CycleRequest struct {
	// Force names tasks to run whatever their triggers say.
	Force  []string
	DryRun bool
}

// CycleResult is what one round did.
type CycleResult struct {
	Runs []TaskRun
	// Next is when the plugin wants the next cycle, from now.
	Next time.Duration
	// Tables is each table's health as the round left it, when the
	// plugin measured it anyway (optional): the host's table-health
	// metrics come from here, so they cost no extra reads.
	Tables []TableHealth
}

// TaskRun is one maintenance task's run on one table.
type TaskRun struct {
	Table       string
	Task        string
	Trigger     string
	Started     time.Time
	Duration    time.Duration
	FilesBefore int64
	FilesAfter  int64
	BytesBefore int64
	BytesAfter  int64
	Error       string
	Detail      string
}

// TableHealth is a table's shape as maintenance sees it.
type TableHealth struct {
	Table         string
	Snapshots     int64
	DataFiles     int64
	SmallFiles    int64
	DeleteFiles   int64
	DataBytes     int64
	Records       int64
	Manifests     int64
	MetadataBytes int64
	LastCommit    time.Time
	// MaxPartition is the partition with the most data files and
	// MaxPartitionFiles that count: what queries of one partition open.
	// It is named as `floe table describe` names partitions: field=value
	// pairs joined by "/", values as people read them
	// (ts_day=2026-01-01, not ts_day=20454; floe's own plugin prints
	// lake.PartitionLabel), "" when unpartitioned. The host shows it in
	// the status and /metrics as given.
	MaxPartition      string
	MaxPartitionFiles int64
}

// MaintenanceStatus is the answer to Status.
type MaintenanceStatus struct {
	Tables []TableHealth
	Runs   []TaskRun
}
