package iceberg

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
)

// takeTestBatch has a column of every kind takeRows copies by hand, and
// some it hands to compute.Take, each with nulls at different rows.
func takeTestBatch(t testing.TB, mem memory.Allocator, n int) arrow.RecordBatch {
	t.Helper()
	fields := []arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
		{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
		{Name: "str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "uuid", Type: extensions.NewUUIDType(), Nullable: true},
		{Name: "bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "list", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "large", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := range n {
		null := func(every int) bool { return i%every == every-1 }
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 1_000_003)
		appendOr(b.Field(1), null(3), func(x array.Builder) { x.(*array.Int32Builder).Append(int32(-i)) })
		appendOr(b.Field(2), null(4), func(x array.Builder) { x.(*array.Int16Builder).Append(int16(i)) })
		appendOr(b.Field(3), null(5), func(x array.Builder) { x.(*array.Float64Builder).Append(float64(i) / 7) })
		appendOr(b.Field(4), null(6), func(x array.Builder) { x.(*array.TimestampBuilder).Append(arrow.Timestamp(i * 999)) })
		appendOr(b.Field(5), null(7), func(x array.Builder) { x.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 101)) })
		appendOr(b.Field(6), null(2), func(x array.Builder) {
			x.(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), byte(i >> 8), 7})
		})
		appendOr(b.Field(7), null(3), func(x array.Builder) { x.(*array.StringBuilder).Append(strings.Repeat("x", i%11)) })
		appendOr(b.Field(8), null(5), func(x array.Builder) { x.(*array.BinaryBuilder).Append([]byte(fmt.Sprint(i))) })
		appendOr(b.Field(9), null(4), func(x array.Builder) {
			x.(*extensions.UUIDBuilder).Append(uuid.UUID{byte(i), byte(i >> 8), 1, 2, 3})
		})
		appendOr(b.Field(10), null(3), func(x array.Builder) { x.(*array.BooleanBuilder).Append(i%2 == 0) })
		appendOr(b.Field(11), null(6), func(x array.Builder) {
			lb := x.(*array.ListBuilder)
			lb.Append(true)
			for j := range i % 4 {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(j))
			}
		})
		appendOr(b.Field(12), null(2), func(x array.Builder) { x.(*array.LargeStringBuilder).Append(fmt.Sprint(-i)) })
		appendOr(b.Field(13), null(5), func(x array.Builder) { x.(*array.Int8Builder).Append(int8(i)) })
	}
	return b.NewRecordBatch()
}

func appendOr(b array.Builder, null bool, value func(array.Builder)) {
	if null {
		b.AppendNull()
		return
	}
	value(b)
}

// TestTakeRowsMatchesComputeTake: the hand-copied columns hold exactly
// what compute.Take gives, nulls included, from whole batches and from
// slices (non-zero offsets), with and without nulls among the rows taken.
func TestTakeRowsMatchesComputeTake(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := compute.WithAllocator(context.Background(), mem)
	whole := takeTestBatch(t, mem, 300)
	defer whole.Release()
	sliced := whole.NewSlice(37, 290)
	defer sliced.Release()

	for _, c := range []struct {
		name string
		rec  arrow.RecordBatch
		rows []int32
	}{
		{"every other row", whole, stride(0, 300, 2)},
		{"every third row of a slice", sliced, stride(1, 253, 3)},
		{"rows without nulls", whole, []int32{0, 60, 120, 180, 240}},
		{"one row", sliced, []int32{200}},
		{"first and last", whole, []int32{0, 299}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := takeRows(ctx, c.rec, c.rows)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			idx := indexArray(c.rows)
			defer idx.Release()
			want, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(c.rec), compute.NewDatumWithoutOwning(idx))
			if err != nil {
				t.Fatal(err)
			}
			wantRec := want.(*compute.RecordDatum).Value
			defer wantRec.Release()
			if got.NumRows() != int64(len(c.rows)) {
				t.Fatalf("%d rows, want %d", got.NumRows(), len(c.rows))
			}
			for i := range int(got.NumCols()) {
				g, w := got.Column(i), wantRec.Column(i)
				if !arrow.TypeEqual(g.DataType(), w.DataType()) || !array.Equal(g, w) || g.NullN() != w.NullN() {
					t.Errorf("column %s: got %v (%d nulls), want %v (%d nulls)",
						got.ColumnName(i), g, g.NullN(), w, w.NullN())
				}
			}
		})
	}
}

func stride(from, to, step int) []int32 {
	var out []int32
	for i := from; i < to; i += step {
		out = append(out, int32(i))
	}
	return out
}

// BenchmarkTakeRows takes every other row of a 2,048-row batch of the
// test's flat columns, as a hash partitioner over two writers does.
//
//	go test -run - -bench TakeRows ./plugins/iceberg/
func BenchmarkTakeRows(b *testing.B) {
	all := takeTestBatch(b, memory.DefaultAllocator, 2048)
	defer all.Release()
	// The flat columns only: a bench event's kinds.
	rec := array.NewRecordBatch(arrow.NewSchema(all.Schema().Fields()[:10], nil), all.Columns()[:10], all.NumRows())
	defer rec.Release()
	rows := stride(0, 2048, 2)
	ctx := context.Background()
	b.Run("takeRows", func(b *testing.B) {
		for b.Loop() {
			out, err := takeRows(ctx, rec, rows)
			if err != nil {
				b.Fatal(err)
			}
			out.Release()
		}
	})
	b.Run("compute.Take", func(b *testing.B) {
		idx := indexArray(rows)
		defer idx.Release()
		for b.Loop() {
			out, err := compute.Take(sequential(ctx), *compute.DefaultTakeOptions(),
				compute.NewDatumWithoutOwning(rec), compute.NewDatumWithoutOwning(idx))
			if err != nil {
				b.Fatal(err)
			}
			out.(*compute.RecordDatum).Value.Release()
		}
	})
}
