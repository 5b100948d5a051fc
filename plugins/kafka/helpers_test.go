package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
	"github.com/floehq/floe/sdk"
)

// testLogger logs to the test when -v is given, and discards otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ledger is what the floe host knows across tasks: the accepted frontier
// of every partition (the Next of the last batch it received) and every
// record received. It checks that batches chain, as the host does.
type ledger struct {
	t  testing.TB
	mu sync.Mutex
	// next is each partition's accepted frontier.
	next map[string]int64
	// seen counts deliveries of each (partition, offset) row.
	seen map[string]map[int64]int
	// values holds each delivered row's decoded value columns.
	values map[string]map[int64]map[string]any
	// skipped sums Batch.Skipped.
	skipped int64
	changed chan struct{}
	// starts answers StartPositions for partitions the ledger has not
	// seen yet (a test's initial positions).
	starts map[string]int64
}

func newLedger(t testing.TB) *ledger {
	return &ledger{t: t, next: map[string]int64{}, seen: map[string]map[int64]int{},
		values: map[string]map[int64]map[string]any{}, changed: make(chan struct{}, 1)}
}

// accept records a batch as the host would and checks it chains.
func (l *ledger) accept(b sdk.Batch, h *fakeHost) error {
	l.mu.Lock()
	defer func() {
		l.mu.Unlock()
		select {
		case l.changed <- struct{}{}:
		default:
		}
	}()
	if prev, ok := l.next[b.Partition]; ok && b.From != prev {
		return fmt.Errorf("batch %s [%d, %d) does not chain: the previous Next was %d", b.Partition, b.From, b.Next, prev)
	}
	if b.Next <= b.From {
		return fmt.Errorf("batch %s [%d, %d) is empty or backwards", b.Partition, b.From, b.Next)
	}
	l.next[b.Partition] = b.Next
	l.skipped += b.Skipped
	if b.Records == nil {
		if b.Skipped != b.Next-b.From && b.Skipped == 0 {
			return fmt.Errorf("batch %s [%d, %d) has no rows and skips nothing", b.Partition, b.From, b.Next)
		}
		return nil
	}
	if !h.isAdmitted(b.SchemaID) {
		return fmt.Errorf("batch %s [%d, %d) has schema %d, not admitted before", b.Partition, b.From, b.Next, b.SchemaID)
	}
	rec := b.Records
	if got, want := rec.NumRows()+b.Skipped, b.Next-b.From; got > want {
		return fmt.Errorf("batch %s [%d, %d): %d rows + %d skipped > %d positions", b.Partition, b.From, b.Next, rec.NumRows(), b.Skipped, want)
	}
	admitted := h.admittedSchema(b.SchemaID)
	for i, f := range admitted.Arrow.Fields() {
		if got := rec.Schema().Field(i); got.Name != f.Name || !arrow.TypeEqual(got.Type, f.Type) {
			return fmt.Errorf("batch %s column %d is %s %s, admitted %s %s", b.Partition, i, got.Name, got.Type, f.Name, f.Type)
		}
	}
	offsets := columnByName(rec, sdk.ColumnOffset).(*array.Int64)
	if l.seen[b.Partition] == nil {
		l.seen[b.Partition] = map[int64]int{}
		l.values[b.Partition] = map[int64]map[string]any{}
	}
	prev := b.From - 1
	for row := range int(rec.NumRows()) {
		off := offsets.Value(row)
		if off <= prev || off >= b.Next {
			return fmt.Errorf("batch %s [%d, %d): row %d has offset %d after %d", b.Partition, b.From, b.Next, row, off, prev)
		}
		prev = off
		l.seen[b.Partition][off]++
		vals := map[string]any{}
		for c, f := range rec.Schema().Fields() {
			if bin, ok := rec.Column(c).(*array.Binary); ok && bin.IsValid(row) {
				vals[f.Name] = string(bin.Value(row))
				continue
			}
			vals[f.Name] = rec.Column(c).ValueStr(row)
		}
		vals["__schema"] = b.SchemaID
		l.values[b.Partition][off] = vals
	}
	return nil
}

func columnByName(rec arrow.RecordBatch, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil
	}
	return rec.Column(idx[0])
}

// rows returns how many distinct rows were delivered, and how many
// deliveries were duplicates.
func (l *ledger) rows() (distinct, dups int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, offs := range l.seen {
		for _, n := range offs {
			distinct++
			dups += n - 1
		}
	}
	return distinct, dups
}

func (l *ledger) positions() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.next)
}

func (l *ledger) value(partition string, offset int64) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.values[partition][offset]
}

// waitFor waits until cond holds (checked whenever a batch arrives) or
// the timeout passes.
func (l *ledger) waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-l.changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// fakeHost is one task's SourceHost: it answers StartPositions from the
// ledger, waits in PartitionsRevoked until the ledger holds the revoked
// positions (the real host checkpoints until they are committed), and
// records every call.
type fakeHost struct {
	l    *ledger
	name string

	mu          sync.Mutex
	admitted    map[int64]sdk.Schema
	admitCalls  map[int64]int
	reject      func(sdk.Schema) error
	letters     []sdk.DeadLetter
	refuse      error // DeadLetter's answer (errors.tolerance=none)
	revoked     []map[string]int64
	startCalls  [][]string
	startAnswer []map[string]int64
	rows        int64 // rows handed on by this host's task
}

func newFakeHost(l *ledger, name string) *fakeHost {
	return &fakeHost{l: l, name: name, admitted: map[int64]sdk.Schema{}, admitCalls: map[int64]int{}}
}

func (h *fakeHost) StartPositions(_ context.Context, partitions []string) (map[string]int64, error) {
	pos := h.l.positions()
	out := map[string]int64{}
	h.l.mu.Lock()
	for _, p := range partitions {
		if n, ok := pos[p]; ok {
			out[p] = n
		} else if n, ok := h.l.starts[p]; ok {
			out[p] = n
		}
	}
	h.l.mu.Unlock()
	h.mu.Lock()
	h.startCalls = append(h.startCalls, slices.Clone(partitions))
	h.startAnswer = append(h.startAnswer, out)
	h.mu.Unlock()
	return out, nil
}

func (h *fakeHost) PartitionsRevoked(_ context.Context, next map[string]int64) error {
	h.mu.Lock()
	h.revoked = append(h.revoked, maps.Clone(next))
	h.mu.Unlock()
	ok := h.l.waitFor(30*time.Second, func() bool {
		pos := h.l.positions()
		for p, n := range next {
			if pos[p] < n {
				return false
			}
		}
		return true
	})
	if !ok {
		return fmt.Errorf("fake host %s: revoked positions %v never arrived (have %v)", h.name, next, h.l.positions())
	}
	return nil
}

func (h *fakeHost) AdmitSchema(_ context.Context, s sdk.Schema) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.admitCalls[s.ID]++
	if h.reject != nil {
		if err := h.reject(s); err != nil {
			return err
		}
	}
	h.admitted[s.ID] = s
	return nil
}

func (h *fakeHost) DeadLetter(_ context.Context, records []sdk.DeadLetter) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refuse != nil {
		return h.refuse
	}
	h.letters = append(h.letters, records...)
	return nil
}

func (h *fakeHost) isAdmitted(id int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.admitted[id]
	return ok
}

func (h *fakeHost) admittedSchema(id int64) sdk.Schema {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.admitted[id]
}

func (h *fakeHost) deadLetters() []sdk.DeadLetter {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.letters)
}

func (h *fakeHost) revocations() []map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.revoked)
}

func (h *fakeHost) starts() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.startCalls)
}

// runner reads a task on its own goroutine, as the host does, handing
// every batch to the ledger.
type runner struct {
	t    testing.TB
	task *task
	host *fakeHost
	stop chan struct{}
	done chan struct{}
	err  error // Read's error, or a chain problem
}

// openTask opens a task of connector with config over services env.
func openTask(t testing.TB, connector string, taskIdx, tasks int, host *fakeHost, cfg map[string]string) *task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := source{}.Open(ctx, sdk.SourceOpenRequest{
		Connector: connector, Task: taskIdx, Tasks: tasks, Config: sdk.NewConfig(cfg), Host: host,
		Logger: testLogger(t).With("host", host.name),
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st.(*task)
}

func closeTask(t testing.TB, task *task) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// startRunner reads task until stopped or Read fails.
func startRunner(t testing.TB, task *task, host *fakeHost) *runner {
	r := &runner{t: t, task: task, host: host, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			batches, err := task.Read(ctx, 4)
			cancel()
			if err != nil {
				r.err = err
				return
			}
			for i, b := range batches {
				if err := host.l.accept(b, host); err != nil {
					r.err = err
					releaseBatches(batches[i:])
					return
				}
				if b.Records != nil {
					host.mu.Lock()
					host.rows += b.Records.NumRows()
					host.mu.Unlock()
					b.Records.Release()
				}
			}
		}
	}()
	return r
}

// halt stops the runner and returns its error.
func (r *runner) halt() error {
	select {
	case <-r.done:
	default:
		close(r.stop)
		<-r.done
	}
	return r.err
}

// failed returns the runner's error if it stopped.
func (r *runner) failed() error {
	select {
	case <-r.done:
		if r.err == nil {
			return errors.New("runner stopped")
		}
		return r.err
	default:
		return nil
	}
}

// baseConfig is a connector config reading topics from the services.
func baseConfig(env kafkatest.Env, topics ...string) map[string]string {
	return map[string]string{
		KeyTopics:                     strings.Join(topics, ","),
		KeyBootstrapServers:           env.Bootstrap,
		KeyRegistryURL:                env.RegistryURL,
		KeyBatchSize:                  "100",
		KeyBatchLinger:                "50",
		KeyConsumerGroupID:            kafkatest.UniqueName("floe-test"),
		"kafka.broker.address.family": "v4",
	}
}

// Avro schemas of the evolution test: v2 adds a nested optional field,
// v3 widens qty from int to long, v4 makes customer.name optional.
const (
	orderV1 = `{"type":"record","name":"Order","namespace":"floe.test","fields":[
		{"name":"id","type":"long"},
		{"name":"qty","type":"int"},
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[
			{"name":"name","type":"string"}]}}]}`
	orderV2 = `{"type":"record","name":"Order","namespace":"floe.test","fields":[
		{"name":"id","type":"long"},
		{"name":"qty","type":"int"},
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[
			{"name":"name","type":"string"},
			{"name":"tier","type":["null","string"],"default":null}]}}]}`
	orderV3 = `{"type":"record","name":"Order","namespace":"floe.test","fields":[
		{"name":"id","type":"long"},
		{"name":"qty","type":"long"},
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[
			{"name":"name","type":"string"},
			{"name":"tier","type":["null","string"],"default":null}]}}]}`
	orderV4 = `{"type":"record","name":"Order","namespace":"floe.test","fields":[
		{"name":"id","type":"long"},
		{"name":"qty","type":"long"},
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[
			{"name":"name","type":["null","string"],"default":null},
			{"name":"tier","type":["null","string"],"default":null}]}}]}`
)

// orderSchemas are the parsed versions, registered under subject.
type orderSchemas struct {
	ids    [4]int32
	parsed [4]avro.Schema
}

func registerOrders(t testing.TB, env kafkatest.Env, subject string) orderSchemas {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out orderSchemas
	for i, text := range []string{orderV1, orderV2, orderV3, orderV4} {
		id, err := kafkatest.Register(ctx, env.RegistryURL, subject, text)
		if err != nil {
			t.Fatalf("register v%d: %v", i+1, err)
		}
		out.ids[i] = id
		out.parsed[i] = avro.MustParse(text)
	}
	return out
}

// order encodes order id in version v (0-based), Confluent-framed.
func (o orderSchemas) order(t testing.TB, v int, id int64) []byte {
	t.Helper()
	var rec map[string]any
	name := fmt.Sprintf("c-%d", id)
	switch v {
	case 0:
		rec = map[string]any{"id": id, "qty": int(id % 1000), "customer": map[string]any{"name": name}}
	case 1:
		rec = map[string]any{"id": id, "qty": int(id % 1000), "customer": map[string]any{"name": name, "tier": map[string]any{"string": "gold"}}}
	case 2:
		rec = map[string]any{"id": id, "qty": id % 1000 * 1_000_000_000, "customer": map[string]any{"name": name, "tier": nil}}
	default:
		rec = map[string]any{"id": id, "qty": id % 1000 * 1_000_000_000, "customer": map[string]any{"name": map[string]any{"string": name}, "tier": nil}}
	}
	payload, err := avro.Marshal(o.parsed[v], rec)
	if err != nil {
		t.Fatalf("encode v%d: %v", v+1, err)
	}
	return kafkatest.Frame(o.ids[v], payload)
}

// produce writes records and fails the test if any is not delivered.
func produce(t testing.TB, env kafkatest.Env, topic string, partitions int, recs []kafkatest.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := kafkatest.Produce(ctx, env.Bootstrap, topic, partitions, slices.Values(recs))
	if err != nil || n != len(recs) {
		t.Fatalf("produce to %s: %d of %d delivered: %v", topic, n, len(recs), err)
	}
}

func createTopic(t testing.TB, env kafkatest.Env, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, env.Bootstrap, topic, partitions); err != nil {
		t.Fatal(err)
	}
}
