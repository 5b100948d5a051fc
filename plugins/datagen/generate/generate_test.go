package generate_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/schemas"
)

func mustShape(t testing.TB, shape string, opts generate.Options) *generate.Generator {
	t.Helper()
	g, err := generate.ForShape(shape, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustSchema(t testing.TB, js string, opts generate.Options) *generate.Generator {
	t.Helper()
	s, err := generate.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	g, err := generate.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// arrowRows generates records [from, from+n) of p with AppendArrow.
func arrowRows(t testing.TB, g *generate.Generator, p int, from int64, n int) arrow.RecordBatch {
	t.Helper()
	return g.NewRecordBatch(memory.DefaultAllocator, p, from, n)
}

// avroRows generates the same records with AppendAvro and decodes them
// with floe's decoder.
func avroRows(t testing.TB, g *generate.Generator, p int, from int64, n int) arrow.RecordBatch {
	t.Helper()
	dec, err := schemas.NewDecoder(g.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, dec.Schema())
	defer b.Release()
	var buf []byte
	for o := from; o < from+int64(n); o++ {
		buf = g.AppendAvro(buf[:0], p, o)
		if err := dec.Append(b.Fields(), buf); err != nil {
			t.Fatalf("record (%d, %d): %v", p, o, err)
		}
	}
	return b.NewRecordBatch()
}

// requireSameRows fails with the first differing row of each column.
func requireSameRows(t *testing.T, want, got arrow.RecordBatch) {
	t.Helper()
	if !want.Schema().Equal(got.Schema()) {
		t.Fatalf("schemas differ:\n%s\n%s", want.Schema(), got.Schema())
	}
	if want.NumRows() != got.NumRows() {
		t.Fatalf("rows: want %d, got %d", want.NumRows(), got.NumRows())
	}
	for c := range int(want.NumCols()) {
		a, b := want.Column(c), got.Column(c)
		if array.Equal(a, b) {
			continue
		}
		for r := range a.Len() {
			sa, sb := array.NewSlice(a, int64(r), int64(r+1)), array.NewSlice(b, int64(r), int64(r+1))
			if !array.Equal(sa, sb) {
				t.Errorf("column %s row %d:\n arrow %s\n avro  %s", want.Schema().Field(c).Name, r, sa, sb)
				break
			}
		}
	}
}

func TestAvroAndArrowAgree(t *testing.T) {
	for _, shape := range generate.Shapes() {
		t.Run(shape, func(t *testing.T) {
			g := mustShape(t, shape, generate.Options{Seed: 7, KeySkew: generate.Zipf})
			for _, p := range []int{0, 3} {
				want := arrowRows(t, g, p, 1000, 3000)
				got := avroRows(t, g, p, 1000, 3000)
				requireSameRows(t, want, got)
				want.Release()
				got.Release()
			}
		})
	}
}

// The Avro bytes are valid for an independent decoder too: hamba/avro
// reads them back whole, with the event time and the key where expected.
func TestAvroDecodesWithHamba(t *testing.T) {
	for _, shape := range generate.Shapes() {
		t.Run(shape, func(t *testing.T) {
			g := mustShape(t, shape, generate.Options{})
			for o := range int64(2000) {
				buf := g.AppendAvro(nil, 1, o)
				var rec map[string]any
				dec := avro.NewDecoderForSchema(g.Schema(), bytes.NewReader(buf))
				if err := dec.Decode(&rec); err != nil {
					t.Fatalf("offset %d: %v", o, err)
				}
				if ts := rec["ts"].(time.Time); !ts.Equal(g.EventTime(o)) {
					t.Fatalf("offset %d: ts %s, want %s", o, ts, g.EventTime(o))
				}
				key := fmt.Sprint(rec[g.KeyField()])
				if want := string(g.AppendKey(nil, 1, o)); key != want {
					t.Fatalf("offset %d: key field %s = %s, AppendKey %s", o, g.KeyField(), key, want)
				}
			}
		})
	}
}

// allTypes covers every Avro type and logical type the generator makes.
const allTypes = `{
  "type": "record", "name": "All", "namespace": "test",
  "fields": [
    {"name": "id", "type": "int", "datagen.min": 100},
    {"name": "b", "type": "boolean"},
    {"name": "i", "type": "int", "datagen.min": -50, "datagen.max": 50},
    {"name": "l", "type": "long", "datagen.min": -9000000000000, "datagen.max": 9000000000000},
    {"name": "f", "type": "float", "datagen.min": -1, "datagen.max": 1},
    {"name": "d", "type": "double"},
    {"name": "s", "type": "string"},
    {"name": "ip", "type": "string", "datagen.kind": "ipv4"},
    {"name": "u", "type": "string", "datagen.kind": "uuid"},
    {"name": "raw", "type": "bytes", "datagen.min": 0, "datagen.max": 20},
    {"name": "fx", "type": {"type": "fixed", "name": "Hash", "size": 5}},
    {"name": "fx2", "type": "Hash"},
    {"name": "dec_fixed", "type": {"type": "fixed", "name": "Money", "size": 6, "logicalType": "decimal", "precision": 14, "scale": 4}, "datagen.min": -99999999, "datagen.max": 99999999},
    {"name": "dec_neg", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 0}, "datagen.min": -999999999, "datagen.max": 999999999},
    {"name": "dec_big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 10}, "datagen.min": -9000000000000000000, "datagen.max": 9000000000000000000},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}, "datagen.min": 0, "datagen.max": 5000},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}, "datagen.min": -100000, "datagen.max": 100000},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "tsn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
    {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
    {"name": "opt_first", "type": ["null", "long"], "datagen.null": 0.5},
    {"name": "opt_last", "type": ["string", "null"], "datagen.null": 0.3, "datagen.values": ["x", "y"]},
    {"name": "opt_never", "type": ["null", "double"], "datagen.null": 0},
    {"name": "opt_enum", "type": ["null", "Color"]},
    {"name": "inner2", "type": {"type": "record", "name": "Inner2", "fields": [{"name": "v", "type": "int"}]}},
    {"name": "nested", "type": {"type": "record", "name": "Inner", "fields": [
      {"name": "tags", "type": {"type": "array", "items": ["null", "string"]}},
      {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "int"}}, "datagen.max": 8},
      {"name": "deep", "type": ["null", {"type": "record", "name": "Deep", "fields": [
        {"name": "x", "type": "long"},
        {"name": "ys", "type": {"type": "array", "items": {"type": "map", "values": "Inner2"}}}
      ]}]}
    ]}},
    {"name": "again", "type": "Inner2"},
    {"name": "empty_list", "type": {"type": "array", "items": "long"}, "datagen.min": 0, "datagen.max": 0}
  ]
}`

func TestAllTypesAgree(t *testing.T) {
	g := mustSchema(t, allTypes, generate.Options{KeyField: "id", KeyCardinality: 50})
	want := arrowRows(t, g, 2, 0, 3000)
	defer want.Release()
	got := avroRows(t, g, 2, 0, 3000)
	defer got.Release()
	requireSameRows(t, want, got)
	for o := range int64(3000) {
		var rec map[string]any
		buf := g.AppendAvro(nil, 2, o)
		if err := avro.NewDecoderForSchema(g.Schema(), bytes.NewReader(buf)).Decode(&rec); err != nil {
			t.Fatalf("hamba decode offset %d: %v", o, err)
		}
		if id := rec["id"].(int); id < 100 || id >= 150 || strconv.Itoa(id) != string(g.AppendKey(nil, 2, o)) {
			t.Fatalf("offset %d: key id %d, AppendKey %s", o, id, g.AppendKey(nil, 2, o))
		}
		if r := rec["dec_fixed"].(*big.Rat); r.Cmp(big.NewRat(-99999999, 10000)) < 0 || r.Cmp(big.NewRat(99999999, 10000)) > 0 {
			t.Fatalf("offset %d: dec_fixed %s out of range", o, r.FloatString(4))
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, shape := range generate.Shapes() {
		t.Run(shape, func(t *testing.T) {
			a := mustShape(t, shape, generate.Options{Seed: 42})
			b := mustShape(t, shape, generate.Options{Seed: 42})
			ra, rb := arrowRows(t, a, 5, 777, 500), arrowRows(t, b, 5, 777, 500)
			defer ra.Release()
			defer rb.Release()
			if !array.RecordEqual(ra, rb) {
				t.Fatal("two generators with the same seed made different rows")
			}
			// Records do not depend on the order they are made in.
			single := arrowRows(t, b, 5, 900, 1)
			defer single.Release()
			if !array.RecordEqual(ra.NewSlice(123, 124), single) {
				t.Fatal("record (5, 900) alone differs from the same record in a run")
			}
			for o := int64(777); o < 1277; o++ {
				if !bytes.Equal(a.AppendAvro(nil, 5, o), b.AppendAvro(nil, 5, o)) {
					t.Fatalf("Avro of (5, %d) differs", o)
				}
			}

			other := arrowRows(t, a, 6, 777, 500)
			defer other.Release()
			seed := mustShape(t, shape, generate.Options{Seed: 43})
			reseeded := arrowRows(t, seed, 5, 777, 500)
			defer reseeded.Release()
			for name, rec := range map[string]arrow.RecordBatch{"another partition": other, "another seed": reseeded} {
				same := 0
				for r := range int64(500) {
					if array.RecordEqual(ra.NewSlice(r, r+1), rec.NewSlice(r, r+1)) {
						same++
					}
				}
				if same > 0 {
					t.Errorf("%s: %d of 500 rows equal", name, same)
				}
			}
		})
	}
}

// TestTextIsStable pins the letters a seed gives: a preloaded topic, a
// benchmark's raw limit and a rerun compare records made by different
// builds, so a faster text loop must draw the same letters.
func TestTextIsStable(t *testing.T) {
	g := mustSchema(t, `{"type":"record","name":"R","fields":[{"name":"s","type":"string","datagen.min":0,"datagen.max":21}]}`,
		generate.Options{Seed: 7})
	want := []string{"fclnwhtogfzgoi", "zosivoafumk", "bvwdkwfgvlsvmduvnlhy", "wmmzvjbyjqg", "wbdceyimkwgfklvvovgv", "lu"}
	for o, w := range want {
		got := g.AppendAvro(nil, 0, int64(o))
		if string(got[1:]) != w { // after the Avro length prefix
			t.Errorf("offset %d: %q, want %q", o, got[1:], w)
		}
	}
}

func TestEventTime(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	g := mustShape(t, generate.ShapeOrders, generate.Options{TimestampStart: start, TimestampStep: time.Minute})
	rec := arrowRows(t, g, 9, 1438, 4)
	defer rec.Release()
	ts := rec.Column(rec.Schema().FieldIndices("ts")[0]).(*array.Timestamp)
	for i := range 4 {
		want := start.Add(time.Duration(1438+i) * time.Minute)
		if got := ts.Value(i).ToTime(arrow.Microsecond); !got.Equal(want) {
			t.Errorf("row %d: ts %s, want %s", i, got, want)
		}
	}
	if g.EventTime(1440) != start.AddDate(0, 0, 1) {
		t.Errorf("offset 1440 at one minute a step is %s, want the next day", g.EventTime(1440))
	}
}

func keyShares(g *generate.Generator, n int) (top float64, distinct int) {
	counts := map[uint64]int{}
	best := 0
	for o := range int64(n) {
		r := g.KeyRank(int(o%4), o)
		counts[r]++
		best = max(best, counts[r])
	}
	return float64(best) / float64(n), len(counts)
}

func TestZipfSkews(t *testing.T) {
	const n = 200_000
	uniform := mustShape(t, generate.ShapeOrders, generate.Options{KeyCardinality: 10000})
	zipf := mustShape(t, generate.ShapeOrders, generate.Options{KeyCardinality: 10000, KeySkew: generate.Zipf, ZipfS: 1.1})
	ut, ud := keyShares(uniform, n)
	zt, zd := keyShares(zipf, n)
	t.Logf("top key share: uniform %.4f (%d keys), zipf %.4f (%d keys)", ut, ud, zt, zd)
	// Expected: uniform 1/10000 plus noise; zipf(1.1) over 10000 keys
	// gives rank 0 about 15 %.
	if ut > 0.001 {
		t.Errorf("uniform top key share %.4f, want about 0.0001", ut)
	}
	if ud != 10000 {
		t.Errorf("uniform drew %d distinct keys of 10000", ud)
	}
	if zt < 0.10 || zt > 0.20 {
		t.Errorf("zipf top key share %.4f, want about 0.15", zt)
	}
	// The hottest key is rank 0: customer_id 1.
	hot := 0
	for o := range int64(10000) {
		if string(zipf.AppendKey(nil, 0, o)) == "1" {
			hot++
		}
	}
	if hot < 1000 {
		t.Errorf("customer_id 1 has %d of 10000 records under zipf", hot)
	}
}

func TestKeyColumnMatchesAppendKey(t *testing.T) {
	for _, shape := range generate.Shapes() {
		g := mustShape(t, shape, generate.Options{KeyCardinality: 20})
		rec := arrowRows(t, g, 1, 0, 500)
		col := rec.Column(rec.Schema().FieldIndices(g.KeyField())[0])
		for i := range col.Len() {
			if got, want := col.ValueStr(i), string(g.AppendKey(nil, 1, int64(i))); got != want {
				t.Fatalf("%s row %d: %s = %s, AppendKey %s", shape, i, g.KeyField(), got, want)
			}
			g.AppendAvro(nil, 1, int64(i))
			if got, want := string(g.AppendLastKey(nil)), string(g.AppendKey(nil, 1, int64(i))); got != want {
				t.Fatalf("%s row %d: AppendLastKey %s, AppendKey %s", shape, i, got, want)
			}
		}
		rec.Release()
	}
}

func TestKeyKinds(t *testing.T) {
	const js = `{"type": "record", "name": "K", "fields": [
		{"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
		{"name": "opt", "type": ["null", "long"], "datagen.null": 1},
		{"name": "name", "type": "string", "datagen.prefix": "acct-", "datagen.suffix": "-eu", "datagen.min": 7},
		{"name": "nested", "type": {"type": "record", "name": "N", "fields": [{"name": "id", "type": "int"}]}}
	]}`
	for field, check := range map[string]func(string) bool{
		"u":         func(k string) bool { return len(k) == 36 && k[14] == '4' },
		"opt":       func(k string) bool { n, err := strconv.Atoi(k); return err == nil && n >= 1 && n <= 5 },
		"name":      func(k string) bool { return strings.HasPrefix(k, "acct-") && strings.HasSuffix(k, "-eu") },
		"nested.id": func(k string) bool { n, err := strconv.Atoi(k); return err == nil && n >= 1 && n <= 5 },
	} {
		g := mustSchema(t, js, generate.Options{KeyField: field, KeyCardinality: 5})
		distinct := map[string]bool{}
		for o := range int64(1000) {
			k := string(g.AppendKey(nil, 0, o))
			if !check(k) {
				t.Fatalf("key field %s: bad key %q", field, k)
			}
			distinct[k] = true
		}
		if len(distinct) != 5 {
			t.Errorf("key field %s: %d distinct keys, want 5", field, len(distinct))
		}
		// A nullable key field is never null, and both encodings agree.
		want, got := arrowRows(t, g, 0, 0, 200), avroRows(t, g, 0, 0, 200)
		requireSameRows(t, want, got)
		want.Release()
		got.Release()
	}
}

func TestNoKey(t *testing.T) {
	g := mustSchema(t, `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}`, generate.Options{})
	if g.KeyField() != "" || g.AppendKey(nil, 0, 0) != nil {
		t.Fatalf("a schema without datagen.key has key field %q", g.KeyField())
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		opts         generate.Options
		want         string
		key          bool
	}{
		{"not a record", `"string"`, generate.Options{}, "want a record", false},
		{"missing key field", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}`, generate.Options{KeyField: "b"}, `key field "b": no such field`, true},
		{"key field of a bad type", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "double"}]}`, generate.Options{KeyField: "a"}, "key field a: type double cannot be a key", true},
		{"int key too wide", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "datagen.min": 2147483000}]}`, generate.Options{KeyField: "a"}, "do not fit an Avro int", true},
		{"zipf exponent", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}`, generate.Options{KeyField: "a", KeySkew: generate.Zipf, ZipfS: -1}, "zipf exponent must be positive", false},
		{"unknown skew", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}`, generate.Options{KeyField: "a", KeySkew: "pareto"}, `unknown key skew "pareto"`, false},
		{"key under a nullable record", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", {"type": "record", "name": "A", "fields": [{"name": "id", "type": "long"}]}]}]}`, generate.Options{KeyField: "a.id"}, "inside a, which may be null", true},
		{"key inside an array", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "long"}}]}`, generate.Options{KeyField: "a"}, "key field a: type array cannot be a key", true},
		{"wide union", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "long", "string"]}]}`, generate.Options{}, "field a: union", false},
		{"bad hint", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long", "datagen.min": "ten"}]}`, generate.Options{}, "field a: property datagen.min", false},
		{"null out of range", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "long"], "datagen.null": 2}]}`, generate.Options{}, "must be between 0 and 1", false},
		{"min above max", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long", "datagen.min": 5, "datagen.max": 1}]}`, generate.Options{}, "datagen.min 5 is above datagen.max 1", false},
		{"unknown kind", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "string", "datagen.kind": "email"}]}`, generate.Options{}, `unknown kind "email"`, false},
		{"decimal range", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}, "datagen.max": 100000}]}`, generate.Options{}, "decimal(4,2) cannot hold", false},
		{"negative step", `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}`, generate.Options{TimestampStep: -time.Second}, "negative", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := generate.Parse(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			_, err = generate.New(s, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if errors.Is(err, generate.ErrKeyField) != tc.key {
				t.Errorf("errors.Is(%v, ErrKeyField) = %v", err, !tc.key)
			}
		})
	}
	if _, err := generate.ShapeSchema("../x"); err == nil {
		t.Error("ShapeSchema accepted a path")
	}
	if _, err := generate.ForShape("pets", generate.Options{}); err == nil || !strings.Contains(err.Error(), "clickstream, orders") {
		t.Errorf("unknown shape: %v", err)
	}
}

// The Arrow path allocates nothing once the builders have room.
func TestAppendArrowDoesNotAllocate(t *testing.T) {
	for _, shape := range generate.Shapes() {
		g := mustShape(t, shape, generate.Options{KeySkew: generate.Zipf})
		b := array.NewRecordBuilder(memory.DefaultAllocator, g.ArrowSchema())
		// Warm the builders (children included) past what the runs need.
		for o := range int64(5000) {
			g.AppendArrow(b.Fields(), 0, o)
		}
		b.NewRecordBatch().Release()
		for o := range int64(5000) {
			g.AppendArrow(b.Fields(), 0, o)
		}
		b.NewRecordBatch().Release()
		b.Reserve(4000)
		o := int64(0)
		if n := testing.AllocsPerRun(1000, func() { g.AppendArrow(b.Fields(), 1, o); o++ }); n != 0 {
			t.Errorf("%s: AppendArrow allocates %v times per record", shape, n)
		}
		buf := make([]byte, 0, 4096)
		if n := testing.AllocsPerRun(1000, func() { buf = g.AppendAvro(buf[:0], 1, o); o++ }); n != 0 {
			t.Errorf("%s: AppendAvro allocates %v times per record", shape, n)
		}
		if n := testing.AllocsPerRun(1000, func() { buf = g.AppendKey(buf[:0], 1, o); o++ }); n != 0 {
			t.Errorf("%s: AppendKey allocates %v times per record", shape, n)
		}
		b.Release()
	}
}
