package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	_ "github.com/floehq/floe/lake/zstdpages" // zstd encoders that survive the collector
	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// queueDepth is how many sub-batches a writer's queue holds before Write
// blocks (backpressure).
const queueDepth = 8

// pipelineBuffer is how many batches a WriteRecords pipeline buffers:
// each one is held in memory until its Parquet writer has encoded it.
const pipelineBuffer = 2

// coalesceRows is how many rows a pipeline gathers before handing them to
// WriteRecords as one batch. A paced source sends batches of a few hundred
// rows, cut further per writer and per partition; iceberg-go's fan-out and
// Parquet writer pay per batch (a partition split with a goroutine per
// column, page bookkeeping), which at 1 s checkpoints cost more than the
// rows did. Gathering costs one copy of every row, which bulk batches
// (thousands of rows, halves of them when a hash partitioner spreads them
// over two writers) need not pay: BenchmarkEvents/sink/writers=2/budget,
// whose ~2,500-row halves pass untouched at 2,048 (2.03-2.13 CPU-µs per
// record), cost 2.24-2.27 gathered to 8,192 and 2.73-2.82 to 16,384; cut
// into slices of 1,024 or 512 rows instead, 2.30-2.56.
const coalesceRows = 2048

// rowGroupPart is the part of the process's memory share (see
// task.rowGroupBytes) the writers' row groups take together, counted in
// Arrow bytes. A Parquet writer holds a row group, encoded, until it has
// write.parquet.row-group-limit rows (a million by default), then writes
// it out; bounding its rows bounds that memory and keeps files at their
// target size. Encoded rows are smaller than Arrow's, so the row groups
// take less than this part; the rest of the share holds the writers'
// queues, the batches being split, Parquet's page buffers and Go's
// garbage collector's slack. At half the share the live heap (143 MB
// at the median, up to 213) left the collector little of the 206 MB
// limit to allocate into: 40 % more collections for the same rows than
// at a fifth (live 75 MB). BenchmarkEvents/sink/writers=2/budget cost
// 2.57-2.74 CPU-µs per record at 0.5 and 0.3, 2.20-2.38 at 0.25 down to
// 0.1 (93,049 rows per group of the bench's events at the default
// budget; files the same bytes per record).
const rowGroupPart = 0.2

// minRowGroupRows is the least row-group limit the budget sets: fewer rows
// per group cost more in Parquet metadata and encoding than they save.
const minRowGroupRows = 16 << 10

// writeItem is one entry of a writer's queue: a sub-batch for one table,
// or a flush marker.
type writeItem struct {
	checkpoint uint64
	table      *tableState
	partition  string
	schemaID   int64
	rec        arrow.RecordBatch // owned by the item
	flush      chan<- flushReply // set for a flush marker of checkpoint
}

type flushReply struct {
	result sdk.WriteResult
	ok     bool // false: the writer wrote nothing for the checkpoint
	err    error
}

// writer is one of the sink's writers: a goroutine that takes sub-batches
// from its queue, in order, and feeds them to per-checkpoint, per-table
// WriteRecords pipelines.
type writer struct {
	id    int
	t     *task
	queue chan writeItem
	done  chan struct{}

	// Owned by the writer goroutine.
	plans map[int64]*rowPlan // by schema id
	open  map[uint64]*checkpointWrite
	// loggedRows: the row-group limit the memory budget set was logged at
	// info once.
	loggedRows bool

	mu  sync.Mutex
	err error // sticky: the first failure fails every later Write and Flush
	// inflight tracks closing checkpoints, so Close can wait for them.
	inflight sync.WaitGroup
}

func newWriter(t *task, id int) *writer {
	w := &writer{
		id:    id,
		t:     t,
		queue: make(chan writeItem, queueDepth),
		done:  make(chan struct{}),
		plans: map[int64]*rowPlan{},
		open:  map[uint64]*checkpointWrite{},
	}
	go w.run()
	return w
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *writer) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.err = fmt.Errorf("iceberg sink: writer %d: %w", w.id, err)
	// A failed upload comes back joined with the cancellation of the
	// writer's other uploads, which unavailable alone would take for a
	// shutdown.
	if unavailable(err) || unavailableText(err) {
		// The object store is down: the host reopens the sink, whose Open
		// waits for the store, and rewrites from the table's frontier.
		w.err = sdk.Transient(w.err)
		w.t.waits.failed(w.t.connector, w.t.services.Store, err)
		w.t.log.Warn("writer failed: the object store is unreachable", "writer", w.id, "error", err)
		return
	}
	w.t.log.Error("writer failed", "writer", w.id, "error", err)
}

// enqueue hands an item to the writer, waiting while its queue is full.
func (w *writer) enqueue(ctx context.Context, it writeItem) error {
	select {
	case w.queue <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.t.life.Done():
		return errClosed
	}
}

func (w *writer) run() {
	defer close(w.done)
	for it := range w.queue {
		if it.flush != nil {
			w.flush(it.checkpoint, it.flush)
			continue
		}
		if w.failed() != nil {
			it.rec.Release()
			continue
		}
		if err := w.write(it); err != nil {
			w.fail(err)
		}
	}
	// The queue closed (Close): abandon what is open.
	for _, cw := range w.open {
		cw.close()
		cw.abandon()
	}
	w.inflight.Wait()
}

// write feeds one sub-batch to its table's pipeline for the checkpoint.
// The first data of a checkpoint closes the files of every earlier one.
func (w *writer) write(it writeItem) error {
	defer it.rec.Release()
	for c, cw := range w.open {
		if c < it.checkpoint {
			cw.close()
		}
	}
	view := it.table.view()
	plan, err := w.plan(it)
	if err != nil {
		return fmt.Errorf("table %s: %w", it.table.name, err)
	}

	// Drop what the table already holds (a replay after a restart).
	// Offsets rise within a batch, so that is a prefix.
	offsets := it.rec.Column(plan.offset).(*array.Int64)
	n := offsets.Len()
	from := 0
	floor, hasFloor := view.floor[it.partition]
	if hasFloor {
		from = sort.Search(n, func(i int) bool { return offsets.Value(i) >= floor })
	}
	cw := w.open[it.checkpoint]
	if cw == nil {
		cw = &checkpointWrite{checkpoint: it.checkpoint, tables: map[*tableState]*tableWrite{}}
		w.open[it.checkpoint] = cw
	}
	tw := cw.table(it.table)
	tw.note(it.partition, floor, hasFloor)
	if from == n {
		return nil
	}

	out, err := plan.build(w.t.life, w.t.mem, it.rec, int64(from), it.partition, view.target)
	if err != nil {
		return fmt.Errorf("table %s: %w", it.table.name, err)
	}
	p := tw.current
	if p != nil && p.version != view.version {
		// The table's schema or spec changed: finish these files.
		p.close()
		tw.closed = append(tw.closed, p)
		p = nil
	}
	if p == nil {
		p = w.startPipeline(it.table, view, w.rowGroupRows(it.table.name, out))
		tw.current = p
	}
	return p.send(out)
}

// rowGroupRows is the row-group limit that keeps a writer's row group
// within its share of the memory budget, estimated from a batch's Arrow
// bytes per row; 0 without a budget (the table's limit applies). It is
// never above a limit the write properties set.
func (w *writer) rowGroupRows(tableName string, rec arrow.RecordBatch) int {
	b := w.t.rowGroupBytes
	if b <= 0 || rec.NumRows() == 0 {
		return 0
	}
	perRow := max(recordBytes(rec)/rec.NumRows(), 1)
	rows := int(min(max(b/perRow, minRowGroupRows), table.ParquetRowGroupLimitDefault))
	if v, ok := w.t.cfg.writeProps[table.ParquetRowGroupLimitKey]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			rows = min(rows, n)
		}
	}
	level := slog.LevelDebug
	if !w.loggedRows {
		w.loggedRows, level = true, slog.LevelInfo
	}
	w.t.log.Log(w.t.life, level, "row groups sized to the writer's share of memory.max.bytes: files keep their target size and are written out every row group",
		"writer", w.id, "table", tableName, "row_group_rows", rows, "arrow_bytes_per_row", perRow, "budget_bytes", b)
	return rows
}

// plan returns the row plan of a batch schema.
func (w *writer) plan(it writeItem) (*rowPlan, error) {
	p := w.plans[it.schemaID]
	if p != nil && p.input.Equal(it.rec.Schema()) {
		return p, nil
	}
	p, err := newRowPlan(it.rec.Schema(), w.t.cfg.metaColumns())
	if err != nil {
		return nil, err
	}
	p.fold = w.t.cfg.caseInsensitive
	w.plans[it.schemaID] = p
	return p, nil
}

// flush closes a checkpoint's pipelines and, without holding up the
// queue, waits for their files and replies with the writer's result.
func (w *writer) flush(checkpoint uint64, reply chan<- flushReply) {
	if err := w.failed(); err != nil {
		reply <- flushReply{err: err}
		return
	}
	for c := range w.open {
		if c < checkpoint {
			reply <- flushReply{err: fmt.Errorf("iceberg sink: writer %d: checkpoint %d was never flushed before %d", w.id, c, checkpoint)}
			return
		}
	}
	cw := w.open[checkpoint]
	delete(w.open, checkpoint)
	if cw == nil {
		reply <- flushReply{}
		return
	}
	cw.close()
	w.inflight.Add(1)
	go func() {
		defer w.inflight.Done()
		res, err := cw.result(w.t.life, w.id)
		if err != nil {
			w.fail(err)
			reply <- flushReply{err: w.failed()}
			return
		}
		// A writer that wrote no file (every row was one the tables held)
		// has no result: results describe data written.
		reply <- flushReply{result: res, ok: res.Files > 0}
	}()
}

// checkpointWrite is what one writer writes for one checkpoint.
type checkpointWrite struct {
	checkpoint uint64
	tables     map[*tableState]*tableWrite
}

func (cw *checkpointWrite) table(st *tableState) *tableWrite {
	tw := cw.tables[st]
	if tw == nil {
		tw = &tableWrite{partitions: map[string]partitionNote{}}
		cw.tables[st] = tw
	}
	return tw
}

// close ends the input of every pipeline; their files finish in the
// background.
func (cw *checkpointWrite) close() {
	for _, tw := range cw.tables {
		if tw.current != nil {
			tw.current.close()
			tw.closed = append(tw.closed, tw.current)
			tw.current = nil
		}
	}
}

// abandon waits for closed pipelines to end without using their files.
// Called after the task's context was cancelled, so they end at once.
func (cw *checkpointWrite) abandon() {
	for _, tw := range cw.tables {
		for _, p := range tw.closed {
			<-p.done
			p.drain()
		}
	}
}

// result waits for the checkpoint's files and describes them.
func (cw *checkpointWrite) result(ctx context.Context, writer int) (sdk.WriteResult, error) {
	pl := payload{Version: payloadVersion, Checkpoint: cw.checkpoint, Writer: writer}
	res := sdk.WriteResult{Writer: writer}
	tables := make([]*tableState, 0, len(cw.tables))
	for st := range cw.tables {
		tables = append(tables, st)
	}
	slices.SortFunc(tables, func(a, b *tableState) int { return compareStrings(a.name, b.name) })
	for _, st := range tables {
		tw := cw.tables[st]
		tp := tablePayload{Table: st.name}
		for part, note := range tw.partitions {
			tp.Partitions = append(tp.Partitions, part)
			if note.mixed {
				tp.Mixed = append(tp.Mixed, part)
			} else if note.hasFloor {
				if tp.Floors == nil {
					tp.Floors = map[string]int64{}
				}
				tp.Floors[part] = note.floor
			}
		}
		sort.Strings(tp.Partitions)
		sort.Strings(tp.Mixed)
		for _, p := range tw.closed {
			files, err := p.wait(ctx)
			if err != nil {
				return sdk.WriteResult{}, fmt.Errorf("table %s: write data files: %w", st.name, err)
			}
			if len(files) == 0 {
				continue
			}
			g, err := encodeGroup(p.tbl, files)
			if err != nil {
				return sdk.WriteResult{}, fmt.Errorf("table %s: %w", st.name, err)
			}
			tp.Groups = append(tp.Groups, g)
			res.Records += g.Records
			res.Bytes += g.Bytes
			res.Files += len(g.Files)
		}
		pl.Tables = append(pl.Tables, tp)
	}
	b, err := pl.encode()
	if err != nil {
		return sdk.WriteResult{}, err
	}
	res.Payload = b
	return res, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tableWrite is what one writer writes for one table in one checkpoint.
type tableWrite struct {
	current *pipeline
	closed  []*pipeline
	// partitions notes, per source partition the writer had rows of, the
	// floor below which it dropped rows: the committer's fencing needs it.
	partitions map[string]partitionNote
}

type partitionNote struct {
	floor    int64
	hasFloor bool
	// mixed: the floor changed within the checkpoint (a Frontier call
	// reloaded the table meanwhile); the committer then refuses it.
	mixed bool
}

func (tw *tableWrite) note(partition string, floor int64, hasFloor bool) {
	n, seen := tw.partitions[partition]
	switch {
	case !seen:
		tw.partitions[partition] = partitionNote{floor: floor, hasFloor: hasFloor}
	case n.hasFloor != hasFloor || (hasFloor && n.floor != floor):
		n.mixed = true
		tw.partitions[partition] = n
	}
}

// pipeline is one open table.WriteRecords call, fed from a channel. It
// rolls data files at the target size and keeps them until closed.
type pipeline struct {
	version uint64
	tbl     *table.Table
	mem     memory.Allocator
	in      chan arrow.RecordBatch
	done    chan struct{}
	closed  bool

	// Owned by the writer goroutine: batches not yet handed on.
	pending     []arrow.RecordBatch
	pendingRows int64
	sendErr     error // the last handing-on at close failed

	// Set by the pipeline goroutine before done closes.
	files []icebergapi.DataFile
	err   error
}

func (w *writer) startPipeline(st *tableState, view tableView, rowGroupRows int) *pipeline {
	p := &pipeline{
		version: view.version,
		tbl:     view.tbl,
		mem:     w.t.mem,
		in:      make(chan arrow.RecordBatch, pipelineBuffer),
		done:    make(chan struct{}),
	}
	// The Parquet writer and the metrics modes read their settings from
	// the table's properties, as the Apache Iceberg sink's writers take
	// its write-props.
	tbl, err := st.writeTable(view.tbl, w.t.cfg.writeProps)
	if err != nil {
		// The pipeline fails at once: handOn and wait report the
		// error, and drain releases what was handed on.
		p.err = fmt.Errorf("table %s: lay %s* over its properties: %w", tableKey(view.tbl.Identifier()), prefixWriteProps, err)
		close(p.done)
		return p
	}
	records := func(yield func(arrow.RecordBatch, error) bool) {
		for rec := range p.in {
			if !yield(rec, nil) {
				return
			}
		}
	}
	go func() {
		defer close(p.done)
		// sequential: iceberg-go's fan-out takes each partition's rows
		// with a goroutine per column otherwise, which costs more than
		// it saves on the batches a second's checkpoint brings.
		opts := []table.WriteRecordOption{
			table.WithTargetFileSize(w.t.cfg.targetFileSize),
			table.WithRecordBatchBufferSize(pipelineBuffer),
		}
		if rowGroupRows > 0 {
			opts = append(opts, table.WithParquetRowGroupLimit(rowGroupRows))
		}
		for df, err := range table.WriteRecords(sequential(w.t.life), tbl, view.target, records, opts...) {
			if err != nil {
				p.err = err
				return
			}
			p.files = append(p.files, df)
		}
	}()
	return p
}

// send hands a record to the pipeline, which takes ownership. Small
// records are gathered into one of coalesceRows first.
func (p *pipeline) send(rec arrow.RecordBatch) error {
	if rec.NumRows() >= coalesceRows && len(p.pending) == 0 {
		return p.handOn(rec)
	}
	p.pending = append(p.pending, rec)
	p.pendingRows += rec.NumRows()
	if p.pendingRows < coalesceRows {
		return nil
	}
	return p.sendPending()
}

// sendPending hands the gathered records on as one.
func (p *pipeline) sendPending() error {
	recs := p.pending
	p.pending, p.pendingRows = nil, 0
	switch len(recs) {
	case 0:
		return nil
	case 1:
		return p.handOn(recs[0])
	}
	rec, err := schemas.ConcatBatches(p.mem, recs[0].Schema(), recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		return err
	}
	return p.handOn(rec)
}

// handOn passes a record to the WriteRecords goroutine.
func (p *pipeline) handOn(rec arrow.RecordBatch) error {
	select {
	case p.in <- rec:
		sdk.CrashPoint("iceberg.writing") // crash tests: data files being written
		return nil
	case <-p.done:
		rec.Release()
		if p.err != nil {
			return p.err
		}
		return errors.New("data file pipeline ended early")
	}
}

// close hands on what is gathered and ends the pipeline's input.
func (p *pipeline) close() {
	if !p.closed {
		p.closed = true
		if err := p.sendPending(); err != nil {
			p.sendErr = err
		}
		close(p.in)
	}
}

// wait returns the pipeline's files once it has written them all. Call
// after close.
func (p *pipeline) wait(ctx context.Context) ([]icebergapi.DataFile, error) {
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.drain()
	if p.err == nil && p.sendErr != nil {
		return nil, p.sendErr
	}
	return p.files, p.err
}

// drain releases batches a pipeline that failed early never took. Call
// after close, once done is closed.
func (p *pipeline) drain() {
	for rec := range p.in {
		rec.Release()
	}
}
