// Command testplugin is a floe plugin for sdk/client's tests: a source that
// counts, with switches to misbehave.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
)

// stderr is the process's real stderr: go-plugin points os.Stderr at a
// pipe once serving, and a process that exits right after writing there may
// lose the line. (The log package keeps the real one too.)
var stderr = os.Stderr

func main() {
	if os.Getenv("TESTPLUGIN_EXIT_AT_START") != "" {
		fmt.Fprintln(os.Stderr, "testplugin: cannot start: configuration file missing")
		os.Exit(3)
	}
	sdk.Serve(sdk.Component{
		Name:    "counter",
		Version: "1.0.0",
		Summary: "counts",
		Spec: sdk.NewSpec(
			sdk.Int("batch.records").Default("5000").Min(1),
			sdk.Int("record.bytes").Default("200").Min(1),
			sdk.String("fail").Default("").OneOf("", "panic", "exit", "error", "gopanic", "transient", "permanent"),
			sdk.Bool("reuse").Default("false").Describe("hand out one prebuilt batch again and again (benchmarks)"),
			sdk.Password("token"),
		),
		Source: counter{},
	})
}

type counter struct{}

func (counter) Open(_ context.Context, req sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	r := req.Config.Reader()
	t := &counterTask{
		n:     r.Int("batch.records"),
		size:  r.Int("record.bytes"),
		fail:  req.Config.String("fail"),
		reuse: r.Bool("reuse"),
		host:  req.Host,
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	req.Logger.Info("counter opened", "records", t.n)
	return t, nil
}

type counterTask struct {
	n, size  int
	fail     string
	reuse    bool
	cached   arrow.RecordBatch
	host     sdk.SourceHost
	next     int64
	admitted bool
}

var valueSchema = arrow.NewSchema([]arrow.Field{{Name: "payload", Type: arrow.BinaryTypes.Binary}}, nil)

func (t *counterTask) Read(ctx context.Context, max int) ([]sdk.Batch, error) {
	switch t.fail {
	case "panic":
		panic("counter: deliberate panic")
	case "exit":
		fmt.Fprintln(stderr, "counter: giving up")
		os.Exit(2)
	case "gopanic":
		done := make(chan struct{})
		go func() {
			defer close(done)
			deepPanic(30)
		}()
		<-done
	case "error":
		return nil, fmt.Errorf("counter: deliberate failure at offset %d", t.next)
	case "transient":
		return nil, sdk.Transient(fmt.Errorf("counter: store unavailable: %w", syscall.ECONNREFUSED))
	case "permanent":
		return nil, sdk.Permanent(fmt.Errorf("counter: bucket missing"))
	}
	if !t.admitted {
		if err := t.host.AdmitSchema(ctx, sdk.Schema{ID: 7, Arrow: valueSchema}); err != nil {
			return nil, err
		}
		pos, err := t.host.StartPositions(ctx, []string{"p0"})
		if err != nil {
			return nil, err
		}
		t.next = pos["p0"]
		t.admitted = true
	}
	out := make([]sdk.Batch, 0, max)
	for range max {
		from := t.next
		var rec arrow.RecordBatch
		switch {
		case !t.reuse:
			rec = t.batch(from)
		case t.cached == nil:
			t.cached = t.batch(from)
			fallthrough
		default:
			rec = t.cached
			rec.Retain()
		}
		out = append(out, sdk.Batch{Partition: "p0", From: from, Next: from + int64(t.n), SchemaID: 7, Records: rec})
		t.next += int64(t.n)
	}
	return out, nil
}

// batch builds n records of size bytes starting at offset from.
func (t *counterTask) batch(from int64) arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
		{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	payload := []byte(strings.Repeat("x", t.size))
	now := arrow.Timestamp(time.Now().UnixMilli())
	pb := b.Field(0).(*array.BinaryBuilder)
	ob := b.Field(1).(*array.Int64Builder)
	tb := b.Field(2).(*array.TimestampBuilder)
	kb := b.Field(3).(*array.BinaryBuilder)
	pb.ReserveData(t.n * t.size)
	for i := range t.n {
		pb.Append(payload)
		ob.Append(from + int64(i))
		tb.Append(now)
		kb.AppendNull()
	}
	return b.NewRecordBatch()
}

func (t *counterTask) Commit(context.Context, map[string]int64) error { return nil }
func (t *counterTask) Close(context.Context) error                    { return nil }

// deepPanic panics n calls deep, in a goroutine the SDK cannot recover, so
// the dump is long.
func deepPanic(n int) {
	if n == 0 {
		panic("counter: goroutine panic")
	}
	deepPanic(n - 1)
}
