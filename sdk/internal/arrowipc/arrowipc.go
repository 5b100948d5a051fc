// Package arrowipc encodes the Arrow data that crosses the plugin protocol:
// a batch is an Arrow IPC stream holding a schema message and one record
// batch; a schema is an IPC stream holding only the schema message. Both
// sides of the protocol use it, so the encoding lives in one place.
package arrowipc

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// EncodeRecordBatch writes rec as an IPC stream: its schema, the batch, and
// the end-of-stream marker. A sliced record is written with only its rows.
func EncodeRecordBatch(rec arrow.RecordBatch) ([]byte, error) {
	var e Encoder
	return e.Encode(rec)
}

// Encoder encodes as EncodeRecordBatch does into one buffer it keeps, so
// a caller that copies each encoding elsewhere at once (into a shared
// memory file) allocates and zeroes no new buffer per batch: what Encode
// returns is valid until its next call.
type Encoder struct {
	buf bytes.Buffer
}

// Encode encodes rec into the encoder's buffer.
func (e *Encoder) Encode(rec arrow.RecordBatch) ([]byte, error) {
	e.buf.Reset()
	e.buf.Grow(estimateSize(rec))
	w := ipc.NewWriter(&e.buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("arrowipc: encode record batch: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("arrowipc: encode record batch: %w", err)
	}
	return e.buf.Bytes(), nil
}

// DecodeRecordBatch reads the one record batch of an IPC stream. The caller
// releases the result.
//
// The result's buffers are b's bytes, not a copy (b is a whole batch
// received over gRPC, so copying it again only costs CPU and garbage):
// b must not change while the record lives. mem allocates only what
// cannot be shared (decompressed buffers, an empty batch).
func DecodeRecordBatch(b []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(b) == 0 {
		return nil, errors.New("arrowipc: empty record batch stream")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	r, err := ipc.NewReaderFromMessageReader(newBytesMessageReader(b), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("arrowipc: decode record batch: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("arrowipc: decode record batch: %w", err)
		}
		// A stream with a schema and no batch is an empty batch.
		return emptyRecordBatch(r.Schema(), mem), nil
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, nil
}

// EncodeSchema writes s as an IPC stream with no batches.
func EncodeSchema(s *arrow.Schema) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("arrowipc: encode schema: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeSchema reads a schema written by EncodeSchema (or the schema of any
// IPC stream). Empty input is a nil schema.
func DecodeSchema(b []byte) (*arrow.Schema, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("arrowipc: decode schema: %w", err)
	}
	defer r.Release()
	return r.Schema(), nil
}

func emptyRecordBatch(s *arrow.Schema, mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	return b.NewRecordBatch()
}

// estimateSize guesses the encoded size from the buffers the record's
// columns reference, so the output buffer grows once.
func estimateSize(rec arrow.RecordBatch) int {
	n := 1024
	for _, col := range rec.Columns() {
		n += dataSize(col.Data())
	}
	return n
}

func dataSize(d arrow.ArrayData) int {
	n := 64
	for _, b := range d.Buffers() {
		if b != nil {
			n += b.Len()
		}
	}
	for _, c := range d.Children() {
		n += dataSize(c)
	}
	return n
}

// Project returns the record batch of the IPC stream b with only the
// columns named in names, in b's column order, as a new IPC stream, and
// the batch's row count. Names b lacks are left out; when none is in b,
// the stream is nil (a batch of rows without columns has no IPC form
// worth sending). Only the kept columns are copied: the others are never
// read, since the batch is decoded in place (see DecodeRecordBatch). When
// every column is kept, b itself is returned.
func Project(b []byte, names []string) ([]byte, int64, error) {
	rec, err := DecodeRecordBatch(b, nil)
	if err != nil {
		return nil, 0, err
	}
	defer rec.Release()
	rows := rec.NumRows()
	sc := rec.Schema()
	var keep []int
	for i, f := range sc.Fields() {
		for _, n := range names {
			if f.Name == n {
				keep = append(keep, i)
				break
			}
		}
	}
	switch len(keep) {
	case 0:
		return nil, rows, nil
	case sc.NumFields():
		return b, rows, nil
	}
	fields := make([]arrow.Field, len(keep))
	cols := make([]arrow.Array, len(keep))
	for j, i := range keep {
		fields[j], cols[j] = sc.Field(i), rec.Column(i)
	}
	md := sc.Metadata()
	proj := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rows)
	defer proj.Release()
	out, err := EncodeRecordBatch(proj)
	if err != nil {
		return nil, 0, fmt.Errorf("arrowipc: project to %v: %w", names, err)
	}
	return out, rows, nil
}
