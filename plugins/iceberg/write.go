package iceberg

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/floehq/floe/sdk"
)

// Write routes a batch's rows to tables and writers and hands the pieces
// to the writers' queues, blocking while a queue is full (backpressure).
// The batch stays the caller's: the pieces hold their own references, so
// the common case (one writer, every row to each table) copies nothing.
// Rows of records that reach no table are skipped and counted
// (iceberg.tables.unrouted=skip) or come back as rejected.
func (t *task) Write(ctx context.Context, req sdk.WriteRequest) ([]sdk.Rejected, error) {
	if err := t.writeAllowed(req.Checkpoint); err != nil {
		return nil, err
	}
	for _, w := range t.writers {
		if err := w.failed(); err != nil {
			return nil, err
		}
	}
	rec := req.Batch.Records
	if rec == nil || rec.NumRows() == 0 {
		return nil, nil
	}
	n := int(rec.NumRows())
	if len(req.Writers) != 0 && len(req.Writers) != n {
		return nil, fmt.Errorf("iceberg sink: batch of %s has %d rows but %d writer indexes", req.Batch.Partition, n, len(req.Writers))
	}
	for _, w := range req.Writers {
		if int(w) >= len(t.writers) {
			return nil, fmt.Errorf("iceberg sink: writer index %d out of range: the sink has %d writers", w, len(t.writers))
		}
	}

	r, err := t.route(ctx, req.Batch)
	if err != nil {
		return nil, err
	}
	t.unrouted.add(req.Checkpoint, r.skipped, r.example)
	items, err := t.split(ctx, req, r)
	if err != nil {
		return nil, err
	}

	t.closeMu.RLock()
	defer t.closeMu.RUnlock()
	for i, it := range items {
		if err := t.writers[it.writer].enqueue(ctx, it.item); err != nil {
			for _, rest := range items[i:] {
				rest.item.rec.Release()
			}
			return nil, err
		}
	}
	return r.rejected, nil
}

// writeAllowed refuses writes after Close and writes of a checkpoint that
// was already flushed (they would never be committed).
func (t *task) writeAllowed(checkpoint uint64) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return errClosed
	}
	if t.anyFlush && checkpoint <= t.flushed {
		return fmt.Errorf("iceberg sink: write for checkpoint %d after checkpoint %d was flushed", checkpoint, t.flushed)
	}
	return nil
}

type routedItem struct {
	writer int
	item   writeItem
}

// itemRows bounds the rows of one writer's item. Batches of up to 5,000
// rows (the kafka source's default) go whole to one writer or in halves to
// two; bigger ones (datagen's 20,000) are cut so that each copy and each
// Parquet write works on a few megabytes at most.
const itemRows = 5000

// chunks cuts n rows into the fewest runs of at most itemRows, of equal
// length give or take one (a short remainder would be gathered again,
// see coalesceRows).
func chunks(n int) iter.Seq2[int, int] {
	return func(yield func(lo, hi int) bool) {
		k := (n + itemRows - 1) / itemRows
		for i := range k {
			if !yield(i*n/k, (i+1)*n/k) {
				return
			}
		}
	}
}

// split cuts the routed rows into sub-batches per writer and table, each
// of at most itemRows rows.
func (t *task) split(ctx context.Context, req sdk.WriteRequest, r routed) ([]routedItem, error) {
	rec := req.Batch.Records
	var out []routedItem
	add := func(w int, st *tableState, sub arrow.RecordBatch) {
		out = append(out, routedItem{writer: w, item: writeItem{checkpoint: req.Checkpoint, table: st,
			partition: req.Batch.Partition, schemaID: req.Batch.SchemaID, rec: sub}})
	}
	addRows := func(w int, st *tableState, rows []int32) error {
		for lo, hi := range chunks(len(rows)) {
			sub, err := take(ctx, rec, rows[lo:hi])
			if err != nil {
				return err
			}
			add(w, st, sub)
		}
		return nil
	}
	fail := func(err error) ([]routedItem, error) {
		for _, it := range out {
			it.item.rec.Release()
		}
		return nil, err
	}

	single, w0 := singleWriter(req.Writers)
	n := int(rec.NumRows())
	for i, st := range r.tables {
		rows := r.rows[i]
		if single {
			if rows == nil {
				for lo, hi := range chunks(n) {
					if hi-lo == n {
						rec.Retain()
						add(w0, st, rec)
						continue
					}
					add(w0, st, rec.NewSlice(int64(lo), int64(hi)))
				}
				continue
			}
			if err := addRows(w0, st, rows); err != nil {
				return fail(err)
			}
			continue
		}
		perWriter := make([][]int32, len(t.writers))
		if rows == nil {
			for row, w := range req.Writers {
				perWriter[w] = append(perWriter[w], int32(row))
			}
		} else {
			for _, row := range rows {
				w := req.Writers[row]
				perWriter[w] = append(perWriter[w], row)
			}
		}
		for w, idx := range perWriter {
			if err := addRows(w, st, idx); err != nil {
				return fail(err)
			}
		}
	}
	return out, nil
}

// sequential makes compute take columns one after the other: Writes run
// concurrently already (one per source task), and a goroutine per column
// costs more than it saves on batches of thousands of rows.
func sequential(ctx context.Context) context.Context {
	ec := compute.DefaultExecCtx()
	ec.NumParallel = 1
	return compute.SetExecCtx(ctx, ec)
}

// singleWriter reports whether every record goes to one writer, and which.
func singleWriter(writers []uint32) (bool, int) {
	if len(writers) == 0 {
		return true, 0
	}
	w := writers[0]
	for _, x := range writers[1:] {
		if x != w {
			return false, 0
		}
	}
	return true, int(w)
}
