package kafka

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/schemas"
)

// batchBuilder decodes one batch's records of one value schema into its
// Arrow columns: the value columns straight from Avro, then __offset,
// __timestamp, __key and __headers.
//
// schemas.Decoder.Append leaves the builders uneven when a payload fails,
// so after a failure the builder is thrown away, the good records appended
// since the last failure are decoded again into a fresh one and kept as a
// finished chunk, and the batch is the chunks concatenated. Each good
// record is decoded at most twice whatever the number of bad ones.
type batchBuilder struct {
	mem memory.Allocator
	vs  *valueSchema
	// pending holds the records appended to the current builder since
	// the last chunk, with their keys, to redo after a failure.
	pending []pendingRow
	chunks  []arrow.RecordBatch
	meta    metaBuilders
}

type pendingRow struct {
	rec *record
	key []byte
}

// metaBuilders are the metadata column builders of the current builder.
type metaBuilders struct {
	offset    *array.Int64Builder
	timestamp *array.TimestampBuilder
	key       *array.BinaryBuilder
	headers   *array.MapBuilder
	hkey      *array.StringBuilder
	hval      *array.BinaryBuilder
}

// start readies the builder for up to len(recs) records of vs.
func (bb *batchBuilder) start(mem memory.Allocator, vs *valueSchema, recs []record) {
	bb.mem, bb.vs = mem, vs
	bb.pending = bb.pending[:0]
	vs.builder.Reserve(len(recs))
	var payload int
	for i := range recs {
		payload += len(recs[i].key) + len(recs[i].value)
	}
	reserveData(vs, len(recs), payload)
	bb.bind()
}

// varData is a builder of variable-length values (binary, string).
type varData interface {
	DataLen() int
	ReserveData(int)
}

// reserveData reserves the data buffers of vs's binary and string columns
// for n rows as large as the last batch's, and a tenth more, in all at
// most payload bytes (the rows' keys and values, which hold every byte
// the columns can get: a batch of a few huge records does not make the
// next one reserve as much for each of its rows). Grown by doubling
// instead, every batch allocated and copied each buffer a dozen times
// over: under a memory budget's heap limit that garbage cost the task
// half its CPU in collection (BenchmarkConsume/task at a 60 MB share: 6.5
// CPU-µs per record).
func reserveData(vs *valueSchema, n, payload int) {
	var perRow float64
	for _, b := range vs.dataPerRow {
		perRow += b
	}
	if perRow == 0 {
		return
	}
	total := min(perRow*float64(n)*1.1, float64(payload))
	for i, f := range vs.builder.Fields() {
		if d, ok := f.(varData); ok && i < len(vs.dataPerRow) && vs.dataPerRow[i] > 0 {
			d.ReserveData(int(total * vs.dataPerRow[i] / perRow))
		}
	}
}

// noteData records the bytes per row of vs's binary and string columns,
// before the builder hands its buffers on.
func noteData(vs *valueSchema) {
	fields := vs.builder.Fields()
	if len(fields) == 0 || fields[0].Len() == 0 {
		return
	}
	rows := float64(fields[0].Len())
	if len(vs.dataPerRow) != len(fields) {
		vs.dataPerRow = make([]float64, len(fields))
	}
	for i, f := range fields {
		if d, ok := f.(varData); ok {
			vs.dataPerRow[i] = float64(d.DataLen()) / rows
		}
	}
}

func (bb *batchBuilder) bind() {
	cols := bb.vs.builder.Fields()
	n := bb.vs.value.NumFields()
	bb.meta.offset = cols[n].(*array.Int64Builder)
	bb.meta.timestamp = cols[n+1].(*array.TimestampBuilder)
	bb.meta.key = cols[n+2].(*array.BinaryBuilder)
	bb.meta.headers = cols[n+3].(*array.MapBuilder)
	bb.meta.hkey = bb.meta.headers.KeyBuilder().(*array.StringBuilder)
	bb.meta.hval = bb.meta.headers.ItemBuilder().(*array.BinaryBuilder)
}

// add decodes r into a new row. On a decode error (a *schemas.DecodeError)
// the row is left out and the builder is rebuilt without it; an error
// while rebuilding is returned wrapped in errRebuild.
func (bb *batchBuilder) add(r *record, key []byte) error {
	if err := bb.appendRow(r, key); err != nil {
		if rerr := bb.rebuild(); rerr != nil {
			return rerr
		}
		return err
	}
	bb.pending = append(bb.pending, pendingRow{r, key})
	return nil
}

// appendRow appends one row: the value columns, then the metadata.
func (bb *batchBuilder) appendRow(r *record, key []byte) error {
	if err := bb.vs.dec.Append(bb.vs.builder.Fields(), r.value[schemas.ConfluentHeaderLen:]); err != nil {
		return err
	}
	m := &bb.meta
	m.offset.Append(r.offset)
	if r.tsMs < 0 {
		m.timestamp.AppendNull()
	} else {
		m.timestamp.Append(arrow.Timestamp(r.tsMs))
	}
	if key == nil {
		m.key.AppendNull()
	} else {
		m.key.Append(key)
	}
	if len(r.headers) == 0 {
		m.headers.AppendNull()
	} else {
		m.headers.Append(true)
		for _, h := range r.headers {
			m.hkey.Append(h.Key)
			if h.Value == nil {
				m.hval.AppendNull()
			} else {
				m.hval.Append(h.Value)
			}
		}
	}
	return nil
}

// rebuild replaces the uneven builder with a fresh one holding the
// pending rows, and finishes it as a chunk.
func (bb *batchBuilder) rebuild() error {
	bb.vs.builder.Release()
	bb.vs.builder = array.NewRecordBuilder(bb.mem, bb.vs.batch)
	bb.bind()
	if len(bb.pending) == 0 {
		return nil
	}
	bb.vs.builder.Reserve(len(bb.pending))
	for _, p := range bb.pending {
		if err := bb.appendRow(p.rec, p.key); err != nil {
			return &errRebuild{offset: p.rec.offset, err: err}
		}
	}
	bb.chunks = append(bb.chunks, bb.vs.builder.NewRecordBatch())
	bb.pending = bb.pending[:0]
	return nil
}

// errRebuild: a payload decoded once and failed the second time, which
// means the decoder is not deterministic; the task fails.
type errRebuild struct {
	offset int64
	err    error
}

func (e *errRebuild) Error() string {
	return fmt.Sprintf("offset %d decoded once and then failed when the batch was rebuilt after a bad record: %v", e.offset, e.err)
}

func (e *errRebuild) Unwrap() error { return e.err }

// finish returns the batch's rows (nil when it has none) and readies the
// builder for the next batch. The caller owns the result.
func (bb *batchBuilder) finish() (arrow.RecordBatch, error) {
	noteData(bb.vs)
	last := bb.vs.builder.NewRecordBatch()
	chunks := bb.chunks
	bb.chunks, bb.pending = nil, bb.pending[:0]
	if len(chunks) == 0 {
		if last.NumRows() == 0 {
			last.Release()
			return nil, nil
		}
		return last, nil
	}
	if last.NumRows() > 0 {
		chunks = append(chunks, last)
	} else {
		last.Release()
	}
	defer func() {
		for _, c := range chunks {
			c.Release()
		}
	}()
	if len(chunks) == 1 {
		chunks[0].Retain()
		return chunks[0], nil
	}
	return schemas.ConcatBatches(bb.mem, bb.vs.batch, chunks)
}

// discard drops whatever the builder holds.
func (bb *batchBuilder) discard() {
	if bb.vs == nil {
		return
	}
	rec, _ := bb.finish()
	if rec != nil {
		rec.Release()
	}
}
