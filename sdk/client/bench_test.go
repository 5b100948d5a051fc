package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

const (
	benchRecords     = 5000
	benchRecordBytes = 200
)

// benchSource hands out the same 5,000-record batch again and again, with
// rising offsets in the batch metadata, so the benchmark measures the
// protocol (encode, gRPC, receive) rather than building records.
type benchSource struct{ rec arrow.RecordBatch }

func (s benchSource) Open(context.Context, sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return &benchTask{rec: s.rec}, nil
}

type benchTask struct {
	rec  arrow.RecordBatch
	next int64
}

func (t *benchTask) Read(_ context.Context, max int) ([]sdk.Batch, error) {
	out := make([]sdk.Batch, max)
	for i := range out {
		t.rec.Retain()
		out[i] = sdk.Batch{Partition: "p0", From: t.next, Next: t.next + benchRecords, SchemaID: 1, Records: t.rec}
		t.next += benchRecords
	}
	return out, nil
}
func (t *benchTask) Commit(context.Context, map[string]int64) error { return nil }
func (t *benchTask) Close(context.Context) error                    { return nil }

func benchRecord() arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
		{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	payload := []byte(strings.Repeat("x", benchRecordBytes))
	now := arrow.Timestamp(time.Now().UnixMilli())
	for i := range benchRecords {
		b.Field(0).(*array.BinaryBuilder).Append(payload)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.TimestampBuilder).Append(now)
		b.Field(3).(*array.BinaryBuilder).Append([]byte("customer-0042"))
	}
	return b.NewRecordBatch()
}

// BenchmarkSourceRead moves batches of 5,000 records of ~200 bytes from a
// source over real go-plugin gRPC, one batch per Read, and reports records/s
// and payload MB/s. InProcess serves the source from this process over a
// unix socket; Binary starts testdata/testplugin (a separate process,
// plain or with AutoMTLS) whose source hands out one prebuilt batch too,
// and BinaryBuild has that source build every batch anew, as a real source
// does.
func BenchmarkSourceRead(b *testing.B) {
	b.Run("InProcess", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec := benchRecord()
		defer rec.Release()
		srv, err := sdk.ServeInProcess(ctx, sdk.InProcessOptions{}, sdk.Component{Name: "bench", Source: benchSource{rec: rec}})
		if err != nil {
			b.Fatal(err)
		}
		p, err := client.Attach(ctx, client.AttachOptions{Addr: srv.Addr, Done: srv.Done})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Kill()
		runReadBench(b, p, "bench", nil)
	})
	for _, tls := range []bool{false, true} {
		transport := "plain"
		if tls {
			transport = "tls"
		}
		b.Run("Binary/"+transport, func(b *testing.B) {
			p, err := client.Start(context.Background(), client.StartOptions{Path: testPlugin, TLS: tls})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Kill()
			runReadBench(b, p, "counter", map[string]string{"batch.records": "5000", "record.bytes": "200", "reuse": "true"})
		})
		b.Run("BinaryBuild/"+transport, func(b *testing.B) {
			p, err := client.Start(context.Background(), client.StartOptions{Path: testPlugin, TLS: tls})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Kill()
			runReadBench(b, p, "counter", map[string]string{"batch.records": "5000", "record.bytes": "200"})
		})
	}
}

func runReadBench(b *testing.B, p *client.Process, component string, config map[string]string) {
	ctx := context.Background()
	task, err := p.OpenSource(ctx, client.SourceOpen{Component: component, Connector: "bench", Tasks: 1, Config: config, Host: &fakeHost{}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = task.Close(ctx) }()
	var records, wire int64
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		res, err := task.Read(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, bt := range res.Batches {
			records += bt.NumRecords
			wire += int64(len(bt.IPC))
		}
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(records)/el, "records/s")
	b.ReportMetric(float64(records*benchRecordBytes)/el/1e6, "payload-MB/s")
	b.ReportMetric(float64(wire)/el/1e6, "wire-MB/s")
}
