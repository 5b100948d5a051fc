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
	// batch, in record order. The batch is only valid during the call.
	Partition(ctx context.Context, batch Batch) ([]uint32, error)
	// Close releases the task. It runs only once no Partition is running:
	// the SDK cancels the ctx of calls still in flight and waits for them
	// to return. No other call follows.
	Close(ctx context.Context) error
}

// PartitionerWithLoad is an optional extension: a partitioner that tracks
// per-writer load reports it, for status and metrics (1.0 = even share).
type PartitionerWithLoad interface {
	Load() []float64
}
