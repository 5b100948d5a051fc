package partitioners

import (
	"context"
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Benchmarks partition batches of 5,000 records and report records/s.
// Single-core figures: go test -run ^$ -bench . -cpu 1 ./plugins/partitioners/

const benchBatch = 5000

// benchBatches makes a few batches with 17-byte record keys (uniform over a
// million, or Zipf), a string and an int64 column, and a timestamp over 30
// days.
func benchBatches(b *testing.B, zipf float64) []sdkBatch {
	r := rand.New(rand.NewSource(1))
	var z *rand.Zipf
	if zipf > 0 {
		z = rand.NewZipf(r, zipf, 1, 999_999)
	}
	out := make([]sdkBatch, 8)
	for j := range out {
		keys := make([][]byte, benchBatch)
		names := make([]string, benchBatch)
		ids := make([]int64, benchBatch)
		ts := make([]int64, benchBatch)
		for i := range keys {
			id := r.Intn(1_000_000)
			if z != nil {
				id = int(z.Uint64())
			}
			keys[i] = fmt.Appendf(nil, "customer-%08d", id)
			names[i] = string(keys[i])
			ids[i] = int64(id)
			ts[i] = 1_740_000_000_000 + r.Int63n(30*day)
		}
		out[j] = newBatch(b, keys, stringCol("customer", names), int64Col("id", ids), timestampCol("ts", arrow.Millisecond, ts))
	}
	return out
}

func benchPartition(b *testing.B, name string, cfg map[string]string, zipf float64) {
	batches := benchBatches(b, zipf)
	task := open(b, name, 8, cfg)
	ctx := context.Background()
	b.ResetTimer()
	b.ReportAllocs()
	cpu0 := cpuTime()
	i := 0
	for b.Loop() {
		if _, err := task.Partition(ctx, batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(i*benchBatch)/b.Elapsed().Seconds(), "records/s")
	// On a shared machine wall time includes time spent waiting for a
	// core; CPU time (of the whole process, GC included) does not.
	b.ReportMetric(float64(i*benchBatch)/cpu.Seconds(), "records/cpu-s")
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchParallel(b *testing.B, name string, cfg map[string]string, zipf float64) {
	batches := benchBatches(b, zipf)
	task := open(b, name, 8, cfg)
	ctx := context.Background()
	b.ResetTimer()
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := task.Partition(ctx, batches[i%len(batches)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N*benchBatch)/(cpuTime()-cpu0).Seconds(), "records/cpu-s")
}

func BenchmarkHash(b *testing.B) {
	b.Run("key", func(b *testing.B) { benchPartition(b, "hash", nil, 0) })
	b.Run("field=string", func(b *testing.B) { benchPartition(b, "hash", map[string]string{keyFields: "customer"}, 0) })
	b.Run("field=int64", func(b *testing.B) { benchPartition(b, "hash", map[string]string{keyFields: "id"}, 0) })
	b.Run("fields=string,int64", func(b *testing.B) { benchPartition(b, "hash", map[string]string{keyFields: "customer,id"}, 0) })
	b.Run("spec=day(ts)", func(b *testing.B) { benchPartition(b, "hash", map[string]string{keyDefaultPartitionBy: "day(ts)"}, 0) })
	b.Run("spec=bucket(16,id)", func(b *testing.B) {
		benchPartition(b, "hash", map[string]string{keyDefaultPartitionBy: "bucket(16, id)"}, 0)
	})
	b.Run("spec=day(ts),bucket(16,customer)", func(b *testing.B) {
		benchPartition(b, "hash", map[string]string{keyDefaultPartitionBy: "day(ts), bucket(16, customer)"}, 0)
	})
}

func BenchmarkRoundRobin(b *testing.B) { benchPartition(b, "roundrobin", nil, 0) }

func BenchmarkSkewAware(b *testing.B) {
	b.Run("key/uniform", func(b *testing.B) { benchPartition(b, "skew-aware", nil, 0) })
	b.Run("key/zipf1.2", func(b *testing.B) { benchPartition(b, "skew-aware", nil, 1.2) })
	b.Run("spec=day(ts)", func(b *testing.B) {
		benchPartition(b, "skew-aware", map[string]string{keyDefaultPartitionBy: "day(ts)"}, 0)
	})
}

// The Parallel benchmarks call Partition from GOMAXPROCS goroutines at once,
// as one goroutine per source task does.
func BenchmarkParallel(b *testing.B) {
	b.Run("hash/key", func(b *testing.B) { benchParallel(b, "hash", nil, 0) })
	b.Run("roundrobin", func(b *testing.B) { benchParallel(b, "roundrobin", nil, 0) })
	b.Run("skew-aware/uniform", func(b *testing.B) { benchParallel(b, "skew-aware", nil, 0) })
	b.Run("skew-aware/zipf1.2", func(b *testing.B) { benchParallel(b, "skew-aware", nil, 1.2) })
}
