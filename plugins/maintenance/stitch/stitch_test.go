package stitch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// parquetFile writes ids [from, to) in row groups of rowsPerGroup, with a
// dictionary-encoded string column that is null on every seventh row.
func parquetFile(t *testing.T, schema *arrow.Schema, from, to, rowsPerGroup int, codec compress.Compression) []byte {
	t.Helper()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(codec), parquet.WithDictionaryDefault(true), parquet.WithStats(true))
	w, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for start := from; start < to; start += rowsPerGroup {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := start; i < min(start+rowsPerGroup, to); i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if len(schema.Fields()) > 1 {
				if i%7 == 0 {
					b.Field(1).AppendNull()
				} else {
					b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d", i%13))
				}
			}
		}
		rec := b.NewRecordBatch()
		w.NewRowGroup()
		if err := w.WriteBuffered(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rowsOf reads a Parquet file back with arrow-go's reader: its ids and
// names in order.
func rowsOf(t *testing.T, data []byte) ([]int64, []string) {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1000}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var ids []int64
	var names []string
	tr := array.NewTableReader(tbl, 1000)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		idc := rec.Column(0).(*array.Int64)
		nc := rec.Column(1).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			ids = append(ids, idc.Value(i))
			if nc.IsNull(i) {
				names = append(names, "<null>")
			} else {
				names = append(names, nc.Value(i))
			}
		}
	}
	return ids, names
}

func footer(t *testing.T, data []byte) *metadata.FileMetaData {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return rdr.MetaData()
}

func TestFilesJoinsRowGroupsUnchanged(t *testing.T) {
	a := parquetFile(t, testSchema, 0, 2500, 1000, compress.Codecs.Zstd)
	b := parquetFile(t, testSchema, 2500, 2600, 1000, compress.Codecs.Snappy)
	c := parquetFile(t, testSchema, 2600, 5000, 800, compress.Codecs.Zstd)

	var out bytes.Buffer
	res, err := Files(&out, []Source{{Name: "a", R: bytes.NewReader(a)}, {Name: "b", R: bytes.NewReader(b)}, {Name: "c", R: bytes.NewReader(c)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 5000 || res.RowGroups != 3+1+3 || res.Bytes != int64(out.Len()) {
		t.Fatalf("result %+v for %d bytes; want 5000 rows in 7 row groups", res, out.Len())
	}

	ids, names := rowsOf(t, out.Bytes())
	if len(ids) != 5000 {
		t.Fatalf("read %d rows back, want 5000", len(ids))
	}
	for i, id := range ids {
		want := "<null>"
		if i%7 != 0 {
			want = fmt.Sprintf("name-%d", i%13)
		}
		if id != int64(i) || names[i] != want {
			t.Fatalf("row %d: got (%d, %s), want (%d, %s)", i, id, names[i], i, want)
		}
	}

	// Each row group keeps its statistics, codec and rows; offsets point
	// into the new file.
	md := footer(t, out.Bytes())
	var wantRows = []int64{1000, 1000, 500, 100, 800, 800, 800}
	var minID = []int64{0, 1000, 2000, 2500, 2600, 3400, 4200}
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		if rg.NumRows() != wantRows[i] {
			t.Fatalf("row group %d: %d rows, want %d", i, rg.NumRows(), wantRows[i])
		}
		cc, err := rg.ColumnChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasMinMax() {
			t.Fatalf("row group %d: no statistics (%v)", i, err)
		}
		if got := st.(*metadata.Int64Statistics).Min(); got != minID[i] {
			t.Fatalf("row group %d: min id %d, want %d", i, got, minID[i])
		}
		if want := map[bool]compress.Compression{true: compress.Codecs.Snappy, false: compress.Codecs.Zstd}[i == 3]; cc.Compression() != want {
			t.Fatalf("row group %d: codec %v, want %v", i, cc.Compression(), want)
		}
		if int(*md.RowGroups[i].Ordinal) != i {
			t.Fatalf("row group %d has ordinal %d", i, *md.RowGroups[i].Ordinal)
		}
	}
}

// TestFilesCopiesLeadingRowGroups: a source's RowGroups copies only its
// first row groups; more than it has is an error naming it.
func TestFilesCopiesLeadingRowGroups(t *testing.T) {
	a := parquetFile(t, testSchema, 0, 2500, 1000, compress.Codecs.Zstd) // 1000, 1000, 500
	b := parquetFile(t, testSchema, 2500, 2600, 1000, compress.Codecs.Zstd)
	var out bytes.Buffer
	res, err := Files(&out, []Source{{Name: "a", R: bytes.NewReader(a), RowGroups: 2}, {Name: "b", R: bytes.NewReader(b)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 2100 || res.RowGroups != 3 {
		t.Fatalf("result %+v; want a's first 2000 rows and b's 100 in 3 row groups", res)
	}
	ids, _ := rowsOf(t, out.Bytes())
	for i, id := range ids {
		want := int64(i)
		if i >= 2000 {
			want = int64(i + 500) // b's rows follow a's first two row groups
		}
		if id != want {
			t.Fatalf("row %d: id %d, want %d", i, id, want)
		}
	}
	_, err = Files(&bytes.Buffer{}, []Source{{Name: "a", R: bytes.NewReader(a), RowGroups: 4}})
	if err == nil || !strings.Contains(err.Error(), "a has 3 row groups") {
		t.Fatalf("4 of a's 3 row groups: %v", err)
	}
}

func TestFilesRefusesWhatItCannotCopy(t *testing.T) {
	a := parquetFile(t, testSchema, 0, 100, 100, compress.Codecs.Zstd)
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := parquetFile(t, other, 100, 200, 100, compress.Codecs.Zstd)

	var indexed bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithPageIndexEnabled(true))
	w, err := pqarrow.NewFileWriter(testSchema, &indexed, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	bld.Field(0).(*array.Int64Builder).Append(1)
	bld.Field(1).(*array.StringBuilder).Append("x")
	rec := bld.NewRecordBatch()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	for name, second := range map[string][]byte{"another schema": b, "page indexes": indexed.Bytes()} {
		var out bytes.Buffer
		_, err := Files(&out, []Source{{Name: "a", R: bytes.NewReader(a)}, {Name: "b", R: bytes.NewReader(second)}})
		if !errors.Is(err, ErrIncompatible) {
			t.Fatalf("%s: got %v, want ErrIncompatible", name, err)
		}
		if out.Len() != 0 {
			t.Fatalf("%s: wrote %d bytes before refusing", name, out.Len())
		}
	}
}
