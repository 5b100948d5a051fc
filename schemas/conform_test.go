package schemas

import (
	"bytes"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// decodeRows decodes rows of an Avro record schema into a batch.
func decodeRows(t *testing.T, mem memory.Allocator, schemaText string, rows ...map[string]any) arrow.RecordBatch {
	t.Helper()
	s := mustParse(t, schemaText)
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, len(rows))
	for i, r := range rows {
		payloads[i] = marshal(t, s, r)
	}
	rec, bad, err := dec.DecodeBatch(mem, payloads)
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	return rec
}

func arrowOf(t *testing.T, schemaText string) *arrow.Schema {
	t.Helper()
	s, err := ArrowSchema(mustParse(t, schemaText))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformFillsAndWidens(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	old := rec(
		`{"name":"n","type":"int"}`,
		`{"name":"f","type":["null","float"]}`,
		`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}}`,
		`{"name":"s","type":["null",{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}]}`,
		`{"name":"l","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"sku","type":"string"}]}}}`,
		`{"name":"m","type":{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"v","type":"int"}]}}}`,
	)
	evolved := rec(
		`{"name":"id","type":["null","long"]}`,
		`{"name":"n","type":"long"}`,
		`{"name":"f","type":["null","double"]}`,
		`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}`,
		`{"name":"s","type":["null",{"type":"record","name":"S","fields":[{"name":"x","type":["null","long"]},{"name":"y","type":["null","string"]}]}]}`,
		`{"name":"l","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"sku","type":"string"},{"name":"qty","type":["null","int"]}]}}}`,
		`{"name":"m","type":{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"v","type":"long"},{"name":"w","type":["null","long"]}]}}}`,
	)
	// The target is the table's view: reordered (id first), map values nullable.
	target, err := ArrowForTable(mustIceberg(t, evolved))
	if err != nil {
		t.Fatal(err)
	}
	row := func(i int) map[string]any {
		r := map[string]any{
			"n": i, "f": map[string]any{"float": float32(i) + 0.5}, "d": ratOf(int64(i*100+1), 100),
			"s": map[string]any{"t.S": map[string]any{"x": i}},
			"l": []any{map[string]any{"sku": "a"}, map[string]any{"sku": "b"}},
			"m": map[string]any{"k": map[string]any{"v": i * 10}},
		}
		if i == 1 {
			r["f"], r["s"] = nil, nil
		}
		return r
	}
	in := decodeRows(t, mem, old, row(0), row(1), row(2), row(3))
	defer in.Release()
	// Slice so the arrays have an offset, as batches cut from a larger one do.
	sliced := in.NewSlice(1, 4)
	defer sliced.Release()

	out, err := Conform(sliced, target, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Schema().Equal(target) || out.NumRows() != 3 {
		t.Fatalf("schema %s rows %d", out.Schema(), out.NumRows())
	}
	col := func(name string) arrow.Array { return out.Column(out.Schema().FieldIndices(name)[0]) }
	if col("id").NullN() != 3 {
		t.Errorf("id: %d nulls, want 3", col("id").NullN())
	}
	n := col("n").(*array.Int64)
	if n.Value(0) != 1 || n.Value(2) != 3 {
		t.Errorf("n = %v", n)
	}
	f := col("f").(*array.Float64)
	if !f.IsNull(0) || f.Value(1) != 2.5 {
		t.Errorf("f = %v", f)
	}
	d := col("d").(*array.Decimal128)
	if d.Value(0) != decimal128.FromI64(101) || d.DataType().(*arrow.Decimal128Type).Precision != 9 {
		t.Errorf("d = %v (%s)", d, d.DataType())
	}
	s := col("s").(*array.Struct)
	if !s.IsNull(0) || s.IsNull(1) {
		t.Errorf("s validity = %v", s)
	}
	if x := s.Field(0).(*array.Int64); x.Value(1) != 2 || x.Value(2) != 3 {
		t.Errorf("s.x = %v", x)
	}
	if y := s.Field(1); y.NullN() != y.Len() || y.Len() < 3 {
		t.Errorf("s.y = %v", y)
	}
	l := col("l").(*array.List)
	start, end := l.ValueOffsets(2)
	items := l.ListValues().(*array.Struct)
	if end-start != 2 || items.Field(0).(*array.String).Value(int(start)) != "a" || !items.Field(1).IsNull(int(start)) {
		t.Errorf("l[2] = %v", l)
	}
	m := col("m").(*array.Map)
	ms, _ := m.ValueOffsets(2)
	vals := m.Items().(*array.Struct)
	if vals.Field(0).(*array.Int64).Value(int(ms)) != 30 || !vals.Field(1).IsNull(int(ms)) {
		t.Errorf("m[2] = %v", m)
	}
	// The batch survives an Arrow IPC round trip unchanged (consistent
	// offsets, lengths and children).
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(out.Schema()), ipc.WithAllocator(mem))
	if err := w.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(&buf, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() || !array.RecordEqual(r.RecordBatch(), out) {
		t.Errorf("IPC round trip differs: %v", r.Err())
	}
}

func TestConformSharesUnchangedColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	text := rec(`{"name":"a","type":"long"}`, `{"name":"b","type":"string"}`)
	in := decodeRows(t, mem, text, map[string]any{"a": int64(1), "b": "x"})
	defer in.Release()
	out, err := Conform(in, in.Schema(), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out.Column(0) != in.Column(0) {
		t.Error("identical column was copied")
	}
	// A target that only adds field ids shares the buffers too.
	target, err := ArrowForTable(mustIceberg(t, text))
	if err != nil {
		t.Fatal(err)
	}
	withIDs, err := Conform(in, target, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer withIDs.Release()
	if withIDs.Column(1).Data().Buffers()[2] != in.Column(1).Data().Buffers()[2] {
		t.Error("string data was copied")
	}
}

func TestConformErrors(t *testing.T) {
	tests := []struct {
		name   string
		batch  string
		row    map[string]any
		target string
		want   string
	}{
		{"column not in target", rec(`{"name":"a","type":"long"}`, `{"name":"b","type":"long"}`), map[string]any{"a": int64(1), "b": int64(2)},
			rec(`{"name":"a","type":"long"}`), "column b is not in the target"},
		{"nested field not in target", rec(`{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"},{"name":"y","type":"int"}]}}`),
			map[string]any{"s": map[string]any{"x": 1, "y": 2}},
			rec(`{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}}`), "field s.y is not in the target"},
		{"required column missing", rec(`{"name":"a","type":"long"}`), map[string]any{"a": int64(1)},
			rec(`{"name":"a","type":"long"}`, `{"name":"b","type":"long"}`), "column b is required"},
		{"required column has nulls", rec(`{"name":"a","type":["null","long"]}`), map[string]any{"a": nil},
			rec(`{"name":"a","type":"long"}`), "has 1 nulls"},
		{"narrowing", rec(`{"name":"a","type":"long"}`), map[string]any{"a": int64(1)},
			rec(`{"name":"a","type":"int"}`), "column a: batch has int64, target has int32"},
		{"nested type change", rec(`{"name":"l","type":{"type":"array","items":"string"}}`), map[string]any{"l": []any{"x"}},
			rec(`{"name":"l","type":{"type":"array","items":"long"}}`), "column l.element: batch has utf8, target has int64"},
		{"decimal scale", rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}}`), map[string]any{"d": ratOf(1, 100)},
			rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":3}}`), "column d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			in := decodeRows(t, mem, tt.batch, tt.row)
			defer in.Release()
			out, err := Conform(in, arrowOf(t, tt.target), mem)
			if err == nil {
				out.Release()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func ratOf(num, den int64) *big.Rat { return big.NewRat(num, den) }
