package iceberg

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
)

// header is one Kafka header; a nil value is a null header.
type header struct {
	key   string
	value []byte
}

// keyed are the keys and headers of offsets 0..4: an empty key, a null
// key, a binary key; headers repeated, null, empty, binary, none.
var keyed = []struct {
	key     []byte
	headers []header
}{
	{[]byte{}, []header{{"trace", []byte("a")}, {"trace", []byte("b")}, {"nullh", nil}, {"emptyh", []byte{}}, {"bin", []byte{0x00, 0xff}}}},
	{nil, nil},
	{[]byte{0x00, 0xff}, []header{{"z", []byte("1")}, {"a", []byte("2")}}},
	{[]byte("k"), []header{}},
	{nil, []header{{"only", nil}}},
}

// keyedBatch is a Kafka-source batch of schemaV1 rows with keyed's keys
// and headers as __key and __headers (map<string, binary>, as the kafka
// source builds them).
func keyedBatch(t *testing.T) sdk.Batch {
	t.Helper()
	fields := append(append([]arrow.Field(nil), schemaV1.Fields()...),
		arrow.Field{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
		arrow.Field{Name: sdk.ColumnHeaders, Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.Binary), Nullable: true})
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for off, k := range keyed {
		b.Field(0).(*array.Int64Builder).Append(int64(off))
		for i := 1; i < len(schemaV1.Fields()); i++ {
			b.Field(i).AppendNull()
		}
		n := len(schemaV1.Fields())
		b.Field(n).(*array.Int64Builder).Append(int64(off))
		if k.key == nil {
			b.Field(n + 1).AppendNull()
		} else {
			b.Field(n + 1).(*array.BinaryBuilder).Append(k.key)
		}
		mb := b.Field(n + 2).(*array.MapBuilder)
		if len(k.headers) == 0 { // the kafka source: no headers is null
			mb.AppendNull()
			continue
		}
		mb.Append(true)
		for _, h := range k.headers {
			mb.KeyBuilder().(*array.StringBuilder).Append(h.key)
			if h.value == nil {
				mb.ItemBuilder().AppendNull()
			} else {
				mb.ItemBuilder().(*array.BinaryBuilder).Append(h.value)
			}
		}
	}
	return sdk.Batch{Partition: "p", From: 0, Next: int64(len(keyed)), SchemaID: 1, Records: b.NewRecordBatch()}
}

// showKey and showHeaders print a key and headers so that null, empty
// and bytes differ: null, "" and hex.
func showKey(isNull bool, b []byte) string {
	if isNull {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

func showHeaders(hs []header) string {
	if len(hs) == 0 {
		return "null"
	}
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.key+"="+showKey(h.value == nil, h.value))
	}
	return strings.Join(parts, ",")
}

// With iceberg.tables.record-key-enabled and record-headers-enabled the
// table keeps each record's key and headers as the source gave them: an
// empty key apart from a null one, headers in order with a repeated key
// twice, a null header value null and an empty one empty.
func TestRecordKeyAndHeaders(t *testing.T) {
	f := newFixture(t, map[string]string{keyRecordKey: "true", keyRecordHeaders: "true"})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, keyedBatch(t))

	tbl := f.load("db.events")
	var cols []string
	for _, c := range tbl.Schema().Fields() {
		cols = append(cols, c.Name+" "+c.Type.String())
	}
	last := strings.Join(cols[len(cols)-2:], "; ")
	if !strings.HasPrefix(last, "__key binary; __headers list<struct<") || !strings.Contains(last, "key: required string") ||
		!strings.Contains(last, "value: optional binary") {
		t.Fatalf("columns end with %s, want __key binary and __headers list<struct<key, value>>", last)
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	seen := 0
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				t.Fatalf("no column %s in %s", name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		offs := col(colSourceOffset).(*array.Int64)
		keys := col(sdk.ColumnKey).(*array.Binary)
		hdrs := col(sdk.ColumnHeaders).(*array.List)
		entries := hdrs.ListValues().(*array.Struct)
		hk, hv := entries.Field(0).(*array.String), entries.Field(1).(*array.Binary)
		for i := range int(rec.NumRows()) {
			want := keyed[offs.Value(i)]
			if got, w := showKey(keys.IsNull(i), keys.Value(i)), showKey(want.key == nil, want.key); got != w {
				t.Errorf("offset %d: __key %s, want %s", offs.Value(i), got, w)
			}
			var got []header
			if !hdrs.IsNull(i) {
				from, to := hdrs.ValueOffsets(i)
				for j := from; j < to; j++ {
					h := header{key: hk.Value(int(j))}
					if !hv.IsNull(int(j)) {
						h.value = append([]byte{}, hv.Value(int(j))...)
					}
					got = append(got, h)
				}
			}
			if g, w := showHeaders(got), showHeaders(want.headers); g != w {
				t.Errorf("offset %d: __headers %s, want %s", offs.Value(i), g, w)
			}
			seen++
		}
	}
	if seen != len(keyed) {
		t.Fatalf("%d rows, want %d", seen, len(keyed))
	}
}

// Without the keys the table has neither column, as before; turned on
// later, they are added as optional columns by evolution.
func TestRecordKeyAndHeadersOff(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, keyedBatch(t))
	for _, c := range f.load("db.events").Schema().Fields() {
		if c.Name == sdk.ColumnKey || c.Name == sdk.ColumnHeaders {
			t.Fatalf("column %s without %s / %s", c.Name, keyRecordKey, keyRecordHeaders)
		}
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, int64(len(keyed))}})

	f.cfg[keyRecordKey], f.cfg[keyRecordHeaders] = "true", "true"
	tk = f.open(1)
	changes := strings.Join(prepare(t, tk, 1, schemaV1), "|")
	if !strings.Contains(changes, "add optional column __key") || !strings.Contains(changes, "add optional column __headers") {
		t.Fatalf("changes when turned on: %q", changes)
	}
}
