package sdk

import (
	"context"
	"log/slog"
)

// Partitioner picks a writer for every record. A connector opens it once.
type Partitioner interface {
	// Open prepares the connector's partitioner for req.Writers writers.
	Open(ctx context.Context, req PartitionerOpenRequest) (PartitionerTask, error)
}

// PartitionerOpenRequest carries what a partitioner needs.
type PartitionerOpenRequest struct {
	Connector string
	// Config holds the keys the component's spec declares, with defaults
	// applied (see [Config]); a partitioner that reads the sink's
	// partition spec declares those keys too.
	Config  Config
	Writers int
	Logger  *slog.Logger
}

// PartitionerTask assigns records to writers. Partition is called from
// several goroutines at once (one per source task); it must be safe for
// concurrent use.
type PartitionerTask interface {
	// Partition returns one writer index in [0, Writers) per record of
	// batch, in record order. The batch is only valid during the call. A
	// task implementing [PartitionerWithColumns] sees only its columns.
	Partition(ctx context.Context, batch Batch) ([]uint32, error)
	// Close releases the task. It runs only once no Partition is running:
	// the SDK cancels the ctx of calls still in flight and waits for them
	// to return. No other call follows.
	Close(ctx context.Context) error
}

// PartitionerWithColumns is an optional extension: a partitioner that
// reads only some columns names them, and the host sends it only those.
// Most of a batch's bytes are values a partitioner never looks at; a
// hash partitioner reads its key columns, a round-robin one none.
//
// Columns is called once, right after Open; the list holds for the task's
// life. Each name is a top-level column of the batches (a value column or
// a metadata column such as [ColumnKey]); for a nested path declare its
// top-level column. Partition then receives every row of each batch but
// only the declared columns the batch has, in the batch's column order: a
// declared column a batch lacks is simply not there, and an empty list
// gives batches of rows without columns. A partitioner that does not
// implement it receives whole batches.
type PartitionerWithColumns interface {
	Columns() []string
}

// PartitionerWithLoad is an optional extension: a partitioner that tracks
// per-writer load reports it, for status and metrics (1.0 = even share).
type PartitionerWithLoad interface {
	Load() []float64
}
