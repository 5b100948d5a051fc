package iceberg_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	_ "github.com/floehq/floe/lake/backends"
	"github.com/floehq/floe/plugins/iceberg"
	"github.com/floehq/floe/sdk"
)

// The sink passes a linked catalog type through to iceberg-go: the hadoop
// catalog on a local warehouse needs no service.
func TestHadoopCatalog(t *testing.T) {
	ctx := context.Background()
	cfg := map[string]string{
		"iceberg.tables":            "db.events",
		"iceberg.catalog.type":      "hadoop",
		"iceberg.catalog.warehouse": "file://" + t.TempDir(),
	}
	open := func() sdk.SinkTask {
		st, err := iceberg.Component().Sink.Open(ctx, sdk.SinkOpenRequest{Connector: "c", Config: sdk.NewConfig(cfg), Writers: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close(ctx) })
		return st
	}
	st := open()
	values := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := st.(sdk.SinkTaskWithSchemas).PrepareSchema(ctx, sdk.Schema{ID: 1, Arrow: values}); err != nil {
		t.Fatal(err)
	}
	full := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, full)
	defer b.Release()
	for i := int64(0); i < 10; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.Int64Builder).Append(i)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := st.Write(ctx, sdk.WriteRequest{Checkpoint: 1, Batch: sdk.Batch{Partition: "p", From: 0, Next: 10, SchemaID: 1, Records: rec}}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Flush(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := st.Commit(ctx, sdk.CommitRequest{Checkpoint: 1, Ranges: []sdk.Range{{Partition: "p", From: 0, Next: 10}}, Results: res})
	if err != nil || len(tc) != 1 || tc[0].Records != 10 {
		t.Fatalf("commit = %+v, %v", tc, err)
	}
	fr, err := open().(sdk.SinkTaskWithFrontier).Frontier(ctx)
	if err != nil || fr.Positions["p"] != 10 || fr.Checkpoint != 1 {
		t.Fatalf("frontier = %+v, %v", fr, err)
	}
}
