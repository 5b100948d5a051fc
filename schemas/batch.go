package schemas

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BadRecord reports a payload DecodeBatch left out: its index in the input
// and why (a *DecodeError).
type BadRecord struct {
	Index int
	Err   error
}

// DecodeBatch decodes payloads (Avro binary, without the Confluent header)
// into one record batch of the value columns (d.Schema()), in input order,
// leaving out the payloads that fail to decode and reporting them in the
// returned BadRecords. The error is non-nil only for failures that are not
// the payloads' fault; the batch is then nil. The caller releases the
// batch. mem may be nil for the default allocator.
//
// Bad payloads cost a re-decode of the good rows since the previous bad
// payload (at most one extra decode per good row in total).
func (d *Decoder) DecodeBatch(mem memory.Allocator, payloads [][]byte) (arrow.RecordBatch, []BadRecord, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	schema := d.prog.schema
	bldr := array.NewRecordBuilder(mem, schema)
	defer func() { bldr.Release() }()

	var (
		bad    []BadRecord
		chunks []arrow.RecordBatch
		start  int // first payload of the current chunk
	)
	defer func() {
		for _, c := range chunks {
			c.Release()
		}
	}()
	for i, p := range payloads {
		err := d.Append(bldr.Fields(), p)
		if err == nil {
			continue
		}
		bad = append(bad, BadRecord{Index: i, Err: err})
		// The builders are uneven now: start over and redo this chunk's good rows.
		bldr.Release()
		bldr = array.NewRecordBuilder(mem, schema)
		if i > start {
			for j := start; j < i; j++ {
				if err := d.Append(bldr.Fields(), payloads[j]); err != nil {
					return nil, nil, fmt.Errorf("avro decode: payload %d decoded once and then failed: %w", j, err)
				}
			}
			chunks = append(chunks, bldr.NewRecordBatch())
		}
		start = i + 1
	}
	last := bldr.NewRecordBatch()
	if len(chunks) == 0 {
		return last, bad, nil
	}
	chunks = append(chunks, last)
	out, err := ConcatBatches(mem, schema, chunks)
	if err != nil {
		return nil, nil, err
	}
	return out, bad, nil
}

// ConcatBatches copies batches of one schema into one batch.
func ConcatBatches(mem memory.Allocator, schema *arrow.Schema, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	parts := make([]arrow.Array, len(batches))
	for i := range cols {
		for j, b := range batches {
			parts[j] = b.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, fmt.Errorf("concatenate column %s: %w", schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}
