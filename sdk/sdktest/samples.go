package sdktest

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// callTimeout bounds one call the kits expect to be quick.
const callTimeout = 30 * time.Second

// SampleSchemaID is the schema id of SampleBatches' batches.
const SampleSchemaID = 1

// SampleSchema returns the value columns of SampleBatches: id (int64),
// customer_id (string), amount (float64) and ts (timestamp[ms, UTC]).
func SampleSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_id", Type: arrow.BinaryTypes.String},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	}, nil)
}

// SampleBatches returns orders-like batches for the partitioner and sink
// kits: batchesPerPartition batches of records rows on each of partitions
// partitions ("orders/0", "orders/1", ...), chaining per partition from
// offset 0, with SampleSchema's value columns and the metadata columns
// __offset, __timestamp and __key. Customers repeat, so a partitioner has
// keys to group by. The caller releases the batches' Records.
func SampleBatches(partitions, batchesPerPartition, records int) []sdk.Batch {
	var out []sdk.Batch
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	for p := range partitions {
		var next int64
		for range batchesPerPartition {
			out = append(out, sampleBatch(fmt.Sprintf("orders/%d", p), next, records, base))
			next += int64(records)
		}
	}
	return out
}

func sampleBatch(partition string, from int64, n int, base int64) sdk.Batch {
	fields := append(SampleSchema().Fields(),
		arrow.Field{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	)
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := range n {
		off := from + int64(i)
		ts := arrow.Timestamp(base + off*1000)
		customer := fmt.Sprintf("customer-%03d", off%37)
		b.Field(0).(*array.Int64Builder).Append(off)
		b.Field(1).(*array.StringBuilder).Append(customer)
		b.Field(2).(*array.Float64Builder).Append(float64(off%1000) / 10)
		b.Field(3).(*array.TimestampBuilder).Append(ts)
		b.Field(4).(*array.Int64Builder).Append(off)
		b.Field(5).(*array.TimestampBuilder).Append(ts)
		b.Field(6).(*array.BinaryBuilder).Append([]byte(customer))
	}
	return sdk.Batch{Partition: partition, From: from, Next: from + int64(n), SchemaID: SampleSchemaID, Records: b.NewRecordBatch()}
}

// wireBatches encodes batches for the client.
func wireBatches(t tb, bs []sdk.Batch) []client.Batch {
	t.Helper()
	out := make([]client.Batch, len(bs))
	for i, b := range bs {
		w, err := client.EncodeBatch(b.Partition, b.From, b.Next, b.SchemaID, b.Records)
		if err != nil {
			t.Fatalf("encode batch %d: %v", i, err)
		}
		w.Skipped = b.Skipped
		out[i] = w
	}
	return out
}

// valueSchema returns a batch's value columns (the metadata ones dropped).
func valueSchema(s *arrow.Schema) *arrow.Schema {
	var fields []arrow.Field
	for _, f := range s.Fields() {
		if !sdk.IsMetadataColumn(f.Name) {
			fields = append(fields, f)
		}
	}
	return arrow.NewSchema(fields, nil)
}
