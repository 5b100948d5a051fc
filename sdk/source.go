package sdk

import (
	"context"
	"log/slog"
)

// Source reads records from an external system. It is opened once per task.
type Source interface {
	// Open starts one task. Tasks of one connector run in one process and
	// may be opened concurrently. ctx ends when Open returns; keep nothing
	// from it. An error fails the task with that message.
	Open(ctx context.Context, req SourceOpenRequest) (SourceTask, error)
}

// SourceOpenRequest carries what a source task needs.
type SourceOpenRequest struct {
	Connector string
	// Task is this task's index in [0, Tasks).
	Task  int
	Tasks int
	// Config holds the keys the component's spec declares, with defaults
	// applied (see [Config]).
	Config Config
	// Host answers the task's questions to floe (start positions, schema
	// admission, dead letters). It stays valid until Close returns.
	Host   SourceHost
	Logger *slog.Logger
}

// SourceTask is one running source task. Its Read, Commit and Close are
// never called concurrently for the same task: the SDK runs them one at a
// time, even when the host gave up on a call that still runs.
type SourceTask interface {
	// Read returns the next batches, at most max of them, waiting until
	// some are ready or ctx ends (then it returns no batches and no error).
	// The host calls Read only when it has room downstream, so a source
	// must buffer a bounded amount and pause its input when the buffer is
	// full. Returning [ErrEndOfInput] (with or without final batches in
	// the same call it is not allowed: return them first) ends the task's
	// input. Any other error fails the task.
	Read(ctx context.Context, max int) ([]Batch, error)
	// Commit tells the task that every position up to positions[p] is
	// durable in the sink, after a checkpoint commit. Sources may record
	// them for monitoring (a Kafka consumer group commit); floe's truth is
	// the sink. An error is logged, not fatal.
	Commit(ctx context.Context, positions map[string]int64) error
	// Close releases the task. It runs only once no Read or Commit of the
	// task is running: the SDK cancels the ctx of a call still in flight
	// (the host may have given up on it) and waits for it to return, so
	// methods must return when their ctx ends. No other call follows.
	Close(ctx context.Context) error
}

// SourceHost is floe's side of a source task. Calls may block while the
// host checkpoints; they are safe from any goroutine.
type SourceHost interface {
	// StartPositions returns where each partition resumes: the position
	// after the last record the sink holds. Partitions absent from the
	// answer have none; the source then picks its own start (a consumer
	// group's offset, then earliest or latest).
	StartPositions(ctx context.Context, partitions []string) (map[string]int64, error)
	// PartitionsRevoked tells the host the task gives partitions up (a
	// rebalance), with the Next of the last batch handed on for each.
	// The host checkpoints before it returns; buffered batches of those
	// partitions that were not handed on must be dropped by the source.
	PartitionsRevoked(ctx context.Context, next map[string]int64) error
	// AdmitSchema asks whether rows of a schema can be written, before the
	// source hands on any batch of it. A rejection wraps
	// [ErrSchemaRejected]; the source then dead-letters those records.
	AdmitSchema(ctx context.Context, s Schema) error
	// DeadLetter reports records the source could not read or convert.
	// It returns nil when they were stored in the dead-letter queue, and an
	// error when errors.tolerance is none: the task must then fail with it.
	DeadLetter(ctx context.Context, records []DeadLetter) error
}

// DeadLetter is a record that cannot be written, with the reason.
type DeadLetter struct {
	Partition string
	Offset    int64
	// TimestampMs is the record's timestamp in Unix milliseconds.
	TimestampMs int64
	// Key and Value are nil for a null key or value; an empty one is a
	// non-nil empty slice, and reaches the dead-letter queue as empty.
	Key   []byte
	Value []byte
	// HeaderList is the record's headers as Kafka holds them: in order,
	// repeated names kept, a nil Value for a null header. When set it is
	// used and Headers is ignored.
	HeaderList []Header
	// Headers is the older form, one value per name in no order; sources
	// written before HeaderList set it.
	Headers map[string][]byte
	// Stage names where it failed: "deserialize", "convert", "schema".
	Stage  string
	Reason string
}

// Header is one record header. A nil Value is a null header.
type Header struct {
	Key   string
	Value []byte
}
