package lake

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestNewestCommits commits as two connectors and another writer, and
// checks each connector's newest floe commit is found past the others.
func TestNewestCommits(t *testing.T) {
	ctx := context.Background()
	c, err := ParseCatalogConfig(map[string]string{KeyDataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cat, closeFn, err := OpenCatalog(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeFn() }()
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := icebergapi.NewSchema(0, icebergapi.NestedField{ID: 1, Name: "id", Type: icebergapi.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	appendWith := func(props icebergapi.Properties) {
		t.Helper()
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.Append(1)
		col := b.NewArray()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
		rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		if tbl, err = tbl.Append(ctx, rdr, props); err != nil {
			t.Fatal(err)
		}
	}
	appendWith(icebergapi.Properties{SummaryConnector: "a", SummaryCheckpoint: "1", SummaryOffsets: `{"p/0":10}`})
	appendWith(icebergapi.Properties{SummaryConnector: "b", SummaryCheckpoint: "7", SummaryOffsets: `{"q/0":3}`})
	appendWith(icebergapi.Properties{SummaryConnector: "a", SummaryCheckpoint: "2", SummaryOffsets: `{"p/0":20}`})
	appendWith(icebergapi.Properties{"writer": "someone else"})

	got, err := NewestCommits(tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a"].Checkpoint != 2 || got["a"].Offsets["p/0"] != 20 || got["b"].Checkpoint != 7 {
		t.Fatalf("newest commits = %+v", got)
	}
	if s := tbl.SnapshotByID(got["a"].SnapshotID); s == nil || s.Summary.Properties[SummaryCheckpoint] != "2" {
		t.Fatalf("snapshot id %d does not point at connector a's checkpoint 2", got["a"].SnapshotID)
	}
}
