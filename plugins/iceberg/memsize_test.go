package iceberg

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/floehq/floe/sdk"
)

// TestRecordBytes: a record's size counts its own rows, so a slice of a
// batch weighs its share, not the whole batch's buffers.
func TestRecordBytes(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range 1000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", 100))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	whole := recordBytes(rec)
	if want := int64(1000*8 + 125 + 1001*4 + 100_000 + 125); whole != want {
		t.Errorf("1,000 rows: %d bytes, want %d", whole, want)
	}
	half := rec.NewSlice(500, 1000)
	defer half.Release()
	if got := recordBytes(half); got < whole/2-200 || got > whole/2+200 {
		t.Errorf("half the rows: %d bytes of %d", got, whole)
	}
}

// TestRowGroupsAtTheMemoryBudget: with a share of memory.max.bytes, a
// writer's row groups are cut to fit it, so the checkpoint's rows still
// land in one file at the target size, written out a row group at a time;
// every row is committed once. Without a share one row group holds them.
func TestRowGroupsAtTheMemoryBudget(t *testing.T) {
	for _, budget := range []string{"", "4194304"} { // 4 MiB: row groups of 0.8 MiB of Arrow, 16,384 rows here (the floor)
		f := newFixture(t, map[string]string{sdk.KeyMemoryBytes: budget})
		tk := f.open(1)
		var batches []sdk.Batch
		for i := range int64(25) {
			batches = append(batches, batchV1("orders/0", i*2000, 2000))
		}
		step(t, tk, 1, batches...)
		f.checkExactlyOnce("db.events", map[string][2]int64{"orders/0": {0, 50000}})
		var files, groups int
		err := filepath.WalkDir(f.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
				return err
			}
			r, err := file.OpenParquetFile(path, false)
			if err != nil {
				return err
			}
			defer func() { _ = r.Close() }()
			files++
			groups += r.NumRowGroups()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case files != 1:
			t.Errorf("budget %q: %d data files, want 1 (the budget cuts row groups, not files)", budget, files)
		case budget == "" && groups != 1:
			t.Errorf("no budget: %d row groups, want 1", groups)
		case budget != "" && groups < 2:
			t.Errorf("budget %s: %d row group for 50,000 rows; want them cut to a fifth of the budget in Arrow each", budget, groups)
		}
	}
}
