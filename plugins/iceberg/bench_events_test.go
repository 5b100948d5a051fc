package iceberg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// The event benchmarks push what make bench pushes (e2e/bench): 5,000-row
// batches of the 10-field event record, a million records per checkpoint,
// into a zstd table, and compare the sink with the raw in-process limit.
// Both report CPU µs per record (the machine is shared; wall time is not).
//
//	go test ./plugins/iceberg -run '^$' -bench BenchmarkEvents -benchtime 600x -cpuprofile cpu.out
const (
	eventBatch          = 5000
	eventBatchesPerCkpt = 200
	// eventDistinct is how many different batches the benchmarks cycle
	// through: 600,000 rows, more than a row group under the budget holds,
	// so that dictionaries and zstd see what distinct records give them. With 8 the sink cost half
	// of what make bench's datagen section measures (1.9 against 3.5 CPU-µs
	// per record), and with 40 batches per checkpoint no file reached its
	// row-group limit.
	eventDistinct = 120
)

func eventGenerator(b *testing.B) *generate.Generator {
	b.Helper()
	src, err := os.ReadFile("../../e2e/bench/testdata/event.avsc")
	if err != nil {
		b.Fatal(err)
	}
	s, err := avro.Parse(string(src))
	if err != nil {
		b.Fatal(err)
	}
	g, err := generate.New(s, generate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// eventIPC makes batch i of partition 0 as the sink process receives it:
// the value columns and floe's metadata columns (as datagen's source adds
// them) in an Arrow IPC stream.
func eventIPC(b *testing.B, g *generate.Generator, i int) []byte {
	value := g.ArrowSchema()
	fields := append(value.Fields(),
		arrow.Field{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer rb.Release()
	cols := rb.Fields()
	nv := value.NumFields()
	var key []byte
	from := int64(i * eventBatch)
	for o := from; o < from+eventBatch; o++ {
		g.AppendArrow(cols[:nv], 0, o)
		cols[nv].(*array.Int64Builder).Append(o)
		cols[nv+1].(*array.TimestampBuilder).Append(arrow.Timestamp(1_750_000_000_000 + o))
		key = g.AppendLastKey(key[:0])
		cols[nv+2].(*array.BinaryBuilder).Append(key)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// eventBatches makes the eventDistinct batches as eventIPC does, in memory
// mapped outside the Go heap: the batches, 180 MB of them, would otherwise
// count against the heap limit of the budget variant, which then collects
// without pause.
func eventBatches(b *testing.B, g *generate.Generator) [][]byte {
	batches := make([][]byte, eventDistinct)
	total := 0
	for i := range batches {
		batches[i] = eventIPC(b, g, i)
		total += len(batches[i])
	}
	mapped, err := syscall.Mmap(-1, 0, total, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = syscall.Munmap(mapped) })
	free := mapped
	for i, d := range batches {
		batches[i] = free[:len(d):len(d)]
		copy(batches[i], d)
		free = free[len(d):]
	}
	runtime.GC()
	return batches
}

// decodeIPC reads a batch as the SDK's server does before Write.
func decodeIPC(b *testing.B, data []byte) arrow.RecordBatch {
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		b.Fatal(r.Err())
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec
}

func reportPerRecord(b *testing.B, records, fileBytes int64, start time.Time, cpu0 time.Duration) {
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(fileBytes)/float64(records), "file-B/record")
	b.ReportMetric(float64(cpu.Microseconds())/float64(records), "cpu-µs/record")
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(records), "wall-µs/record")
}

// BenchmarkEvents: "sink" is IPC bytes → decode → Write (one writer) →
// Flush every 40 batches; "raw" is e2e/bench's raw limit (Avro →
// schemas.Decoder → schemas.Conform → table.WriteRecords) on the same
// records.
func BenchmarkEvents(b *testing.B) {
	for _, writers := range []int{1, 2} {
		b.Run(fmt.Sprintf("sink/writers=%d", writers), func(b *testing.B) { benchEventsSink(b, writers, 0) })
	}
	// budget: the sink's share of the default memory.max.bytes as the
	// bench's connectors get it, as its GOMEMLIMIT and floe.memory.bytes.
	b.Run("sink/writers=2/budget", func(b *testing.B) { benchEventsSink(b, 2, 197<<20) })
	// sink-grpc is "sink" through the SDK's server over real go-plugin
	// gRPC (in process, unix socket, no TLS): what the sink process does
	// besides Write.
	b.Run("sink-grpc", func(b *testing.B) {
		g := eventGenerator(b)
		data := eventBatches(b, g)
		f := newFixture(b, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv, err := sdk.ServeInProcess(ctx, sdk.InProcessOptions{}, Component())
		if err != nil {
			b.Fatal(err)
		}
		p, err := client.Attach(ctx, client.AttachOptions{Addr: srv.Addr, Done: srv.Done})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Kill()
		tk, err := p.OpenSink(ctx, client.SinkOpen{Component: "iceberg", Connector: f.connector, Config: f.cfg, Writers: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = tk.Close(ctx) }()
		var schemaBuf bytes.Buffer
		sw := ipc.NewWriter(&schemaBuf, ipc.WithSchema(g.ArrowSchema()))
		if err := sw.Close(); err != nil {
			b.Fatal(err)
		}
		if _, err := tk.PrepareSchema(ctx, client.Schema{ID: 1, ArrowIPC: schemaBuf.Bytes()}); err != nil {
			b.Fatal(err)
		}
		checkpoint := uint64(1)
		var fileBytes int64
		b.ResetTimer()
		start, cpu0 := time.Now(), cpuTime()
		for i := range b.N {
			bt := client.Batch{Partition: "events/0", From: int64(i * eventBatch), Next: int64((i + 1) * eventBatch),
				SchemaID: 1, NumRecords: eventBatch, IPC: data[i%eventDistinct]}
			if _, err := tk.Write(ctx, checkpoint, bt, nil); err != nil {
				b.Fatal(err)
			}
			if (i+1)%eventBatchesPerCkpt == 0 || i == b.N-1 {
				res, err := tk.Flush(ctx, checkpoint)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res.Results {
					fileBytes += r.Bytes
				}
				checkpoint++
			}
		}
		reportPerRecord(b, int64(b.N)*eventBatch, fileBytes, start, cpu0)
	})
	b.Run("raw", func(b *testing.B) {
		g := eventGenerator(b)
		payloads := make([][][]byte, eventDistinct)
		for i := range payloads {
			for o := int64(i * eventBatch); o < int64((i+1)*eventBatch); o++ {
				payloads[i] = append(payloads[i], g.AppendAvro(nil, 0, o))
			}
		}
		dec, err := schemas.NewDecoder(g.Schema())
		if err != nil {
			b.Fatal(err)
		}
		f := newFixture(b, nil)
		tk := f.open(1)
		prepare(b, tk, 1, dec.Schema())
		// Written as the sink writes (its page size).
		created := tk.knownTable("db.events").view().tbl
		tbl, err := lake.WriteView(created, lake.WriterProps(created.Properties(), nil))
		if err != nil {
			b.Fatal(err)
		}
		target, err := schemas.ArrowForTable(tbl.Schema())
		if err != nil {
			b.Fatal(err)
		}
		// Only the value columns: the raw limit writes no metadata columns.
		var fields []arrow.Field
		for _, fl := range target.Fields() {
			if fl.Name[0] != '_' {
				fields = append(fields, fl)
			}
		}
		target = arrow.NewSchema(fields, nil)
		mem := memory.NewGoAllocator()
		ctx := context.Background()
		var fileBytes int64
		b.ResetTimer()
		start, cpu0 := time.Now(), cpuTime()
		for done := 0; done < b.N; {
			n := min(eventBatchesPerCkpt, b.N-done)
			records := func(yield func(arrow.RecordBatch, error) bool) {
				rb := array.NewRecordBuilder(mem, dec.Schema())
				defer rb.Release()
				for i := done; i < done+n; i++ {
					rb.Reserve(eventBatch)
					for _, p := range payloads[i%eventDistinct] {
						if err := dec.Append(rb.Fields(), p); err != nil {
							b.Error(err)
							return
						}
					}
					rec := rb.NewRecordBatch()
					conformed, err := schemas.Conform(rec, target, mem)
					rec.Release()
					if err != nil {
						b.Error(err)
						return
					}
					if !yield(conformed, nil) {
						return
					}
				}
			}
			for df, err := range table.WriteRecords(ctx, tbl, target, records,
				table.WithTargetFileSize(defaultTargetFileSize), table.WithRecordBatchBufferSize(2)) {
				if err != nil {
					b.Fatal(err)
				}
				fileBytes += df.FileSizeBytes()
			}
			done += n
		}
		reportPerRecord(b, int64(b.N)*eventBatch, fileBytes, start, cpu0)
	})
}

// benchEventsSink writes the event batches through Write with the rows
// spread over writers as a hash partitioner spreads keys. A budget > 0 is
// the process's memory share: the Go heap limit and floe.memory.bytes.
func benchEventsSink(b *testing.B, writers int, budget int64) {
	g := eventGenerator(b)
	data := eventBatches(b, g)
	var split []uint32
	if writers > 1 {
		split = make([]uint32, eventBatch)
		for i := range split {
			split[i] = uint32(mix(uint64(i)) % uint64(writers))
		}
	}
	var cfg map[string]string
	if budget > 0 {
		cfg = map[string]string{sdk.KeyMemoryBytes: strconv.FormatInt(budget, 10)}
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(budget))
	}
	f := newFixture(b, cfg)
	tk := f.open(writers)
	prepare(b, tk, 1, g.ArrowSchema())
	ctx := context.Background()
	checkpoint := uint64(1)
	var fileBytes int64
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for i := range b.N {
		rec := decodeIPC(b, data[i%eventDistinct])
		bt := sdk.Batch{Partition: "events/0", From: int64(i * eventBatch), Next: int64((i + 1) * eventBatch), SchemaID: 1, Records: rec}
		_, err := tk.Write(ctx, sdk.WriteRequest{Checkpoint: checkpoint, Batch: bt, Writers: split})
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		if (i+1)%eventBatchesPerCkpt == 0 || i == b.N-1 {
			res, err := tk.Flush(ctx, checkpoint)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range res {
				fileBytes += r.Bytes
			}
			checkpoint++
		}
	}
	reportPerRecord(b, int64(b.N)*eventBatch, fileBytes, start, cpu0)
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	return x
}
