package partitioners

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
)

// column is one value column of a test batch.
type column struct {
	name string
	arr  arrow.Array
}

// newBatch builds a batch of value columns followed by floe's metadata
// columns; keys may be nil (no __key column), and a nil entry is a null key.
func newBatch(t testing.TB, keys [][]byte, cols ...column) sdk.Batch {
	t.Helper()
	n := -1
	if keys != nil {
		n = len(keys)
	}
	for _, c := range cols {
		if n >= 0 && c.arr.Len() != n {
			t.Fatalf("column %s has %d rows, want %d", c.name, c.arr.Len(), n)
		}
		n = c.arr.Len()
	}
	mem := memory.DefaultAllocator
	var fields []arrow.Field
	var arrs []arrow.Array
	for _, c := range cols {
		fields = append(fields, arrow.Field{Name: c.name, Type: c.arr.DataType(), Nullable: true})
		arrs = append(arrs, c.arr)
	}
	ob := array.NewInt64Builder(mem)
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"})
	for i := range n {
		ob.Append(int64(i))
		tb.Append(arrow.Timestamp(1_700_000_000_000 + int64(i)))
	}
	fields = append(fields,
		arrow.Field{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: sdk.ColumnTimestamp, Type: tb.Type()})
	arrs = append(arrs, ob.NewArray(), tb.NewArray())
	if keys != nil {
		kb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		for _, k := range keys {
			if k == nil {
				kb.AppendNull()
			} else {
				kb.Append(k)
			}
		}
		fields = append(fields, arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true})
		arrs = append(arrs, kb.NewArray())
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
	t.Cleanup(rec.Release)
	return sdk.Batch{Partition: "test/0", From: 0, Next: int64(n), Records: rec}
}

func int64Col(name string, vals []int64) column {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(vals, nil)
	return column{name, b.NewArray()}
}

func stringCol(name string, vals []string) column {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues(vals, nil)
	return column{name, b.NewArray()}
}

func timestampCol(name string, unit arrow.TimeUnit, vals []int64) column {
	b := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: unit, TimeZone: "UTC"})
	for _, v := range vals {
		b.Append(arrow.Timestamp(v))
	}
	return column{name, b.NewArray()}
}

// keysOf makes record keys "k<i>" from integers.
func keysOf(ids []int) [][]byte {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = fmt.Appendf(nil, "k%d", id)
	}
	return out
}

// component returns the named component of Components.
func component(t testing.TB, name string) sdk.Component {
	t.Helper()
	for _, c := range Components() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no component %q", name)
	return sdk.Component{}
}

// open opens a component the way the host does: the spec's defaults
// applied to cfg.
func open(t testing.TB, name string, writers int, cfg map[string]string) sdk.PartitionerTask {
	t.Helper()
	task, err := openErr(name, writers, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { _ = task.Close(context.Background()) })
	return task
}

func openErr(name string, writers int, cfg map[string]string) (sdk.PartitionerTask, error) {
	var c sdk.Component
	for _, cc := range Components() {
		if cc.Name == name {
			c = cc
		}
	}
	if errs := c.Spec.Validate(cfg); len(errs) > 0 {
		return nil, errs[0]
	}
	return c.Partitioner.Open(context.Background(), sdk.PartitionerOpenRequest{
		Connector: "test",
		Config:    c.Spec.Config(cfg),
		Writers:   writers,
	})
}

func partition(t testing.TB, task sdk.PartitionerTask, b sdk.Batch) []uint32 {
	t.Helper()
	out, err := task.Partition(context.Background(), b)
	if err != nil {
		t.Fatalf("Partition: %v", err)
	}
	if len(out) != int(b.Records.NumRows()) {
		t.Fatalf("Partition returned %d writers for %d records", len(out), b.Records.NumRows())
	}
	return out
}

// maxOverMean is the busiest writer's load over the mean load.
func maxOverMean(counts []int) float64 {
	total, most := 0, 0
	for _, c := range counts {
		total += c
		most = max(most, c)
	}
	return float64(most) / (float64(total) / float64(len(counts)))
}
