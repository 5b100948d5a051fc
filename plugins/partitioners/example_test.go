package partitioners_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/plugins/partitioners"
	"github.com/floehq/floe/sdk"
)

// The hash partitioner of a connector whose table is partitioned by
// bucket(4, id): each bucket is one table partition and gets one writer.
func Example() {
	var hash sdk.Component
	for _, c := range partitioners.Components() {
		if c.Name == "hash" {
			hash = c
		}
	}
	cfg := map[string]string{"iceberg.tables.default-partition-by": "bucket(4, id)"}
	task, err := hash.Partitioner.Open(context.Background(), sdk.PartitionerOpenRequest{
		Connector: "orders", Config: hash.Spec.Config(cfg), Writers: 4,
	})
	if err != nil {
		panic(err)
	}
	defer func() { _ = task.Close(context.Background()) }()

	ids := array.NewInt64Builder(memory.DefaultAllocator)
	ids.AppendValues([]int64{34, 35, 36, 34, 1000}, nil)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{ids.NewArray()}, 5)
	defer rec.Release()

	writers, err := task.Partition(context.Background(), sdk.Batch{Partition: "orders/0", Next: 5, Records: rec})
	if err != nil {
		panic(err)
	}
	// Iceberg puts ids 34, 35, 36 and 1000 in buckets 3, 1, 2 and 0 of 4;
	// with 4 writers, bucket b goes to writer b, and both rows of id 34 to
	// the same one.
	fmt.Println(writers)
	// Output: [3 1 2 3 0]
}
