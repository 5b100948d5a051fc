package client

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk/internal/arrowipc"
	"github.com/floehq/floe/sdk/internal/shm"
)

// Batch is a batch in wire form.
type Batch struct {
	Partition  string
	From       int64
	Next       int64
	SchemaID   int64
	NumRecords int64
	Skipped    int64
	// IPC is an Arrow IPC stream holding one record batch. It is empty when
	// the batch carries no rows (every record in [From, Next) was skipped),
	// and when the stream is in shared memory instead (see Shared).
	IPC []byte

	// shared holds the stream when the source sent it in a sealed memory
	// file: this process's own descriptor of it, until Release.
	shared *shm.File
}

// Shared reports whether the batch's stream is in shared memory (a source
// with shared memory sent it so): it then costs this process no copy, and
// Release frees it.
func (b Batch) Shared() bool { return b.shared != nil }

// Size is the length of the batch's IPC stream, wherever it is.
func (b Batch) Size() int64 {
	if b.shared != nil {
		return b.shared.Size()
	}
	return int64(len(b.IPC))
}

// HasRows reports whether the batch carries any rows.
func (b Batch) HasRows() bool { return b.Size() > 0 }

// Release frees the shared memory of a batch that is done with: written,
// dropped, or replaced. It does nothing for other batches, and may be
// called more than once, on any copy of the batch. A batch not released
// is freed by the garbage collector eventually.
func (b Batch) Release() {
	if b.shared != nil {
		_ = b.shared.Close()
	}
}

// Decode reads the record batch; the caller releases it. A nil mem uses
// Go's allocator. A batch without rows is an error.
func (b Batch) Decode(mem memory.Allocator) (arrow.RecordBatch, error) {
	if !b.HasRows() {
		return nil, fmt.Errorf("batch of partition %s [%d, %d) carries no rows (%d skipped)", b.Partition, b.From, b.Next, b.Skipped)
	}
	data, err := b.bytes()
	if err != nil {
		return nil, err
	}
	rec, err := arrowipc.DecodeRecordBatch(data, mem)
	if err != nil {
		return nil, fmt.Errorf("batch of partition %s [%d, %d): %w", b.Partition, b.From, b.Next, err)
	}
	return rec, nil
}

// bytes returns the IPC stream as bytes of this process: IPC, or a copy of
// the shared memory.
func (b Batch) bytes() ([]byte, error) {
	if b.shared == nil {
		return b.IPC, nil
	}
	data, err := b.shared.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("batch of partition %s [%d, %d): %w", b.Partition, b.From, b.Next, err)
	}
	return data, nil
}

// mapped calls fn with the IPC stream, mapped read-only when it is in
// shared memory (so fn's reads touch only the pages they need); the bytes
// are valid only during fn.
func (b Batch) mapped(fn func([]byte) error) error {
	if b.shared == nil {
		return fn(b.IPC)
	}
	data, unmap, err := b.shared.Map()
	if err != nil {
		return fmt.Errorf("batch of partition %s [%d, %d): %w", b.Partition, b.From, b.Next, err)
	}
	defer unmap()
	return fn(data)
}

// EncodeBatch puts an Arrow record batch in wire form, for hosts and tests
// that make batches themselves. It does not release rec.
func EncodeBatch(partition string, from, next, schemaID int64, rec arrow.RecordBatch) (Batch, error) {
	b := Batch{Partition: partition, From: from, Next: next, SchemaID: schemaID}
	if rec == nil {
		return b, nil
	}
	ipc, err := arrowipc.EncodeRecordBatch(rec)
	if err != nil {
		return Batch{}, fmt.Errorf("batch of partition %s [%d, %d): %w", partition, from, next, err)
	}
	b.IPC, b.NumRecords = ipc, rec.NumRows()
	return b, nil
}

// Schema is a value schema in wire form.
type Schema struct {
	ID      int64
	Avro    string
	Subject string
	// ArrowIPC is an Arrow IPC schema message.
	ArrowIPC []byte
}

// Arrow decodes the Arrow schema (nil when the schema has none).
func (s Schema) Arrow() (*arrow.Schema, error) {
	as, err := arrowipc.DecodeSchema(s.ArrowIPC)
	if err != nil {
		return nil, fmt.Errorf("schema %d: %w", s.ID, err)
	}
	return as, nil
}

// EncodeSchema puts an Arrow schema in wire form.
func EncodeSchema(id int64, as *arrow.Schema) (Schema, error) {
	ipc, err := arrowipc.EncodeSchema(as)
	if err != nil {
		return Schema{}, fmt.Errorf("schema %d: %w", id, err)
	}
	return Schema{ID: id, ArrowIPC: ipc}, nil
}

// SharedMemorySupported reports whether batches can travel in shared
// memory on this system (Linux, with memfd).
func SharedMemorySupported() bool { return shm.Supported() }

// ShareBatch returns b with its IPC stream moved into a sealed memory
// file, as a source with shared memory sends it, for conformance kits and
// tests that make their own batches; Release frees it. A batch without
// rows is returned as is.
func ShareBatch(b Batch) (Batch, error) {
	if b.shared != nil || len(b.IPC) == 0 {
		return b, nil
	}
	f, err := shm.Create("floe-batch", b.IPC)
	if err != nil {
		return Batch{}, fmt.Errorf("batch of partition %s [%d, %d): %w", b.Partition, b.From, b.Next, err)
	}
	b.IPC, b.shared = nil, f
	return b, nil
}
