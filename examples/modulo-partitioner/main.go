// Command floe-plugin-modulo is an example floe plugin: a partitioner that
// sends each record to writer (offset / stride) mod writers, so runs of
// stride consecutive records of a partition land in the same file while
// the writers share the load evenly.
//
// It is built only on the public SDK (github.com/floehq/floe/sdk), as a
// third-party plugin would be. Build it with
//
//	go build -o floe-plugin-modulo ./examples/modulo-partitioner
//
// drop the binary into a folder of the worker's plugin.path, and use it in a
// connector with "partitioner": "modulo".
package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk"
)

func main() {
	sdk.Serve(Component())
}

// Component declares the partitioner: its name, its config keys, the
// optional interfaces its task implements (sdk.PartitionerWithLoad, so
// floe shows the per-writer load), and the implementation.
func Component() sdk.Component {
	return sdk.Component{
		Name:    "modulo",
		Version: "1.0.0",
		Summary: "writer = (offset / stride) mod writers",
		Spec: sdk.NewSpec(
			sdk.Long("modulo.stride").Default("1").Min(1).
				Describe("how many consecutive offsets go to the same writer"),
			sdk.String("modulo.column").Default(sdk.ColumnOffset).
				Describe("the int64 column to take the number from (the record's offset by default)"),
		),
		Capabilities: []sdk.Capability{sdk.CapabilityLoad},
		Partitioner:  modulo{},
	}
}

type modulo struct{}

// Open is called once per connector, with the connector's config (defaults
// applied, already validated against the spec) and its writer count.
func (modulo) Open(_ context.Context, req sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	if req.Writers < 1 {
		return nil, fmt.Errorf("modulo: %d writers; need at least one", req.Writers)
	}
	stride, err := req.Config.Int64("modulo.stride")
	if err != nil {
		return nil, err
	}
	t := &task{
		writers: uint64(req.Writers),
		stride:  stride,
		column:  req.Config.String("modulo.column"),
		counts:  make([]atomic.Int64, req.Writers),
	}
	req.Logger.Info("modulo partitioner opened", "writers", req.Writers, "stride", t.stride, "column", t.column)
	return t, nil
}

// task is safe for concurrent use: Partition is called from every source
// task's pipeline at once, and only the per-writer counters change.
type task struct {
	writers uint64
	stride  int64
	column  string
	counts  []atomic.Int64
}

// Partition returns one writer per record, in record order.
func (t *task) Partition(_ context.Context, b sdk.Batch) ([]uint32, error) {
	idx := b.Records.Schema().FieldIndices(t.column)
	if len(idx) == 0 {
		return nil, fmt.Errorf("modulo: batch of partition %s has no column %q; set modulo.column to an int64 column", b.Partition, t.column)
	}
	col, ok := b.Records.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("modulo: column %q is %s, not int64; set modulo.column to an int64 column", t.column, b.Records.Column(idx[0]).DataType())
	}
	out := make([]uint32, col.Len())
	for i := range out {
		n := col.Value(i) / t.stride
		if n < 0 {
			n = -n
		}
		w := uint64(n) % t.writers
		out[i] = uint32(w)
		t.counts[w].Add(1)
	}
	return out, nil
}

// Load implements sdk.PartitionerWithLoad: each writer's share of the
// records so far, 1.0 being an even share.
func (t *task) Load() []float64 {
	var total int64
	counts := make([]int64, len(t.counts))
	for i := range t.counts {
		counts[i] = t.counts[i].Load()
		total += counts[i]
	}
	load := make([]float64, len(counts))
	if total == 0 {
		return load
	}
	mean := float64(total) / float64(len(counts))
	for i, c := range counts {
		load[i] = float64(c) / mean
	}
	return load
}

// Close releases nothing: the task holds no resources.
func (t *task) Close(context.Context) error { return nil }
