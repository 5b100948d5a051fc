// Package client is the host side of the floe plugin protocol: it starts a
// plugin binary over go-plugin and calls its components. The floe host and
// the sdktest conformance kits use it; plugin authors do not.
//
// Batches stay in their wire form (Arrow IPC bytes) on this side, so the
// host forwards them from source to sink without decoding them.
package client

// THIS FILE FIXES THE API; the bodies are filled in by the protocol work.

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hashicorp/go-hclog"

	"github.com/floehq/floe/sdk"
)

var errNotYet = errors.New("client: not implemented yet")

// StartOptions says how to start one plugin process.
type StartOptions struct {
	// Path is the plugin binary.
	Path string
	// Checksum is the binary's SHA-256 as the registry recorded it; the
	// start fails if the file changed since. Nil skips the check.
	Checksum []byte
	// Env is added to the process environment (GOMAXPROCS=2, …).
	Env []string
	// Nice is the process's niceness (0 leaves it).
	Nice int
	// Logger receives the plugin's log lines, already labelled.
	Logger hclog.Logger
}

// Process is one running plugin binary.
type Process struct{}

// Start launches a plugin binary and completes the handshake. Errors name
// the binary: missing, not executable, exited at start, or speaking
// another protocol version.
func Start(ctx context.Context, opts StartOptions) (*Process, error) { return nil, errNotYet }

// Component is one component a binary declares.
type Component struct {
	Kind    sdk.Kind
	Name    string
	Aliases []string
	Version string
	Summary string
	Fields  []sdk.Field
}

// Describe lists the binary's components.
func (p *Process) Describe(ctx context.Context) ([]Component, error) { return nil, errNotYet }

// Validate checks config against one component's spec, in the plugin (so
// the plugin's own validators run).
func (p *Process) Validate(ctx context.Context, kind sdk.Kind, component string, config map[string]string) ([]sdk.ConfigError, error) {
	return nil, errNotYet
}

// Exited is closed when the process ends, for whatever reason.
func (p *Process) Exited() <-chan struct{} { return nil }

// ExitReason describes why the process ended (exit status and the last
// lines it wrote), once Exited is closed.
func (p *Process) ExitReason() string { return "" }

// Pid returns the process id.
func (p *Process) Pid() int { return 0 }

// Kill ends the process (and its tasks) at once.
func (p *Process) Kill() {}

// Batch is a batch in wire form.
type Batch struct {
	Partition  string
	From       int64
	Next       int64
	SchemaID   int64
	NumRecords int64
	Skipped    int64
	// IPC is an Arrow IPC stream holding one record batch.
	IPC []byte
}

// Decode reads the record batch; the caller releases it.
func (b Batch) Decode(mem memory.Allocator) (arrow.RecordBatch, error) { return nil, errNotYet }

// Schema is a value schema in wire form.
type Schema struct {
	ID      int64
	Avro    string
	Subject string
	// ArrowIPC is an Arrow IPC schema message.
	ArrowIPC []byte
}

// Arrow decodes the Arrow schema.
func (s Schema) Arrow() (*arrow.Schema, error) { return nil, errNotYet }

// SourceHost is what the host serves to a source task (see sdk.SourceHost).
type SourceHost interface {
	StartPositions(ctx context.Context, partitions []string) (map[string]int64, error)
	PartitionsRevoked(ctx context.Context, next map[string]int64) error
	// AdmitSchema returns nil, or an error wrapping sdk.ErrSchemaRejected.
	AdmitSchema(ctx context.Context, s Schema) error
	// DeadLetter returns nil when stored, an error when the task must fail.
	DeadLetter(ctx context.Context, records []sdk.DeadLetter) error
}

// SourceOpen opens one source task.
type SourceOpen struct {
	Component string
	Connector string
	Task      int
	Tasks     int
	Config    map[string]string
	Host      SourceHost
}

// SourceTask is a source task in a plugin process.
type SourceTask struct{}

// OpenSource opens a source task.
func (p *Process) OpenSource(ctx context.Context, req SourceOpen) (*SourceTask, error) {
	return nil, errNotYet
}

// ReadResult is one Read's answer.
type ReadResult struct {
	Batches    []Batch
	EndOfInput bool
}

// Read returns up to max batches, waiting at most until ctx ends.
func (t *SourceTask) Read(ctx context.Context, max int) (ReadResult, error) {
	return ReadResult{}, errNotYet
}

// Commit reports durable positions to the source.
func (t *SourceTask) Commit(ctx context.Context, positions map[string]int64) error { return errNotYet }

// Close closes the task.
func (t *SourceTask) Close(ctx context.Context) error { return errNotYet }

// PartitionerOpen opens a connector's partitioner.
type PartitionerOpen struct {
	Component string
	Connector string
	Config    map[string]string
	Writers   int
}

// PartitionerTask is a partitioner in a plugin process. Safe for
// concurrent use.
type PartitionerTask struct{}

// OpenPartitioner opens a partitioner.
func (p *Process) OpenPartitioner(ctx context.Context, req PartitionerOpen) (*PartitionerTask, error) {
	return nil, errNotYet
}

// Partition returns a writer per record and, if the plugin tracks it, the
// per-writer load.
func (t *PartitionerTask) Partition(ctx context.Context, b Batch) (writers []uint32, load []float64, err error) {
	return nil, nil, errNotYet
}

// Close closes the partitioner.
func (t *PartitionerTask) Close(ctx context.Context) error { return errNotYet }

// SinkOpen opens a connector's sink.
type SinkOpen struct {
	Component string
	Connector string
	Config    map[string]string
	Writers   int
}

// SinkTask is a sink in a plugin process. See sdk.SinkTask for ordering.
type SinkTask struct{}

// OpenSink opens a sink.
func (p *Process) OpenSink(ctx context.Context, req SinkOpen) (*SinkTask, error) {
	return nil, errNotYet
}

// Frontier returns the sink's committed positions, or sdk.ErrUnsupported.
func (t *SinkTask) Frontier(ctx context.Context) (sdk.Frontier, error) {
	return sdk.Frontier{}, errNotYet
}

// PrepareSchema readies the sink for a schema; a rejection wraps
// sdk.ErrSchemaRejected. A sink without schema support accepts all.
func (t *SinkTask) PrepareSchema(ctx context.Context, s Schema) ([]string, error) {
	return nil, errNotYet
}

// Write hands a batch to the writers.
func (t *SinkTask) Write(ctx context.Context, checkpoint uint64, b Batch, writers []uint32) ([]sdk.Rejected, error) {
	return nil, errNotYet
}

// Flush closes a checkpoint's files (phase 1).
func (t *SinkTask) Flush(ctx context.Context, checkpoint uint64) ([]sdk.WriteResult, error) {
	return nil, errNotYet
}

// Commit registers a checkpoint's files (phase 2).
func (t *SinkTask) Commit(ctx context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	return nil, errNotYet
}

// Close closes the sink.
func (t *SinkTask) Close(ctx context.Context) error { return errNotYet }

// MaintenanceOpen opens a connector's maintenance.
type MaintenanceOpen struct {
	Component string
	Connector string
	Config    map[string]string
}

// MaintenanceTask is maintenance in a plugin process.
type MaintenanceTask struct{}

// OpenMaintenance opens maintenance.
func (p *Process) OpenMaintenance(ctx context.Context, req MaintenanceOpen) (*MaintenanceTask, error) {
	return nil, errNotYet
}

// Cycle runs one maintenance round.
func (t *MaintenanceTask) Cycle(ctx context.Context, req sdk.CycleRequest) (sdk.CycleResult, error) {
	return sdk.CycleResult{}, errNotYet
}

// Status returns table health and recent runs.
func (t *MaintenanceTask) Status(ctx context.Context) (sdk.MaintenanceStatus, error) {
	return sdk.MaintenanceStatus{}, errNotYet
}

// Close closes maintenance.
func (t *MaintenanceTask) Close(ctx context.Context) error { return errNotYet }
