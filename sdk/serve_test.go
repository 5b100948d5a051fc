package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floehq/floe/sdk/internal/arrowipc"
	"github.com/floehq/floe/sdk/internal/handshake"
	"github.com/floehq/floe/sdk/internal/pb"
)

// testBatch builds n records of size-byte values at offsets from, from+step, ...
func testBatch(partition string, from int64, n, size int, step int64) Batch {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.BinaryTypes.Binary},
		{Name: ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	v := bytes.Repeat([]byte("x"), size)
	for i := range n {
		b.Field(0).(*array.BinaryBuilder).Append(v)
		b.Field(1).(*array.Int64Builder).Append(from + int64(i)*step)
		b.Field(2).(*array.TimestampBuilder).Append(0)
	}
	return Batch{Partition: partition, From: from, Next: from + int64(n)*step, SchemaID: 3, Records: b.NewRecordBatch()}
}

func TestBatchToProtoSplitsAndChains(t *testing.T) {
	// Offsets 10, 12, 14, ...: positions between records (compacted away)
	// must stay covered by exactly one piece.
	b := testBatch("p", 10, 100, 100, 2)
	b.Skipped = 3
	defer b.Records.Release()
	whole, err := arrowipc.EncodeRecordBatch(b.Records)
	if err != nil {
		t.Fatal(err)
	}
	limit := len(whole) / 3
	pieces, err := batchToProto(b, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 3 {
		t.Fatalf("got %d pieces for a batch three times the limit", len(pieces))
	}
	next := b.From
	var rows, skipped int64
	for i, p := range pieces {
		if len(p.Records) > limit {
			t.Errorf("piece %d is %d bytes, over the %d limit", i, len(p.Records), limit)
		}
		if p.FromOffset != next {
			t.Errorf("piece %d starts at %d, want %d (the previous Next)", i, p.FromOffset, next)
		}
		rec, err := arrowipc.DecodeRecordBatch(p.Records, nil)
		if err != nil {
			t.Fatal(err)
		}
		offs := rec.Column(1).(*array.Int64)
		if i > 0 && offs.Value(0) != p.FromOffset {
			t.Errorf("piece %d covers from %d but its first record is at %d", i, p.FromOffset, offs.Value(0))
		}
		if last := offs.Value(offs.Len() - 1); last >= p.NextOffset {
			t.Errorf("piece %d ends at Next=%d but holds offset %d", i, p.NextOffset, last)
		}
		if rec.NumRows() != p.NumRecords {
			t.Errorf("piece %d: NumRecords %d, rows %d", i, p.NumRecords, rec.NumRows())
		}
		rows += rec.NumRows()
		skipped += p.Skipped
		next = p.NextOffset
		rec.Release()
	}
	if next != b.Next || rows != 100 || skipped != 3 {
		t.Errorf("pieces end at %d with %d rows and %d skipped; want %d, 100, 3", next, rows, skipped, b.Next)
	}
}

func TestBatchToProtoRecordTooLarge(t *testing.T) {
	b := testBatch("orders/3", 41, 3, 2000, 1)
	defer b.Records.Release()
	_, err := batchToProto(b, 1500)
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("err = %v, want ErrRecordTooLarge", err)
	}
	if !strings.Contains(err.Error(), "partition orders/3 offset 41") {
		t.Errorf("error %q does not name the partition and offset", err)
	}
}

// scriptedSource returns the batches it is given, one slice per Read.
type scriptedSource struct {
	reads   [][]Batch
	calls   int
	blockOn chan struct{} // when set, Read waits for it before answering
}

func (s *scriptedSource) Read(ctx context.Context, max int) ([]Batch, error) {
	s.calls++
	if s.blockOn != nil {
		<-s.blockOn
	}
	if len(s.reads) == 0 {
		return nil, ErrEndOfInput
	}
	r := s.reads[0]
	s.reads = s.reads[1:]
	return r, nil
}
func (s *scriptedSource) Commit(context.Context, map[string]int64) error { return nil }
func (s *scriptedSource) Close(context.Context) error                    { return nil }

func newTestServer(t *testing.T, task SourceTask) (*sourceServer, uint64) {
	t.Helper()
	s, err := newServer([]Component{{Name: "x", Source: sourceFunc(nil)}}, newPluginLogger(nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	h := s.sources.add(&sourceEntry{task: task, label: "test"})
	return &sourceServer{s: s}, h
}

type sourceFunc func(context.Context, SourceOpenRequest) (SourceTask, error)

func (f sourceFunc) Open(ctx context.Context, req SourceOpenRequest) (SourceTask, error) {
	return f(ctx, req)
}

func TestReadKeepsWhatDoesNotFit(t *testing.T) {
	var batches []Batch
	for i := range 5 {
		batches = append(batches, testBatch("p", int64(i*10), 10, 100, 1))
	}
	src := &scriptedSource{reads: [][]Batch{batches}}
	ss, h := newTestServer(t, src)
	one, err := arrowipc.EncodeRecordBatch(batches[0].Records)
	if err != nil {
		t.Fatal(err)
	}
	ss.s.maxResponseBytes = 2*len(one) + 600 // two batches per response
	ctx := context.Background()
	var got []*pb.Batch
	var acked uint64
	for range 3 {
		resp, err := ss.Read(ctx, &pb.SourceReadRequest{Handle: h, MaxBatches: 10, Acked: acked})
		if err != nil {
			t.Fatal(err)
		}
		acked = resp.Seq
		if len(resp.Batches) > 2 {
			t.Errorf("a response carried %d batches, over its size", len(resp.Batches))
		}
		if resp.EndOfInput {
			t.Error("end of input before the pending batches went out")
		}
		got = append(got, resp.Batches...)
	}
	if src.calls != 1 {
		t.Errorf("the task was read %d times; pending batches must go out first", src.calls)
	}
	if len(got) != 5 {
		t.Fatalf("got %d batches over three Reads, want 5", len(got))
	}
	for i, b := range got {
		if b.FromOffset != int64(i*10) {
			t.Errorf("batch %d starts at %d, want %d", i, b.FromOffset, i*10)
		}
	}
	resp, err := ss.Read(ctx, &pb.SourceReadRequest{Handle: h, MaxBatches: 10, Acked: acked})
	if err != nil || !resp.EndOfInput || len(resp.Batches) != 0 {
		t.Errorf("after the batches: %v, %v; want end of input", resp, err)
	}
	resp, err = ss.Read(ctx, &pb.SourceReadRequest{Handle: h, MaxBatches: 10, Acked: acked})
	if err != nil || !resp.EndOfInput || src.calls != 2 {
		t.Errorf("a Read after the end: %v, %v, %d task reads; want end of input without reading", resp, err, src.calls)
	}
}

func TestReadKeepsBatchesWhenTheCallEnds(t *testing.T) {
	src := &scriptedSource{reads: [][]Batch{{testBatch("p", 0, 5, 10, 1)}}, blockOn: make(chan struct{})}
	ss, h := newTestServer(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		cancel()
		time.Sleep(20 * time.Millisecond)
		close(src.blockOn)
	}()
	if _, err := ss.Read(ctx, &pb.SourceReadRequest{Handle: h, MaxBatches: 1}); status.Code(err) != codes.Canceled {
		t.Fatalf("Read after the call ended: %v, want Canceled", err)
	}
	resp, err := ss.Read(context.Background(), &pb.SourceReadRequest{Handle: h, MaxBatches: 1})
	if err != nil || len(resp.Batches) != 1 || resp.Batches[0].NextOffset != 5 {
		t.Fatalf("the next Read got %v, %v; want the batch the cancelled call could not deliver", resp, err)
	}
}

func TestReadResendsWhatTheHostMissed(t *testing.T) {
	src := &scriptedSource{reads: [][]Batch{{testBatch("p", 0, 5, 10, 1)}, {testBatch("p", 5, 5, 10, 1)}}}
	ss, h := newTestServer(t, src)
	ctx := context.Background()
	first, err := ss.Read(ctx, &pb.SourceReadRequest{Handle: h, MaxBatches: 1})
	if err != nil || first.Seq != 1 {
		t.Fatalf("first Read: %v, %v", first, err)
	}
	// The host's call timed out as the answer went out: it still acks 0.
	again, err := ss.Read(ctx, &pb.SourceReadRequest{Handle: h, MaxBatches: 1, Acked: 0})
	if err != nil || len(again.Batches) != 1 || again.Batches[0].FromOffset != 0 || again.Seq != 2 {
		t.Fatalf("the unacknowledged batch was not sent again: %v, %v", again, err)
	}
	next, err := ss.Read(ctx, &pb.SourceReadRequest{Handle: h, MaxBatches: 1, Acked: again.Seq})
	if err != nil || len(next.Batches) != 1 || next.Batches[0].FromOffset != 5 {
		t.Fatalf("after the ack: %v, %v; want the next batch", next, err)
	}
}

func TestReadContextEndsFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rctx, rcancel := readContext(ctx)
	defer rcancel()
	outer, _ := ctx.Deadline()
	inner, _ := rctx.Deadline()
	if d := outer.Sub(inner); d < 300*time.Millisecond || d > time.Second {
		t.Errorf("the task's deadline is %v before the call's; want a fifth of the time", d)
	}
}

func TestInterceptTurnsPanicsAndSentinels(t *testing.T) {
	s, err := newServer([]Component{{Name: "x", Source: sourceFunc(nil)}}, newPluginLogger(nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/floe.plugin.v1.Source/Read"}
	_, err = s.intercept(context.Background(), nil, info, func(context.Context, any) (any, error) { panic("boom") })
	if st := status.Convert(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), "source Read panicked: boom") {
		t.Errorf("panic became %v", err)
	}
	_, err = s.intercept(context.Background(), nil, info, func(context.Context, any) (any, error) {
		return nil, fmt.Errorf("table t: %w", RejectSchema("field a: int to string"))
	})
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || st.Message() != "table t: schema rejected: field a: int to string" {
		t.Errorf("rejection became %v", err)
	}
	var reason string
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			reason = ei.GetReason()
		}
	}
	if reason != handshake.ReasonSchemaRejected {
		t.Errorf("rejection carries reason %q", reason)
	}
}

func TestConfigErrorsNameEveryKey(t *testing.T) {
	c := Component{Name: "x", Source: sourceFunc(nil), Spec: NewSpec(Int("a").Require(), Bool("b"), String("c").OneOf("x", "y"))}
	s, err := newServer([]Component{c}, newPluginLogger(nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.config(c, map[string]string{"b": "maybe", "c": "z"})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("code %v", st.Code())
	}
	for _, key := range []string{"a:", "b:", "c:"} {
		if !strings.Contains(st.Message(), key) {
			t.Errorf("message %q does not name %s", st.Message(), key)
		}
	}
	cfg, err := s.config(Component{Name: "y", Source: sourceFunc(nil), Spec: NewSpec(Int("n").Default("7"))}, map[string]string{"other": "1"})
	if n, nerr := cfg.Int("n"); err != nil || nerr != nil || n != 7 || cfg.String("other") != "1" {
		t.Errorf("defaults not applied: %v, %v", cfg.Map(), err)
	}
}

func TestNewServerRejectsBadDeclarations(t *testing.T) {
	src := sourceFunc(nil)
	for _, tc := range []struct {
		comps []Component
		want  string
	}{
		{[]Component{{Name: "a", Source: src}, {Name: "b", Aliases: []string{"a"}, Source: src}}, `two source components answer to "a"`},
		{[]Component{{Name: "a", Source: src, Spec: NewSpec(Int("n"), String("n"))}}, `declares config key "n" twice`},
		{[]Component{{Name: "a"}}, "must set exactly one"},
		{nil, "no components"},
		{[]Component{{Name: "a", Source: src, Capabilities: []Capability{CapabilityFrontier}}}, `declares capability "frontier", which only a sink has`},
		{[]Component{{Name: "a", Sink: sinkNop{}, Capabilities: []Capability{"flux"}}}, `unknown capability "flux"`},
		{[]Component{{Name: "a", Sink: sinkNop{}, Capabilities: []Capability{CapabilitySchemas, CapabilitySchemas}}}, `capability "schemas" twice`},
		{[]Component{{Name: "a", Sink: sinkNop{}, Capabilities: []Capability{CapabilityWaits}}}, `declares capability "waits", but its sink (sdk.sinkNop) does not implement sdk.SinkWithWaits`},
		{[]Component{{Name: "a", Sink: waitingSink{}}}, `implements sdk.SinkWithWaits, but the component does not declare capability "waits"`},
	} {
		if _, err := newServer(tc.comps, newPluginLogger(nil, 0)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newServer(%v) = %v, want %q", tc.comps, err, tc.want)
		}
	}
	// The same name in two kinds is fine.
	if _, err := newServer([]Component{{Name: "a", Source: src}, {Name: "a", Sink: sinkNop{}}}, newPluginLogger(nil, 0)); err != nil {
		t.Error(err)
	}
	if _, err := newServer([]Component{{Name: "a", Sink: waitingSink{}, Capabilities: []Capability{CapabilityWaits}}}, newPluginLogger(nil, 0)); err != nil {
		t.Error(err)
	}
}

type sinkNop struct{}

type waitingSink struct{ sinkNop }

func (waitingSink) Waits(string) []ServiceWait { return nil }

func (sinkNop) Open(context.Context, SinkOpenRequest) (SinkTask, error) { return nil, nil }

func TestLogLinesAreHclogJSON(t *testing.T) {
	var buf bytes.Buffer
	log := newPluginLogger(&buf, levelTrace).With("connector", "orders", "task", 2)
	log.Debug("polled", "wait", 1500*time.Millisecond)
	log.Log(context.Background(), levelTrace, "deep")
	log.Warn("slow")
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []string{"debug", "trace", "warn"}
	for i, m := range lines {
		if m["@level"] != want[i] {
			t.Errorf("line %d level %v, want %s", i, m["@level"], want[i])
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", m["@timestamp"].(string)); err != nil {
			t.Errorf("line %d timestamp: %v (go-plugin would not parse it)", i, err)
		}
		if m["connector"] != "orders" || m["task"] != float64(2) {
			t.Errorf("line %d lacks the task's attributes: %v", i, m)
		}
	}
	if lines[0]["@message"] != "polled" || lines[0]["wait"] != "1.5s" {
		t.Errorf("line 0 = %v", lines[0])
	}
}

type frontierTask struct{ SinkTask }

func (frontierTask) Frontier(context.Context) (Frontier, error) { return Frontier{}, nil }

// The SDK holds a declaration to what Open returns, both ways.
func TestOpenMatchesCapabilities(t *testing.T) {
	plain, withFrontier := frontierTask{}.SinkTask, frontierTask{}
	for _, tc := range []struct {
		declared []Capability
		task     any
		want     string
	}{
		{nil, withFrontier, `implements sdk.SinkTaskWithFrontier, but the component does not declare capability "frontier"`},
		{[]Capability{CapabilityFrontier}, plain, `declares capability "frontier", but the task its Open returned`},
		{[]Capability{CapabilityFrontier}, withFrontier, ""},
		{nil, plain, ""},
	} {
		c := Component{Name: "s", Sink: sinkNop{}, Capabilities: tc.declared}
		err := c.matchCapabilities(tc.task)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("declared %v, task %T: %v", tc.declared, tc.task, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("declared %v, task %T: %v, want %q", tc.declared, tc.task, err, tc.want)
		}
	}
}
