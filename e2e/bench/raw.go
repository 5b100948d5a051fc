package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/lake"
	_ "github.com/floehq/floe/lake/zstdpages" // the codec floe's plugins write with
	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/schemas"
)

// Payloads are Avro binary payloads (no Confluent header) stored back to
// back, so a million of them are two allocations, not a million.
type Payloads struct {
	buf  []byte
	ends []int
}

// Len is the number of payloads.
func (p *Payloads) Len() int { return len(p.ends) }

// Bytes is the payloads' total size.
func (p *Payloads) Bytes() int64 { return int64(len(p.buf)) }

// At returns payload i.
func (p *Payloads) At(i int) []byte {
	start := 0
	if i > 0 {
		start = p.ends[i-1]
	}
	return p.buf[start:p.ends[i]]
}

// GeneratePayloads makes records [from, from+n) of partition p with
// g.AppendAvro: the bytes datagen's generator and the Kafka preload
// produce for those positions.
func GeneratePayloads(g *generate.Generator, p int, from int64, n int) *Payloads {
	out := &Payloads{ends: make([]int, 0, n)}
	for o := from; o < from+int64(n); o++ {
		out.buf = g.AppendAvro(out.buf, p, o)
		out.ends = append(out.ends, len(out.buf))
	}
	return out
}

// AvroBytes sums the Avro payload sizes of records [from, to) of each
// partition p (ranges[p]) without keeping them: what the MB/s columns
// count.
func AvroBytes(g *generate.Generator, ranges map[int][2]int64) int64 {
	var n int64
	var buf []byte
	for p, r := range ranges {
		for o := r[0]; o < r[1]; o++ {
			buf = g.AppendAvro(buf[:0], p, o)
			n += int64(len(buf))
		}
	}
	return n
}

// RawTable is the in-process limit's target: an Iceberg table of the
// Avro schema's columns in a throwaway embedded catalog, with the
// properties floe's sink gives the tables it creates (format 2, zstd),
// written with the sink's Parquet page size (lake.WriterProps).
type RawTable struct {
	cat    *Catalog
	tbl    *table.Table
	schema *arrow.Schema
	dec    *schemas.Decoder
}

// NewRawTable creates the table in dataDir's embedded catalog.
func NewRawTable(ctx context.Context, dataDir string, s avro.Schema) (*RawTable, error) {
	dec, err := schemas.NewDecoder(s)
	if err != nil {
		return nil, err
	}
	sc, err := schemas.IcebergSchema(dec.Schema())
	if err != nil {
		return nil, err
	}
	cat, err := OpenEmbedded(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	if err := cat.cat.CreateNamespace(ctx, table.Identifier{"raw"}, nil); err != nil {
		_ = cat.Close()
		return nil, fmt.Errorf("raw limit: create namespace: %w", err)
	}
	tbl, err := cat.cat.CreateTable(ctx, table.Identifier{"raw", "events"}, sc, catalog.WithProperties(icebergapi.Properties{
		"format-version":                  "2",
		"write.parquet.compression-codec": "zstd",
	}))
	if err != nil {
		_ = cat.Close()
		return nil, fmt.Errorf("raw limit: create table: %w", err)
	}
	if tbl, err = lake.WriteView(tbl, lake.WriterProps(tbl.Properties(), nil)); err != nil {
		_ = cat.Close()
		return nil, fmt.Errorf("raw limit: the sink's write properties: %w", err)
	}
	target, err := schemas.ArrowForTable(tbl.Schema())
	if err != nil {
		_ = cat.Close()
		return nil, err
	}
	return &RawTable{cat: cat, tbl: tbl, schema: target, dec: dec}, nil
}

// Close releases the catalog.
func (r *RawTable) Close() error { return r.cat.Close() }

// RawResult is one run of the raw limit.
type RawResult struct {
	Records   int64
	AvroBytes int64
	Wall      time.Duration
	// CPU is this process's CPU time during the run (nothing else runs in
	// it meanwhile).
	CPU       time.Duration
	Files     int
	FileBytes int64
}

// add sums two runs' work and time.
func (r RawResult) add(o RawResult) RawResult {
	r.Records += o.Records
	r.AvroBytes += o.AvroBytes
	r.Wall += o.Wall
	r.CPU += o.CPU
	r.Files += o.Files
	r.FileBytes += o.FileBytes
	return r
}

// Rate is records per second of wall time.
func (r RawResult) Rate() float64 { return float64(r.Records) / r.Wall.Seconds() }

// MBps is Avro megabytes (10^6) per second of wall time.
func (r RawResult) MBps() float64 { return float64(r.AvroBytes) / 1e6 / r.Wall.Seconds() }

// RunChunks writes total records of g's partitions 0..parts-1 (each
// partition its share, from offset 0) in runs of at most chunk records:
// each run's payloads are generated, untimed, before Run times it, so
// memory holds one chunk. The sum is what a floe run of total records
// writes: the same bytes into the same kind of files. Writing fewer would
// flatter the limit on a machine whose page cache costs more per page once
// it grows (a VM that backs guest memory lazily: bench-results/2026-12-06.md
// measured 0.06 s of system time for a 300 MB file write and 7.8 s for the
// next 600 MB).
func (r *RawTable) RunChunks(ctx context.Context, g *generate.Generator, parts int, total, chunk int64, batch int, targetFileSize int64) (RawResult, error) {
	var res RawResult
	per := total / int64(parts)
	step := max(chunk/int64(parts), 1)
	for from := int64(0); from < per; from += step {
		n := min(step, per-from)
		work := make([]*Payloads, parts)
		for p := range parts {
			work[p] = GeneratePayloads(g, p, from, int(n))
		}
		rr, err := r.Run(ctx, work, batch, targetFileSize)
		res = res.add(rr)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// Run decodes and writes: one goroutine per element of work (floe's
// writers are goroutines of one sink process too), each decoding its
// payloads with its own clone of schemas.Decoder into Arrow batches of
// batch rows, conformed to the table's Arrow schema as the sink does,
// and streaming them into its own table.WriteRecords (Parquet, zstd,
// targetFileSize). Nothing is committed: phase 1 is the work. Only this
// is timed; the payloads exist before.
func (r *RawTable) Run(ctx context.Context, work []*Payloads, batch int, targetFileSize int64) (RawResult, error) {
	var res RawResult
	for _, w := range work {
		res.Records += int64(w.Len())
		res.AvroBytes += w.Bytes()
	}
	type out struct {
		files int
		bytes int64
		err   error
	}
	outs := make([]out, len(work))
	var wg sync.WaitGroup
	cpu0, start := SelfCPU(), time.Now()
	for i, w := range work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := r.dec.Clone()
			mem := memory.NewGoAllocator()
			var decodeErr error
			records := func(yield func(arrow.RecordBatch, error) bool) {
				b := array.NewRecordBuilder(mem, dec.Schema())
				defer b.Release()
				for from := 0; from < w.Len(); from += batch {
					to := min(from+batch, w.Len())
					b.Reserve(to - from)
					for j := from; j < to; j++ {
						if err := dec.Append(b.Fields(), w.At(j)); err != nil {
							decodeErr = err
							yield(nil, err)
							return
						}
					}
					rec := b.NewRecordBatch()
					conformed, err := schemas.Conform(rec, r.schema, mem)
					rec.Release()
					if err != nil {
						decodeErr = err
						yield(nil, err)
						return
					}
					if !yield(conformed, nil) {
						return
					}
				}
			}
			for df, err := range table.WriteRecords(ctx, r.tbl, r.schema, records,
				table.WithTargetFileSize(targetFileSize), table.WithRecordBatchBufferSize(2)) {
				if err != nil {
					outs[i].err = err
					return
				}
				outs[i].files++
				outs[i].bytes += df.FileSizeBytes()
			}
			if decodeErr != nil {
				outs[i].err = decodeErr
			}
		}()
	}
	wg.Wait()
	res.Wall, res.CPU = time.Since(start), SelfCPU()-cpu0
	for _, o := range outs {
		if o.err != nil {
			return res, fmt.Errorf("raw limit: %w", o.err)
		}
		res.Files += o.files
		res.FileBytes += o.bytes
	}
	return res, nil
}
