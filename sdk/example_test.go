package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
)

// A plugin's main passes every component the binary offers to Serve.
func ExampleServe() {
	main := func() {
		sdk.Serve(sdk.Component{
			Name:        "keyhash",
			Version:     "1.0.0",
			Summary:     "writer = hash(__key) mod writers",
			Partitioner: keyHash{},
		})
	}
	_ = main // a real plugin calls it from func main
}

// One declaration drives validation, defaults and docs.
func Example_spec() {
	spec := sdk.NewSpec(
		sdk.String("topic").Require().Describe("the topic to read"),
		sdk.Duration("poll.interval").Default("500ms"),
		sdk.Int("batch.size").Default("1000").Min(1),
		sdk.Password("sasl.password"),
	)
	for _, e := range spec.Validate(map[string]string{"batch.size": "0"}) {
		fmt.Println(e)
	}
	cfg := spec.Config(map[string]string{"topic": "orders"})
	r := cfg.Reader() // typed values; every bad one is named by Err
	fmt.Println(cfg.String("topic"), r.Duration("poll.interval"), r.Int("batch.size"), r.Err())
	// A value that skipped the spec (a test's config) is an error naming the key.
	_, err := sdk.NewConfig(map[string]string{"batch.size": "many"}).Int("batch.size")
	fmt.Println(err)
	// Output:
	// topic: missing required configuration "topic" which has no default value
	// batch.size: must be at least 1
	// orders 500ms 1000 <nil>
	// batch.size: invalid int value "many"
}

// A check states a rule between keys; KeyError puts its message under the
// key to change, as config/validate shows it. It runs once every field is
// valid, on the config with defaults applied.
func ExampleSpec_WithCheck() {
	spec := sdk.NewSpec(
		sdk.List("topics"),
		sdk.String("topics.regex"),
		sdk.Int("batch.size").Default("1000").Min(1),
	).WithCheck(func(cfg sdk.Config) error {
		topics, regex := cfg.List("topics"), cfg.String("topics.regex")
		switch {
		case len(topics) == 0 && regex == "":
			return sdk.KeyError("topics", "set topics or topics.regex")
		case len(topics) > 0 && regex != "":
			return errors.Join(
				sdk.KeyError("topics", "set only one of topics and topics.regex"),
				sdk.KeyError("topics.regex", "set only one of topics and topics.regex"),
			)
		}
		return nil
	})
	fmt.Println(spec.Validate(map[string]string{}))
	fmt.Println(spec.Validate(map[string]string{"topics": "a", "topics.regex": "b.*"}))
	fmt.Println(spec.Validate(map[string]string{"batch.size": "0"})) // field errors first; the check waits for them
	// Output:
	// [topics: set topics or topics.regex]
	// [topics: set only one of topics and topics.regex topics.regex: set only one of topics and topics.regex]
	// [batch.size: must be at least 1]
}

// keyHash sends records with the same key to the same writer.
type keyHash struct{}

func (keyHash) Open(_ context.Context, req sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	return keyHashTask{writers: uint32(req.Writers)}, nil
}

type keyHashTask struct{ writers uint32 }

// Partition is called from many goroutines at once; keyHashTask keeps no
// mutable state, so it is safe.
func (t keyHashTask) Partition(_ context.Context, b sdk.Batch) ([]uint32, error) {
	idx := b.Records.Schema().FieldIndices(sdk.ColumnKey)
	if len(idx) == 0 {
		return nil, fmt.Errorf("keyhash: batch of partition %s has no %s column", b.Partition, sdk.ColumnKey)
	}
	keys := b.Records.Column(idx[0]).(*array.Binary)
	out := make([]uint32, keys.Len())
	for i := range out {
		h := fnv.New32a()
		h.Write(keys.Value(i))
		out[i] = h.Sum32() % t.writers
	}
	return out, nil
}

func (keyHashTask) Close(context.Context) error { return nil }

// A partitioner returns one writer per record; the same key always gets
// the same writer.
func Example_partitioner() {
	ctx := context.Background()
	task, _ := keyHash{}.Open(ctx, sdk.PartitionerOpenRequest{Writers: 4, Logger: slog.New(slog.DiscardHandler)})
	b := exampleBatch("orders/0", 0, []string{"alice", "bob", "alice", "carol", "bob"})
	defer b.Records.Release()
	writers, _ := task.Partition(ctx, b)
	fmt.Println(writers[0] == writers[2], writers[1] == writers[4], len(writers))
	// Output: true true 5
}

// counter is a source that counts: each Read hands on one batch per
// partition, resuming where the host says.
type counter struct{}

func (counter) Open(_ context.Context, req sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	rows, err := req.Config.Int("rows")
	if err != nil {
		return nil, err
	}
	return &counterTask{host: req.Host, rows: rows}, nil
}

type counterTask struct {
	host    sdk.SourceHost
	rows    int
	next    map[string]int64
	started bool
}

func (t *counterTask) Read(ctx context.Context, max int) ([]sdk.Batch, error) {
	if !t.started {
		// Announce the schema before its first batch, and resume where the
		// sink's table says.
		if err := t.host.AdmitSchema(ctx, sdk.Schema{ID: 1, Arrow: exampleValueSchema}); err != nil {
			return nil, err
		}
		next, err := t.host.StartPositions(ctx, []string{"p0"})
		if err != nil {
			return nil, err
		}
		t.next, t.started = next, true
	}
	from := t.next["p0"]
	keys := make([]string, t.rows)
	for i := range keys {
		keys[i] = fmt.Sprint("k", from+int64(i))
	}
	b := exampleBatch("p0", from, keys)
	t.next["p0"] = b.Next
	return []sdk.Batch{b}, nil
}

func (t *counterTask) Commit(context.Context, map[string]int64) error { return nil }
func (t *counterTask) Close(context.Context) error                    { return nil }

// startAt is a SourceHost for the example: every partition resumes at 10.
type startAt struct{}

func (startAt) StartPositions(_ context.Context, ps []string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, p := range ps {
		out[p] = 10
	}
	return out, nil
}
func (startAt) PartitionsRevoked(context.Context, map[string]int64) error { return nil }
func (startAt) AdmitSchema(context.Context, sdk.Schema) error             { return nil }
func (startAt) DeadLetter(context.Context, []sdk.DeadLetter) error        { return nil }

// A source's batches of one partition chain: each From is the previous
// Next.
func Example_source() {
	ctx := context.Background()
	task, _ := counter{}.Open(ctx, sdk.SourceOpenRequest{
		Config: sdk.NewConfig(map[string]string{"rows": "3"}),
		Host:   startAt{},
		Logger: slog.New(slog.DiscardHandler),
	})
	for range 2 {
		batches, _ := task.Read(ctx, 1)
		for _, b := range batches {
			fmt.Printf("%s [%d, %d) %d records\n", b.Partition, b.From, b.Next, b.Records.NumRows())
			b.Records.Release()
		}
	}
	// Output:
	// p0 [10, 13) 3 records
	// p0 [13, 16) 3 records
}

var exampleValueSchema = arrow.NewSchema([]arrow.Field{{Name: "customer", Type: arrow.BinaryTypes.String}}, nil)

// exampleBatch makes a batch whose records carry keys, at offsets from on.
func exampleBatch(partition string, from int64, keys []string) sdk.Batch {
	s := arrow.NewSchema(append(exampleValueSchema.Fields(),
		arrow.Field{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
	), nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i, k := range keys {
		b.Field(0).(*array.StringBuilder).Append(k)
		b.Field(1).(*array.Int64Builder).Append(from + int64(i))
		b.Field(2).(*array.TimestampBuilder).Append(0)
		b.Field(3).(*array.BinaryBuilder).Append([]byte(k))
	}
	return sdk.Batch{Partition: partition, From: from, Next: from + int64(len(keys)), SchemaID: 1, Records: b.NewRecordBatch()}
}

// memSink is a two-phase sink that keeps everything in memory: Flush
// describes what each writer holds, Commit makes it visible.
type memSink struct{}

func (memSink) Open(_ context.Context, req sdk.SinkOpenRequest) (sdk.SinkTask, error) {
	return &memSinkTask{pending: map[uint64]map[int]int64{}, frontier: map[string]int64{}}, nil
}

type memSinkTask struct {
	pending  map[uint64]map[int]int64 // checkpoint → writer → records (a real sink guards it: Write is concurrent)
	visible  int64
	frontier map[string]int64
	last     uint64
}

func (t *memSinkTask) Write(_ context.Context, req sdk.WriteRequest) ([]sdk.Rejected, error) {
	if t.pending[req.Checkpoint] == nil {
		t.pending[req.Checkpoint] = map[int]int64{}
	}
	for i := range int(req.Batch.Records.NumRows()) {
		w := 0
		if len(req.Writers) > 0 {
			w = int(req.Writers[i])
		}
		t.pending[req.Checkpoint][w]++
	}
	return nil, nil
}

func (t *memSinkTask) Flush(_ context.Context, cp uint64) ([]sdk.WriteResult, error) {
	var out []sdk.WriteResult
	for w := range 8 {
		if n := t.pending[cp][w]; n > 0 {
			out = append(out, sdk.WriteResult{Writer: w, Records: n, Files: 1, Payload: []byte(fmt.Sprint(n))})
		}
	}
	delete(t.pending, cp)
	return out, nil
}

func (t *memSinkTask) Commit(_ context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	var n int64
	for _, r := range req.Results {
		n += r.Records
	}
	t.visible += n
	for _, r := range req.Ranges {
		t.frontier[r.Partition] = r.Next
	}
	t.last = req.Checkpoint
	return []sdk.TableCommit{{Table: "mem", Records: n, Files: len(req.Results), Attempts: 1}}, nil
}

// Frontier makes memSinkTask an sdk.SinkTaskWithFrontier.
func (t *memSinkTask) Frontier(context.Context) (sdk.Frontier, error) {
	return sdk.Frontier{Positions: t.frontier, Checkpoint: t.last}, nil
}

func (t *memSinkTask) Close(context.Context) error { return nil }

// A sink writes in two phases: Flush describes the files of a checkpoint,
// Commit registers them with the source ranges they cover.
func Example_sink() {
	ctx := context.Background()
	task, _ := memSink{}.Open(ctx, sdk.SinkOpenRequest{Writers: 2, Logger: slog.New(slog.DiscardHandler)})
	b := exampleBatch("orders/0", 0, []string{"a", "b", "c"})
	defer b.Records.Release()
	_, _ = task.Write(ctx, sdk.WriteRequest{Checkpoint: 1, Batch: b, Writers: []uint32{0, 1, 1}})
	results, _ := task.Flush(ctx, 1)
	commits, _ := task.Commit(ctx, sdk.CommitRequest{
		Checkpoint: 1,
		Ranges:     []sdk.Range{{Partition: "orders/0", From: b.From, Next: b.Next}},
		Results:    results,
	})
	f, _ := task.(sdk.SinkTaskWithFrontier).Frontier(ctx)
	fmt.Println(len(results), commits[0].Records, f.Positions["orders/0"], f.Checkpoint)
	// Output: 2 3 3 1
}

// compactor pretends to compact one table: a dry run decides but changes
// nothing.
type compactor struct{}

func (compactor) Open(context.Context, sdk.MaintenanceOpenRequest) (sdk.MaintenanceTask, error) {
	return &compactorTask{files: 120}, nil
}

type compactorTask struct{ files int64 } // a real task guards it: Status may run during Cycle

func (t *compactorTask) Cycle(_ context.Context, req sdk.CycleRequest) (sdk.CycleResult, error) {
	run := sdk.TaskRun{Table: "sales.orders", Task: "rewrite-data-files", Trigger: "data-file-count", FilesBefore: t.files, FilesAfter: 1}
	if !req.DryRun {
		t.files = 1
	}
	return sdk.CycleResult{Runs: []sdk.TaskRun{run}, Next: 5 * time.Minute}, nil
}

func (t *compactorTask) Status(context.Context) (sdk.MaintenanceStatus, error) {
	return sdk.MaintenanceStatus{Tables: []sdk.TableHealth{{Table: "sales.orders", DataFiles: t.files}}}, nil
}

func (t *compactorTask) Close(context.Context) error { return nil }

// A maintenance cycle reports what ran; a dry run changes nothing.
func Example_maintenance() {
	ctx := context.Background()
	task, _ := compactor{}.Open(ctx, sdk.MaintenanceOpenRequest{Logger: slog.New(slog.DiscardHandler)})
	for _, dry := range []bool{true, false} {
		res, _ := task.Cycle(ctx, sdk.CycleRequest{DryRun: dry})
		st, _ := task.Status(ctx)
		r := res.Runs[0]
		fmt.Printf("dry run %v: %s %d→%d files, now %d, next in %v\n", dry, r.Task, r.FilesBefore, r.FilesAfter, st.Tables[0].DataFiles, res.Next)
	}
	// Output:
	// dry run true: rewrite-data-files 120→1 files, now 120, next in 5m0s
	// dry run false: rewrite-data-files 120→1 files, now 1, next in 5m0s
}
