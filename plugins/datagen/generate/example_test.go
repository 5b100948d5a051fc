package generate_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/plugins/datagen/generate"
)

// A generator makes the same record for the same (partition, offset),
// as Arrow columns or as Avro bytes.
func Example() {
	g, err := generate.ForShape(generate.ShapeOrders, generate.Options{Seed: 42, KeyCardinality: 100})
	if err != nil {
		panic(err)
	}
	rec := g.NewRecordBatch(memory.DefaultAllocator, 0, 86398, 3)
	defer rec.Release()
	ts := rec.Column(rec.Schema().FieldIndices("ts")[0])
	for i := range 3 {
		o := int64(86398 + i)
		fmt.Printf("offset %d: customer_id=%s ts=%s\n", o, g.AppendKey(nil, 0, o), ts.ValueStr(i))
	}
	fmt.Println(len(g.AppendAvro(nil, 0, 86398)) > 100)
	// Output:
	// offset 86398: customer_id=10 ts=2026-01-01T23:59:58Z
	// offset 86399: customer_id=72 ts=2026-01-01T23:59:59Z
	// offset 86400: customer_id=25 ts=2026-01-02T00:00:00Z
	// true
}
