package iceberg

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// The sink writes pages of lake.PageSizeBytes unless the table's
// properties or the write-props set another size; the table's stored
// properties do not change.
func TestPageSize(t *testing.T) {
	const (
		mib = 1 << 20
		// arrow-go closes a page at the first write batch (of
		// write.parquet.page-row-limit values) that takes it past
		// the size: batches of 1,000 names are 104,000 bytes.
		writeBatch = 1000
		slack      = writeBatch * 104
	)
	noDict := prefixWriteProps + "parquet.enable.dictionary"
	rowLimit := prefixWriteProps + table.ParquetPageRowLimitKey
	for _, tc := range []struct {
		name    string
		cfg     map[string]string
		maxPage int // the largest uncompressed data page allowed
		pages   int // at least this many data pages in the name column
	}{
		{"default", map[string]string{noDict: "false", rowLimit: fmt.Sprint(writeBatch)}, lake.PageSizeBytes, 6},
		{"table property", map[string]string{noDict: "false", rowLimit: fmt.Sprint(writeBatch),
			prefixCreateProps + table.ParquetPageSizeBytesKey: fmt.Sprint(mib)}, mib, 2},
		{"write-props", map[string]string{noDict: "false", rowLimit: fmt.Sprint(writeBatch),
			prefixWriteProps + table.ParquetPageSizeBytesKey: fmt.Sprint(mib)}, mib, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg)
			tk := f.open(1)
			prepare(t, tk, 1, schemaV1)
			// 20,000 distinct names of 100 bytes (104 plain): 2 MB.
			pad := strings.Repeat("x", 94)
			batch := batchRows(schemaV1, 1, "p", 0, 20_000, func(col string, off int64, b array.Builder) bool {
				if col != "name" {
					return false
				}
				b.(*array.StringBuilder).Append(fmt.Sprintf("%06d%s", off, pad))
				return true
			})
			step(t, tk, 1, batch)
			tbl := f.load("db.events")
			if _, ok := tbl.Properties()[table.ParquetPageSizeBytesKey]; ok != strings.HasPrefix(tc.name, "table") {
				t.Errorf("table properties %v: the sink's page size must not be stored", tbl.Properties())
			}
			sizes := namePageSizes(t, tbl)
			if len(sizes) < tc.pages {
				t.Errorf("%d data pages (%v), want at least %d", len(sizes), sizes, tc.pages)
			}
			largest := 0
			for _, s := range sizes {
				largest = max(largest, s)
			}
			if largest > tc.maxPage+slack {
				t.Errorf("largest data page %d bytes, want at most %d (%v)", largest, tc.maxPage, sizes)
			}
			if tc.maxPage == mib && largest <= lake.PageSizeBytes+slack {
				t.Errorf("largest data page %d bytes: the %d-byte page size was not used (%v)", largest, mib, sizes)
			}
		})
	}
}

// namePageSizes returns the uncompressed sizes of the data pages of
// column "name" in tbl's data files.
func namePageSizes(t *testing.T, tbl *table.Table) []int {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatal("no data files")
	}
	var sizes []int
	for _, task := range tasks {
		path := strings.TrimPrefix(task.File.FilePath(), "file://")
		r, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		col := r.MetaData().Schema.ColumnIndexByName("name")
		if col < 0 {
			t.Fatalf("%s has no column name", path)
		}
		for g := range r.NumRowGroups() {
			pr, err := r.RowGroup(g).GetColumnPageReader(col)
			if err != nil {
				t.Fatal(err)
			}
			for pr.Next() {
				if dp, ok := pr.Page().(file.DataPage); ok {
					sizes = append(sizes, int(dp.UncompressedSize()))
				}
			}
			if err := pr.Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return sizes
}

// The writers share one write view per table the sink holds, made anew
// once a commit brings a newer table.
func TestWriteTableIsShared(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(2)
	prepare(t, tk, 1, schemaV1)
	st := tk.knownTable("db.events")
	before := st.view().tbl
	first, err := st.writeTable(before, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := st.writeTable(before, nil); err != nil || again != first {
		t.Fatalf("a second writer got %p (%v), want the shared view %p", again, err, first)
	}
	if got := first.Properties()[table.ParquetPageSizeBytesKey]; got != fmt.Sprint(lake.PageSizeBytes) {
		t.Errorf("view page size %q, want %d", got, lake.PageSizeBytes)
	}
	step(t, tk, 1, batchV1("p", 0, 10))
	after := st.view().tbl
	if after == before {
		t.Fatal("the commit did not bring a newer table")
	}
	next, err := st.writeTable(after, nil)
	if err != nil {
		t.Fatal(err)
	}
	if next == first || next.Metadata().CurrentSnapshot() == nil {
		t.Errorf("after the commit the writers got %p, want a view of the committed table", next)
	}
}
