package arrowipc

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func record(n int) arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(strings.Repeat("v", 100))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	return b.NewRecordBatch()
}

func TestRecordBatchRoundTrip(t *testing.T) {
	rec := record(1000)
	defer rec.Release()
	data, err := EncodeRecordBatch(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecordBatch(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !array.RecordEqual(rec, got) {
		t.Error("decoded record differs")
	}

	// A slice is written with only its rows.
	half := rec.NewSlice(500, 1000)
	defer half.Release()
	hdata, err := EncodeRecordBatch(half)
	if err != nil {
		t.Fatal(err)
	}
	if len(hdata) > len(data)*6/10 {
		t.Errorf("half the rows encode to %d bytes of %d", len(hdata), len(data))
	}
	hgot, err := DecodeRecordBatch(hdata, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hgot.Release()
	if hgot.NumRows() != 500 || hgot.Column(1).(*array.Int64).Value(0) != 500 {
		t.Errorf("decoded slice: %d rows, first n %d", hgot.NumRows(), hgot.Column(1).(*array.Int64).Value(0))
	}

	if _, err := DecodeRecordBatch(nil, nil); err == nil {
		t.Error("empty input decoded")
	}
	if _, err := DecodeRecordBatch(data[:len(data)/2], nil); err == nil {
		t.Error("truncated input decoded")
	}
}

func TestSchemaRoundTrip(t *testing.T) {
	rec := record(1)
	defer rec.Release()
	data, err := EncodeSchema(rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSchema(data)
	if err != nil || !s.Equal(rec.Schema()) {
		t.Fatalf("schema round trip: %v, %v", s, err)
	}
	if s, err := DecodeSchema(nil); s != nil || err != nil {
		t.Errorf("empty schema: %v, %v", s, err)
	}
	// A schema-only stream decodes as a batch with no rows.
	empty, err := DecodeRecordBatch(data, nil)
	if err != nil || empty.NumRows() != 0 {
		t.Errorf("schema-only stream as a batch: %v, %v", empty, err)
	}
}

func TestProject(t *testing.T) {
	rec := record(1000)
	defer rec.Release()
	data, err := EncodeRecordBatch(rec)
	if err != nil {
		t.Fatal(err)
	}
	// One column of two: only its bytes travel.
	out, rows, err := Project(data, []string{"n", "missing"})
	if err != nil || rows != 1000 {
		t.Fatalf("project to n: %d rows, %v", rows, err)
	}
	got, err := DecodeRecordBatch(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.NumCols() != 1 || got.ColumnName(0) != "n" || got.NumRows() != 1000 ||
		!array.Equal(got.Column(0), rec.Column(1)) {
		t.Errorf("projected batch: %v", got)
	}
	if len(out) > len(data)/5 {
		t.Errorf("the int64 column of %d rows encodes to %d of the whole batch's %d bytes", rows, len(out), len(data))
	}
	// The batch's order wins over the names' order; all columns: b itself.
	out, _, err = Project(data, []string{"n", "s"})
	if err != nil || &out[0] != &data[0] {
		t.Errorf("every column kept: a copy (%v)", err)
	}
	// No column at all: no stream, the row count still.
	out, rows, err = Project(data, nil)
	if err != nil || out != nil || rows != 1000 {
		t.Errorf("no columns: %d bytes, %d rows, %v", len(out), rows, err)
	}
	if _, _, err := Project(data[:len(data)/2], []string{"n"}); err == nil {
		t.Error("a truncated stream projected")
	}
}

// BenchmarkProject projects a 5,000-row batch of ~120 bytes per row to
// its int64 column, as the host does for a partitioner that declares one
// column.
func BenchmarkProject(b *testing.B) {
	rec := record(5000)
	defer rec.Release()
	data, err := EncodeRecordBatch(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := Project(data, []string{"n"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecordBatch decodes a 5,000-row batch of ~120 bytes per
// row, as the sink and partitioner servers do for every batch.
func BenchmarkDecodeRecordBatch(b *testing.B) {
	rec := record(5000)
	defer rec.Release()
	data, err := EncodeRecordBatch(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		got, err := DecodeRecordBatch(data, nil)
		if err != nil {
			b.Fatal(err)
		}
		got.Release()
	}
}
