package sdk

import (
	"context"
	"log/slog"
	"time"
)

// Sink writes records to an external system in two phases: writers write
// files (Write, Flush) and a committer registers them (Commit). A connector
// opens it once per process, for all of its writers; in a cluster the
// worker holding the connector's committer opens one more task of the
// connector in the same process, with one writer, and calls only Frontier
// and Commit on it, with results flushed by any task. Tasks of a connector
// are independent: one's Open, Frontier or Commit leaves what another
// wrote and has not flushed whole. The sdktest.SinkKit check
// committer_task holds sinks to it.
type Sink interface {
	Open(ctx context.Context, req SinkOpenRequest) (SinkTask, error)
}

// SinkWithWaits is implemented by sinks that wait out an outage of a
// service they depend on inside their own calls (the iceberg sink's
// Commit retries while its catalog is down; its Open waits for the object
// store), so that the status of a stalled connector can say what it is
// waiting for. It is the Sink's, not a task's, because a sink may wait
// while it opens. Declare [CapabilityWaits] with it.
type SinkWithWaits interface {
	// Waits returns the services the sink of connector is waiting for
	// now, or none once they answer again. The host asks about once a
	// second while the connector runs, concurrently with any call of the
	// connector's task, an Open still running included: it must answer at
	// once, from memory.
	Waits(connector string) []ServiceWait
}

// ServiceWait is one service a sink is waiting for.
type ServiceWait struct {
	// Service names the service and where it is ("catalog at
	// http://127.0.0.1:8181", "object store at http://127.0.0.1:7070").
	// It is shown in the connector's status: never credentials.
	Service string
	// Since is when the first failed request of this outage was.
	Since time.Time
	// Attempts counts the failed requests since Since.
	Attempts int64
	// LastError is the last failure's message.
	LastError string
}

// SinkOpenRequest carries what a sink needs.
type SinkOpenRequest struct {
	Connector string
	Config    Config
	// Writers is the number of writers (the connector's tasks.max).
	Writers int
	// OffsetsReset is the user's offset override while it waits for its
	// first commit, nil otherwise. A sink that keeps a frontier
	// ([SinkTaskWithFrontier]) must honour it; see [OffsetsReset].
	OffsetsReset *OffsetsReset
	Logger       *slog.Logger
}

// OffsetsReset is an offset override the user set (PATCH or DELETE
// /connectors/{c}/offsets on a stopped connector), handed to the sink
// until a commit carries it.
//
// For each place the sink commits to (a table) whose newest commit of the
// connector is at or before AfterCheckpoint, or that has none, Positions
// replace its frontier: the sink drops no row below the old frontier as a
// replay, fences the next commit's ranges against Positions (a partition
// absent from Positions has no position: its range is accepted as it
// comes), and that commit records that it applied the override. A place
// committed past AfterCheckpoint applied it already and ignores it. The
// host stops sending it once a commit after AfterCheckpoint succeeded.
type OffsetsReset struct {
	// Positions is the complete new start frontier, per source partition.
	Positions map[string]int64
	// AfterCheckpoint is the sink's last committed checkpoint when the
	// user set the override.
	AfterCheckpoint uint64
}

// SinkTask is a connector's open sink.
//
// Ordering: Write may be called concurrently (one goroutine per source
// task). Every Write of checkpoint N returns before Flush(N) is called;
// Writes of N+1 may arrive before Flush(N), and a writer that sees them
// must close its files of N first. Flush calls come in checkpoint order.
// Commit(N) comes after Flush(N), possibly while Writes and the Flush of
// later checkpoints run (pipelining), and Commit calls come in checkpoint
// order, never concurrently.
type SinkTask interface {
	// Write hands one batch to the writers: record i goes to writer
	// writers[i] (writer 0 for all when writers is empty). It may block
	// while writers are busy: that is backpressure. Records the sink
	// cannot write go back as rejected, with the reason; an error fails
	// the connector's tasks.
	Write(ctx context.Context, req WriteRequest) ([]Rejected, error)
	// Flush closes every writer's files of a checkpoint and returns their
	// description (phase 1). It registers nothing: a crash after Flush
	// leaves orphan files, never visible rows.
	Flush(ctx context.Context, checkpoint uint64) ([]WriteResult, error)
	// Commit registers the files of a checkpoint in one commit per table
	// (phase 2), recording ranges so that recovery and fencing can use
	// them. results may come from writers of other processes.
	//
	// Commit is idempotent per checkpoint id. An error does not mean
	// nothing is visible: some tables may have committed before it (or
	// the process died, or the answer was lost), and the host retries
	// with the same request, maybe from another process. A retry after a
	// partial or unknown outcome commits only what is missing: a table
	// that already holds the checkpoint (the iceberg sink reads its
	// snapshot summary) is skipped, never committed twice. The
	// sdktest.SinkKit check commit_retry holds sinks to this.
	Commit(ctx context.Context, req CommitRequest) ([]TableCommit, error)
	// Close releases everything. Uncommitted files are left as orphans.
	// It runs only once no other call of the task is running: the SDK
	// cancels the ctx of calls still in flight (the host may have given up
	// on them) and waits for them to return. No other call follows.
	Close(ctx context.Context) error
}

// SinkTaskWithFrontier is implemented by sinks that store source positions
// with their data (floe's exactly-once mode). The host resumes sources from
// the frontier and never from anywhere else, and numbers checkpoints on
// from the frontier's Checkpoint.
//
// Such a sink fences what it commits: a Commit whose ranges do not
// continue the frontier, or whose checkpoint id is not above the newest
// it committed for the connector (a superseded committer's, which may
// resume after its successor committed), fails and commits nothing; a
// retry of a checkpoint the sink holds is no such commit (see Commit).
// The sdktest.SinkKit check superseded_committer holds sinks to the id.
type SinkTaskWithFrontier interface {
	// Frontier returns, per source partition, the position after the last
	// record the sink holds, and the last committed checkpoint id.
	Frontier(ctx context.Context) (Frontier, error)
}

// SinkTaskWithSchemas is implemented by sinks that must prepare for a new
// value schema (create or evolve tables) before rows of it arrive.
type SinkTaskWithSchemas interface {
	// PrepareSchema readies the sink for rows of s. It returns the changes
	// it made, for logs, or an error wrapping [ErrSchemaRejected] with a
	// reason naming the field and both types.
	PrepareSchema(ctx context.Context, s Schema) ([]string, error)
}

// SinkTaskWithSkips is implemented by sinks that drop some records on
// purpose, neither writing nor rejecting them (the iceberg sink's records
// that reach no table, with iceberg.tables.unrouted=skip). The host counts
// them in the connector's status and in floe_records_skipped_total, so
// that dropping is never silent.
type SinkTaskWithSkips interface {
	// Skipped is called once after each Flush(checkpoint) that succeeded,
	// never concurrently with another Skipped. It returns how many
	// records of the Writes of checkpoint, and of earlier checkpoints not
	// yet counted, the sink dropped; each dropped record is counted once.
	Skipped(checkpoint uint64) int64
}

// Frontier is what a sink holds of each source partition.
type Frontier struct {
	Positions  map[string]int64
	Checkpoint uint64
}

// WriteRequest is one batch for the writers.
type WriteRequest struct {
	Checkpoint uint64
	Batch      Batch
	// Writers holds one writer index per record, or nothing (writer 0).
	Writers []uint32
}

// Rejected is a record the sink could not write.
type Rejected struct {
	Offset int64
	Reason string
}

// WriteResult describes what one writer wrote for a checkpoint. Payload is
// opaque to the host and is handed back to Commit unchanged.
type WriteResult struct {
	Payload []byte
	Writer  int
	Records int64
	Bytes   int64
	Files   int
	// Checkpoint is the checkpoint the writer flushed. The host sets it
	// on the results it hands to Commit: in a cluster one commit carries
	// the flushed checkpoints of several workers, each with its own id
	// (and writer indexes that repeat across workers). 0 means the
	// CommitRequest's Checkpoint. A sink ignores it in Flush's answer.
	Checkpoint uint64
}

// Range is what a checkpoint covers of one source partition.
type Range struct {
	Partition string
	From      int64
	Next      int64
}

// CommitRequest is one checkpoint's phase 2.
type CommitRequest struct {
	Checkpoint uint64
	Ranges     []Range
	Results    []WriteResult
}

// TableCommit reports one table's commit of a checkpoint.
type TableCommit struct {
	Table      string
	SnapshotID int64
	Records    int64
	Files      int
	Attempts   int
}
