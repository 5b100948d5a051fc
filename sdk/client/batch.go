package client

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk/internal/arrowipc"
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
	// the batch carries no rows (every record in [From, Next) was skipped).
	IPC []byte
}

// Decode reads the record batch; the caller releases it. A nil mem uses
// Go's allocator. A batch without rows is an error.
func (b Batch) Decode(mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(b.IPC) == 0 {
		return nil, fmt.Errorf("batch of partition %s [%d, %d) carries no rows (%d skipped)", b.Partition, b.From, b.Next, b.Skipped)
	}
	rec, err := arrowipc.DecodeRecordBatch(b.IPC, mem)
	if err != nil {
		return nil, fmt.Errorf("batch of partition %s [%d, %d): %w", b.Partition, b.From, b.Next, err)
	}
	return rec, nil
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
