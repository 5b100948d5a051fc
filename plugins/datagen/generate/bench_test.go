package generate_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/plugins/datagen/internal/recycle"
)

// Run with: go test -run - -bench . -cpu 1 ./plugins/datagen/generate/
// Each op is one record; records/s is per core at -cpu 1, and
// records/cpu-s divides by the CPU time the process used (GC included),
// which stays put when other processes share the machine.

// reportRate reports records/s and records/cpu-s for b.N records made
// since cpu0.
func reportRate(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if used := cpuTime() - cpu0; used > 0 {
		b.ReportMetric(float64(b.N)/used.Seconds(), "records/cpu-s")
	}
}

// BenchmarkAppendArrow builds batches of 5000 records and releases them,
// as the datagen source does: with the recycling allocator the source
// uses, and with Go's allocator (every batch garbage for the collector).
func BenchmarkAppendArrow(b *testing.B) {
	for _, shape := range generate.Shapes() {
		for _, alloc := range []struct {
			name string
			mem  func() memory.Allocator
		}{
			{"recycled", func() memory.Allocator { return recycle.New(32 << 20) }},
			{"go-allocator", func() memory.Allocator { return memory.NewGoAllocator() }},
		} {
			b.Run(shape+"/"+alloc.name, func(b *testing.B) {
				g := mustShape(b, shape, generate.Options{})
				rb := array.NewRecordBuilder(alloc.mem(), g.ArrowSchema())
				defer rb.Release()
				const batch = 5000
				g.Reserve(rb.Fields(), batch)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				o := int64(0)
				for b.Loop() {
					g.AppendArrow(rb.Fields(), 0, o)
					o++
					if o%batch == 0 {
						rb.NewRecordBatch().Release()
						g.Reserve(rb.Fields(), batch)
					}
				}
				reportRate(b, cpu0)
			})
		}
	}
}

func BenchmarkAppendAvro(b *testing.B) {
	for _, shape := range generate.Shapes() {
		b.Run(shape, func(b *testing.B) {
			g := mustShape(b, shape, generate.Options{})
			buf := make([]byte, 0, 1024)
			size := 0
			b.ReportAllocs()
			cpu0 := cpuTime()
			o := int64(0)
			for b.Loop() {
				buf = g.AppendAvro(buf[:0], 0, o)
				size += len(buf)
				o++
			}
			reportRate(b, cpu0)
			b.ReportMetric(float64(size)/float64(b.N), "bytes/record")
		})
	}
}

func BenchmarkAppendKey(b *testing.B) {
	g := mustShape(b, generate.ShapeOrders, generate.Options{KeySkew: generate.Zipf})
	buf := make([]byte, 0, 64)
	cpu0 := cpuTime()
	o := int64(0)
	for b.Loop() {
		buf = g.AppendKey(buf[:0], 0, o)
		o++
	}
	reportRate(b, cpu0)
}
