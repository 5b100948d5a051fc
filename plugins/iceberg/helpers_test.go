package iceberg

import (
	"context"
	"fmt"
	"github.com/floehq/floe/lake"
	"log/slog"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

// fixture is one connector's config over a fresh embedded catalog.
type fixture struct {
	t         testing.TB
	dir       string
	connector string
	cfg       map[string]string
	// reset is handed to every Open as the host's offset override.
	reset *sdk.OffsetsReset
	cat   catalog.Catalog // the test's own handle, for reads
}

func newFixture(t testing.TB, cfg map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, connector: "orders-to-iceberg", cfg: map[string]string{
		keyTables:  "db.events",
		keyDataDir: dir,
	}}
	for k, v := range cfg {
		if v == "" {
			delete(f.cfg, k)
			continue
		}
		f.cfg[k] = v
	}
	return f
}

// open opens a sink task with n writers.
func (f *fixture) open(writers int) *task {
	f.t.Helper()
	comp := Component()
	st, err := comp.Sink.Open(context.Background(), sdk.SinkOpenRequest{
		Connector:    f.connector,
		Config:       sdk.NewConfig(f.cfg),
		Writers:      writers,
		OffsetsReset: f.reset,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		f.t.Fatalf("open: %v", err)
	}
	tk := st.(*task)
	f.t.Cleanup(func() { _ = tk.Close(context.Background()) })
	return tk
}

// catalog returns a catalog handle of the test's own.
func (f *fixture) catalog() catalog.Catalog {
	f.t.Helper()
	if f.cat != nil {
		return f.cat
	}
	s, err := parseSettings(sdk.NewConfig(f.cfg))
	if err != nil {
		f.t.Fatal(err)
	}
	cat, closeFn, err := lake.OpenCatalog(context.Background(), s.catalog)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = closeFn() })
	f.cat = cat
	return cat
}

func (f *fixture) load(name string) *table.Table {
	f.t.Helper()
	id, err := parseTableName(name)
	if err != nil {
		f.t.Fatal(err)
	}
	tbl, err := f.catalog().LoadTable(context.Background(), id)
	if err != nil {
		f.t.Fatalf("load %s: %v", name, err)
	}
	return tbl
}

// schemaV1 is the value schema the tests start from.
var schemaV1 = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "country", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var baseTime = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

var countries = []string{"de", "fr", "nl", "pl"}

// batchRows builds a batch of partition p with offsets [from, from+n) in
// value schema values (columns it knows: id, name, ts, country, qty,
// amount, kind); id = offset, ts advances one hour per offset.
func batchRows(values *arrow.Schema, schemaID int64, p string, from, n int64, fill func(col string, off int64, b array.Builder) bool) sdk.Batch {
	fields := append([]arrow.Field(nil), values.Fields()...)
	fields = append(fields,
		arrow.Field{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	)
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for off := from; off < from+n; off++ {
		for i, f := range fields {
			fb := b.Field(i)
			if fill != nil && fill(f.Name, off, fb) {
				continue
			}
			switch f.Name {
			case "id":
				fb.(*array.Int64Builder).Append(off)
			case "name":
				fb.(*array.StringBuilder).Append(fmt.Sprintf("name-%d", off))
			case "ts":
				fb.(*array.TimestampBuilder).Append(arrow.Timestamp(baseTime.Add(time.Duration(off) * time.Hour).UnixMicro()))
			case "country":
				fb.(*array.StringBuilder).Append(countries[off%int64(len(countries))])
			case sdk.ColumnOffset:
				fb.(*array.Int64Builder).Append(off)
			case sdk.ColumnTimestamp:
				fb.(*array.TimestampBuilder).Append(arrow.Timestamp(baseTime.Add(time.Duration(off) * time.Second).UnixMilli()))
			case sdk.ColumnKey:
				fb.(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("k%d", off)))
			default:
				fb.AppendNull()
			}
		}
	}
	return sdk.Batch{Partition: p, From: from, Next: from + n, SchemaID: schemaID, Records: b.NewRecordBatch()}
}

func batchV1(p string, from, n int64) sdk.Batch { return batchRows(schemaV1, 1, p, from, n, nil) }

// row is one table row as the tests check it.
type row struct {
	partition string
	offset    int64
	id        int64
	name      string
	nameNull  bool
	sourceTS  time.Time
}

// readRows scans a table and returns its rows by (partition, offset).
func (f *fixture) readRows(name string) []row {
	f.t.Helper()
	tbl := f.load(name)
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		f.t.Fatalf("scan %s: %v", name, err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	var rows []row
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(n string) arrow.Array {
			idx := rec.Schema().FieldIndices(n)
			if len(idx) == 0 {
				return nil
			}
			return rec.Column(idx[0])
		}
		parts, offs, ids, names := col(colSourcePartition), col(colSourceOffset), col("id"), col("name")
		tss := col(colSourceTimestamp)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := row{}
			if parts != nil {
				r.partition = parts.(*array.String).Value(i)
				r.offset = offs.(*array.Int64).Value(i)
				r.sourceTS = tss.(*array.Timestamp).Value(i).ToTime(arrow.Microsecond)
			}
			if ids != nil {
				r.id = ids.(*array.Int64).Value(i)
			}
			if names != nil {
				if names.IsNull(i) {
					r.nameNull = true
				} else {
					r.name = names.(*array.String).Value(i)
				}
			}
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].partition != rows[j].partition {
			return rows[i].partition < rows[j].partition
		}
		return rows[i].offset < rows[j].offset
	})
	return rows
}

// checkExactlyOnce asserts the table holds each offset of each partition
// in want ([from, next)) exactly once, and nothing else.
func (f *fixture) checkExactlyOnce(name string, want map[string][2]int64) {
	f.t.Helper()
	rows := f.readRows(name)
	got := map[string]map[int64]int{}
	for _, r := range rows {
		if got[r.partition] == nil {
			got[r.partition] = map[int64]int{}
		}
		got[r.partition][r.offset]++
	}
	total := 0
	for p, rng := range want {
		for off := rng[0]; off < rng[1]; off++ {
			if c := got[p][off]; c != 1 {
				f.t.Fatalf("table %s: partition %s offset %d present %d times, want once", name, p, off, c)
			}
		}
		total += int(rng[1] - rng[0])
	}
	if len(rows) != total {
		f.t.Fatalf("table %s: %d rows, want %d", name, len(rows), total)
	}
}

// step writes batches for a checkpoint, flushes and commits it.
func step(t testing.TB, tk *task, checkpoint uint64, batches ...sdk.Batch) []sdk.TableCommit {
	t.Helper()
	for _, b := range batches {
		write(t, tk, checkpoint, b)
	}
	return flushCommit(t, tk, checkpoint, ranges(batches...))
}

func write(t testing.TB, tk *task, checkpoint uint64, b sdk.Batch) []sdk.Rejected {
	t.Helper()
	defer b.Records.Release()
	rej, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: checkpoint, Batch: b})
	if err != nil {
		t.Fatalf("write checkpoint %d: %v", checkpoint, err)
	}
	return rej
}

func flushCommit(t testing.TB, tk *task, checkpoint uint64, rs []sdk.Range) []sdk.TableCommit {
	t.Helper()
	res, err := tk.Flush(context.Background(), checkpoint)
	if err != nil {
		t.Fatalf("flush %d: %v", checkpoint, err)
	}
	tc, err := tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: checkpoint, Ranges: rs, Results: res})
	if err != nil {
		t.Fatalf("commit %d: %v", checkpoint, err)
	}
	return tc
}

// ranges merges batches into one range per partition.
func ranges(batches ...sdk.Batch) []sdk.Range {
	byP := map[string]*sdk.Range{}
	var order []string
	for _, b := range batches {
		r := byP[b.Partition]
		if r == nil {
			r = &sdk.Range{Partition: b.Partition, From: b.From, Next: b.Next}
			byP[b.Partition] = r
			order = append(order, b.Partition)
			continue
		}
		r.From, r.Next = min(r.From, b.From), max(r.Next, b.Next)
	}
	out := make([]sdk.Range, 0, len(order))
	for _, p := range order {
		out = append(out, *byP[p])
	}
	return out
}

func prepare(t testing.TB, tk *task, id int64, values *arrow.Schema) []string {
	t.Helper()
	changes, err := tk.PrepareSchema(context.Background(), sdk.Schema{ID: id, Arrow: values})
	if err != nil {
		t.Fatalf("prepare schema %d: %v", id, err)
	}
	return changes
}

// floeSnapshots returns the table's snapshots committed by connector.
func floeSnapshots(tbl *table.Table, connector string) []table.Snapshot {
	var out []table.Snapshot
	for _, s := range tbl.Metadata().Snapshots() {
		if c, ok, _ := parseFloeCommit(&s, connector); ok && c.snapshotID != 0 {
			out = append(out, s)
		}
	}
	return out
}
