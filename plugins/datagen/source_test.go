package datagen_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/plugins/datagen"
	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// fakeHost is an in-process sdk.SourceHost.
type fakeHost struct {
	mu       sync.Mutex
	starts   map[string]int64
	reject   error
	asked    [][]string
	admitted []sdk.Schema
}

func (h *fakeHost) StartPositions(_ context.Context, partitions []string) (map[string]int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, partitions)
	out := map[string]int64{}
	for _, p := range partitions {
		if pos, ok := h.starts[p]; ok {
			out[p] = pos
		}
	}
	return out, nil
}

func (h *fakeHost) PartitionsRevoked(context.Context, map[string]int64) error { return nil }

func (h *fakeHost) AdmitSchema(_ context.Context, s sdk.Schema) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.admitted = append(h.admitted, s)
	return h.reject
}

func (h *fakeHost) DeadLetter(context.Context, []sdk.DeadLetter) error {
	return errors.New("datagen has no dead letters")
}

func open(t *testing.T, host *fakeHost, task, tasks int, cfg map[string]string) sdk.SourceTask {
	t.Helper()
	st, err := openErr(host, task, tasks, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

func openErr(host *fakeHost, task, tasks int, cfg map[string]string) (sdk.SourceTask, error) {
	return datagen.Component().Source.Open(context.Background(), sdk.SourceOpenRequest{
		Connector: "test",
		Task:      task,
		Tasks:     tasks,
		Config:    sdk.NewConfig(cfg),
		Host:      host,
	})
}

// readAll reads until end of input, failing after limit batches.
func readAll(t *testing.T, st sdk.SourceTask, limit int) []sdk.Batch {
	t.Helper()
	var out []sdk.Batch
	for range limit {
		bs, err := st.Read(context.Background(), 3)
		out = append(out, bs...)
		if errors.Is(err, sdk.ErrEndOfInput) {
			if len(bs) > 0 {
				t.Fatal("Read returned batches with ErrEndOfInput")
			}
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no end of input after %d reads", limit)
	return nil
}

func release(bs []sdk.Batch) {
	for _, b := range bs {
		b.Records.Release()
	}
}

func TestBatches(t *testing.T) {
	host := &fakeHost{}
	st := open(t, host, 1, 2, map[string]string{
		datagen.KeyPartitions: "5", datagen.KeyBatchSize: "100",
	})
	if len(host.admitted) != 1 {
		t.Fatalf("AdmitSchema called %d times during Open, want once", len(host.admitted))
	}
	admitted := host.admitted[0]
	want, err := schemas.ArrowSchema(mustParse(t, admitted.Avro))
	if err != nil {
		t.Fatal(err)
	}
	if admitted.ID != 1 || !admitted.Arrow.Equal(want) {
		t.Fatalf("admitted schema %d %s, want 1 and schemas.ArrowSchema's %s", admitted.ID, admitted.Arrow, want)
	}
	if got := strings.Join(host.asked[0], ","); got != "orders/1,orders/3" {
		t.Fatalf("task 1 of 2 asked start positions of %s, want orders/1,orders/3", got)
	}

	next := map[string]int64{}
	var order []string
	for range 3 {
		bs, err := st.Read(context.Background(), 2)
		if err != nil || len(bs) != 2 {
			t.Fatalf("Read(2): %d batches, %v", len(bs), err)
		}
		for _, b := range bs {
			order = append(order, b.Partition)
			if b.From != next[b.Partition] || b.Next != b.From+100 || b.SchemaID != 1 {
				t.Fatalf("batch %s [%d, %d) schema %d after next %d", b.Partition, b.From, b.Next, b.SchemaID, next[b.Partition])
			}
			next[b.Partition] = b.Next
			checkBatch(t, b, admitted.Arrow)
			b.Records.Release()
		}
	}
	if got := strings.Join(order, ","); got != "orders/1,orders/3,orders/1,orders/3,orders/1,orders/3" {
		t.Errorf("partition order %s, want them in turn", got)
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	if len(host.admitted) != 1 {
		t.Errorf("AdmitSchema called %d times, want once", len(host.admitted))
	}
}

func mustParse(t *testing.T, js string) avro.Schema {
	t.Helper()
	s, err := generate.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkBatch checks the layout of a batch: the value columns, then
// __offset, __timestamp and __key, with the offsets of [From, Next).
func checkBatch(t *testing.T, b sdk.Batch, value *arrow.Schema) {
	t.Helper()
	rec := b.Records
	nv := value.NumFields()
	if int(rec.NumCols()) != nv+3 || rec.NumRows() != b.Next-b.From {
		t.Fatalf("batch %s: %d columns and %d rows, want %d and %d", b.Partition, rec.NumCols(), rec.NumRows(), nv+3, b.Next-b.From)
	}
	for i := range nv {
		if !rec.Schema().Field(i).Equal(value.Field(i)) {
			t.Fatalf("column %d is %s, want %s", i, rec.Schema().Field(i), value.Field(i))
		}
	}
	meta := rec.Schema().Fields()[nv:]
	if meta[0].Name != sdk.ColumnOffset || meta[1].Name != sdk.ColumnTimestamp || meta[2].Name != sdk.ColumnKey ||
		!arrow.TypeEqual(meta[0].Type, arrow.PrimitiveTypes.Int64) ||
		!arrow.TypeEqual(meta[1].Type, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}) ||
		!arrow.TypeEqual(meta[2].Type, arrow.BinaryTypes.Binary) {
		t.Fatalf("metadata columns %v", meta)
	}
	offsets := rec.Column(nv).(*array.Int64)
	stamps := rec.Column(nv + 1).(*array.Timestamp)
	now := time.Now()
	for i := range offsets.Len() {
		if offsets.Value(i) != b.From+int64(i) {
			t.Fatalf("row %d: offset %d, want %d", i, offsets.Value(i), b.From+int64(i))
		}
		if ts := stamps.Value(i).ToTime(arrow.Millisecond); now.Sub(ts) > time.Minute || ts.After(now) {
			t.Fatalf("row %d: __timestamp %s is not the generation time (now %s)", i, ts, now)
		}
	}
}

// rows returns the value columns and the key of a batch.
func rows(b sdk.Batch) (arrow.RecordBatch, *array.Binary) {
	rec := b.Records
	n := int(rec.NumCols())
	value := array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields()[:n-3], nil), rec.Columns()[:n-3], rec.NumRows())
	return value, rec.Column(n - 1).(*array.Binary)
}

func TestKeyColumn(t *testing.T) {
	for _, shape := range generate.Shapes() {
		st := open(t, &fakeHost{}, 0, 1, map[string]string{datagen.KeyShape: shape, datagen.KeyBatchSize: "300"})
		bs, err := st.Read(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		value, keys := rows(bs[0])
		field := map[string]string{"orders": "customer_id", "clickstream": "user_id"}[shape]
		col := value.Column(value.Schema().FieldIndices(field)[0])
		for i := range keys.Len() {
			if string(keys.Value(i)) != col.ValueStr(i) {
				t.Fatalf("%s row %d: __key %q, %s %q", shape, i, keys.Value(i), field, col.ValueStr(i))
			}
		}
		value.Release()
		release(bs)
	}
}

// Tasks opened the same way make the same rows; a replay from a start
// position makes the rows a full run made at those offsets.
func TestDeterministicReplay(t *testing.T) {
	cfg := map[string]string{datagen.KeyBatchSize: "5000", datagen.KeySeed: "7", datagen.KeyKeySkew: "zipf"}
	full := open(t, &fakeHost{}, 0, 1, cfg)
	var all []sdk.Batch
	for len(all) < 4 {
		bs, err := full.Read(context.Background(), 4)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, bs...)
	}
	defer release(all)

	again := open(t, &fakeHost{}, 0, 1, cfg)
	bs, err := again.Read(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release(bs)
	requireSameValues(t, all[0], bs[0], 0, 0, 5000)

	replay := open(t, &fakeHost{starts: map[string]int64{"orders/0": 12345}}, 0, 1, cfg)
	bs2, err := replay.Read(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release(bs2)
	if bs2[0].From != 12345 || bs2[0].Next != 17345 {
		t.Fatalf("replay from 12345: batch [%d, %d)", bs2[0].From, bs2[0].Next)
	}
	// Offsets 12345.. sit at row 2345 of the full run's third batch.
	requireSameValues(t, all[2], bs2[0], 2345, 0, 2655)
	requireSameValues(t, all[3], bs2[0], 0, 2655, 2345)

	// Another seed makes other rows.
	cfg[datagen.KeySeed] = "8"
	other := open(t, &fakeHost{}, 0, 1, cfg)
	bs3, err := other.Read(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release(bs3)
	a, _ := rows(all[0])
	b, _ := rows(bs3[0])
	if array.RecordEqual(a.NewSlice(0, 1), b.NewSlice(0, 1)) {
		t.Error("seeds 7 and 8 made the same first row")
	}
}

// requireSameValues compares n rows of the value and key columns: a from
// row ia, b from row ib.
func requireSameValues(t *testing.T, a, b sdk.Batch, ia, ib, n int64) {
	t.Helper()
	va, ka := rows(a)
	vb, kb := rows(b)
	if !array.RecordEqual(va.NewSlice(ia, ia+n), vb.NewSlice(ib, ib+n)) {
		t.Fatalf("rows %s[%d:+%d] and %s[%d:+%d] differ", a.Partition, ia, n, b.Partition, ib, n)
	}
	if !array.Equal(array.NewSlice(ka, ia, ia+n), array.NewSlice(kb, ib, ib+n)) {
		t.Fatalf("keys %s[%d:+%d] and %s[%d:+%d] differ", a.Partition, ia, n, b.Partition, ib, n)
	}
}

func TestCountSplitsAndEnds(t *testing.T) {
	// 10007 records over 4 partitions: 2502, 2502, 2502, 2501; tasks 0 and
	// 1 of 3 own {0, 3} and {1}, task 2 owns {2}.
	cfg := map[string]string{datagen.KeyCount: "10007", datagen.KeyPartitions: "4", datagen.KeyBatchSize: "1000"}
	total := map[string]int64{}
	for task := range 3 {
		st := open(t, &fakeHost{}, task, 3, cfg)
		bs := readAll(t, st, 100)
		for _, b := range bs {
			if b.From != total[b.Partition] {
				t.Fatalf("%s: batch from %d after %d", b.Partition, b.From, total[b.Partition])
			}
			total[b.Partition] = b.Next
		}
		release(bs)
		// Still the end on the next read.
		if _, err := st.Read(context.Background(), 1); !errors.Is(err, sdk.ErrEndOfInput) {
			t.Fatalf("read after the end: %v", err)
		}
	}
	want := map[string]int64{"orders/0": 2502, "orders/1": 2502, "orders/2": 2502, "orders/3": 2501}
	if fmt.Sprint(total) != fmt.Sprint(want) {
		t.Fatalf("records per partition %v, want %v", total, want)
	}

	// Resuming at or past the end is the end at once.
	st := open(t, &fakeHost{starts: map[string]int64{"orders/0": 2502, "orders/3": 2501}}, 0, 3, cfg)
	if bs, err := st.Read(context.Background(), 1); !errors.Is(err, sdk.ErrEndOfInput) || len(bs) != 0 {
		t.Fatalf("resumed at the end: %d batches, %v", len(bs), err)
	}
	// A task without partitions has no input.
	st = open(t, &fakeHost{}, 3, 5, map[string]string{datagen.KeyPartitions: "2"})
	if _, err := st.Read(context.Background(), 1); !errors.Is(err, sdk.ErrEndOfInput) {
		t.Fatalf("task without partitions: %v", err)
	}
}

func TestRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a second")
	}
	// 4000 records/s for the connector; this task owns 2 of 4 partitions.
	st := open(t, &fakeHost{}, 0, 2, map[string]string{datagen.KeyRate: "4000", datagen.KeyPartitions: "4"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n := int64(0)
	for ctx.Err() == nil {
		bs, err := st.Read(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			n += b.Next - b.From
		}
		release(bs)
	}
	t.Logf("%d records in 1 s at 2000/s", n)
	if n < 1500 || n > 2600 {
		t.Fatalf("%d records in 1 s at 2000/s", n)
	}
}

func TestReadReturnsWhenCtxEnds(t *testing.T) {
	st := open(t, &fakeHost{}, 0, 1, map[string]string{datagen.KeyRate: "0.5"})
	// The bucket starts with one record; the next comes in 2 s.
	bs, err := st.Read(context.Background(), 1)
	if err != nil || len(bs) != 1 || bs[0].Next != 1 {
		t.Fatalf("first Read at 0.5/s: %d batches, %v", len(bs), err)
	}
	release(bs)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	bs, err = st.Read(ctx, 1)
	if err != nil || len(bs) != 0 {
		t.Fatalf("Read at 0.5/s: %d batches, %v", len(bs), err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Read returned %s after ctx ended", d)
	}
	// Unlimited, an ended ctx still returns nothing and no error.
	fast := open(t, &fakeHost{}, 0, 1, nil)
	if bs, err := fast.Read(ctx, 1); err != nil || len(bs) != 0 {
		t.Fatalf("Read with an ended ctx: %d batches, %v", len(bs), err)
	}
}

func TestUserSchemaFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "payments.avsc")
	const js = `{"type": "record", "name": "Payment", "namespace": "acme",
	  "fields": [
	    {"name": "id", "type": "long"},
	    {"name": "account", "type": "string", "datagen.prefix": "acct-"},
	    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
	    {"name": "memo", "type": ["null", "string"]}
	  ]}`
	if err := os.WriteFile(file, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	host := &fakeHost{}
	st := open(t, host, 0, 1, map[string]string{
		datagen.KeySchemaFile: file, datagen.KeyKeyField: "account", datagen.KeyKeyCardinality: "3",
		datagen.KeyBatchSize: "50", datagen.KeyTimestampStart: "2026-06-01T00:00:00Z", datagen.KeyTimestampStep: "3600000",
	})
	if host.admitted[0].Avro != js {
		t.Error("the admitted Avro schema is not the file's")
	}
	bs, err := st.Read(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release(bs)
	b := bs[0]
	if b.Partition != "Payment/0" || b.Next != 50 {
		t.Fatalf("batch %s [%d, %d)", b.Partition, b.From, b.Next)
	}
	value, keys := rows(b)
	at := value.Column(2).(*array.Timestamp)
	unit := value.Schema().Field(2).Type.(*arrow.TimestampType).Unit
	for i := range 50 {
		if k := string(keys.Value(i)); k != "acct-0" && k != "acct-1" && k != "acct-2" {
			t.Fatalf("row %d: key %q", i, k)
		}
		want := time.Date(2026, 6, 1, i, 0, 0, 0, time.UTC)
		if got := at.Value(i).ToTime(unit); !got.Equal(want) {
			t.Fatalf("row %d: at %s, want %s", i, got, want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	notRecord := filepath.Join(dir, "str.avsc")
	if err := os.WriteFile(notRecord, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.avsc")
	if err := os.WriteFile(broken, []byte(`{"type": "record", "name": "R", "fields": [{"name": "a"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.avsc")
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want []string
	}{
		{"unknown shape", map[string]string{datagen.KeyShape: "pets"}, []string{datagen.KeyShape, "pets"}},
		{"unreadable schema file", map[string]string{datagen.KeySchemaFile: missing}, []string{datagen.KeySchemaFile, missing}},
		{"non-record schema", map[string]string{datagen.KeySchemaFile: notRecord}, []string{datagen.KeySchemaFile, notRecord, "want a record"}},
		{"invalid schema", map[string]string{datagen.KeySchemaFile: broken}, []string{datagen.KeySchemaFile, broken}},
		{"unknown key field", map[string]string{datagen.KeyKeyField: "nope"}, []string{datagen.KeyKeyField, "nope"}},
		{"key field of a bad type", map[string]string{datagen.KeyKeyField: "total"}, []string{datagen.KeyKeyField, "total"}},
		{"bad rate", map[string]string{datagen.KeyRate: "fast"}, []string{datagen.KeyRate}},
		{"negative count", map[string]string{datagen.KeyCount: "-1"}, []string{datagen.KeyCount}},
		{"zero partitions", map[string]string{datagen.KeyPartitions: "0"}, []string{datagen.KeyPartitions}},
		{"unknown skew", map[string]string{datagen.KeyKeySkew: "pareto"}, []string{datagen.KeyKeySkew}},
		{"zipf exponent", map[string]string{datagen.KeyZipfS: "0"}, []string{datagen.KeyZipfS}},
		{"timestamp start", map[string]string{datagen.KeyTimestampStart: "yesterday"}, []string{datagen.KeyTimestampStart}},
		{"batch size", map[string]string{datagen.KeyBatchSize: "0"}, []string{datagen.KeyBatchSize}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openErr(&fakeHost{}, 0, 1, tc.cfg)
			if err == nil {
				t.Fatal("Open accepted the config")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestSchemaRejected(t *testing.T) {
	host := &fakeHost{reject: sdk.RejectSchema("field total: decimal(12,2) is not a long")}
	st := open(t, host, 0, 1, nil)
	for range 2 {
		bs, err := st.Read(context.Background(), 1)
		if !errors.Is(err, sdk.ErrSchemaRejected) || len(bs) > 0 {
			t.Fatalf("Read with a rejected schema: %d batches, %v", len(bs), err)
		}
	}
	// A host that cannot answer fails Open.
	host.reject = errors.New("host unreachable")
	if _, err := openErr(host, 0, 1, nil); err == nil || !strings.Contains(err.Error(), "host unreachable") {
		t.Fatalf("Open with a failing host: %v", err)
	}
}

func TestCommitAndClose(t *testing.T) {
	st := open(t, &fakeHost{}, 0, 1, nil)
	if err := st.Commit(context.Background(), map[string]int64{"orders/0": 5000}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := st.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSpec(t *testing.T) {
	c := datagen.Component()
	if c.Kind() != sdk.KindSource || c.Name != "datagen" {
		t.Fatalf("component %s of kind %s", c.Name, c.Kind())
	}
	for _, f := range c.Spec.Fields() {
		if f.Doc == "" || !strings.HasPrefix(f.Name, "datagen.") {
			t.Errorf("key %s: doc %q", f.Name, f.Doc)
		}
	}
	if errs := c.Spec.Validate(map[string]string{}); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
	if errs := c.Spec.Validate(map[string]string{datagen.KeyShape: "pets", datagen.KeyZipfS: "-1"}); len(errs) != 2 {
		t.Errorf("bad values: %v", errs)
	}
}

// Many tasks of one connector open and read concurrently.
func TestConcurrentTasks(t *testing.T) {
	var wg sync.WaitGroup
	host := &fakeHost{}
	total := make([]int64, 4)
	for task := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := openErr(host, task, 4, map[string]string{datagen.KeyCount: "40000", datagen.KeyPartitions: "8"})
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { _ = st.Close(context.Background()) }()
			for {
				bs, err := st.Read(context.Background(), 2)
				for _, b := range bs {
					total[task] += b.Next - b.From
				}
				release(bs)
				if err != nil {
					if !errors.Is(err, sdk.ErrEndOfInput) {
						t.Error(err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	if fmt.Sprint(total) != "[10000 10000 10000 10000]" {
		t.Fatalf("records per task %v", total)
	}
}
