package sdktest

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// SinkCase describes a sink for [SinkKit].
type SinkCase struct {
	// Component is the sink's name in the target.
	Component string
	// Config is a valid connector config for it.
	Config map[string]string
	// FreshConfig, when set, is called instead of using Config at the start
	// of every check, so each check writes to fresh tables (a new
	// warehouse folder, a new namespace).
	FreshConfig func(t testing.TB) map[string]string
	// Writers is the writer count (default 2).
	Writers int
	// Batches are what the kit writes. The default is
	// SampleBatches(2, 4, 250). Batches of one partition must chain. The
	// kit does not release them.
	Batches []sdk.Batch
	// InvalidConfig maps keys to values Open must refuse, naming the key,
	// and so must Validate for keys the component declares; when empty
	// the kit derives some from the spec.
	InvalidConfig map[string]string
	// NotSecret lists keys whose names look like secrets but are not.
	NotSecret []string
	// Skip names checks that do not apply.
	Skip []string
	// Timeout bounds each check (default 2 min).
	Timeout time.Duration
	// CommitRetry drives the commit_retry check; without it the check is
	// skipped.
	CommitRetry *CommitRetry
}

// CommitRetry is what the commit_retry check needs of a sink: a way to
// interrupt a Commit after one table and a way to read what each table
// holds.
type CommitRetry struct {
	// Interrupted is the plugin armed to die (or fail) during its first
	// Commit after exactly one table is committed, such as a binary
	// started with [BinaryWithEnv] and the sink's crash point
	// (FLOE_CRASHPOINT=iceberg.commit.after-catalog).
	Interrupted Target
	// Config is a config (fresh tables) whose checkpoints commit to at
	// least two tables.
	Config func(t testing.TB) map[string]string
	// Checkpoints returns, per table the config writes, the checkpoint id
	// of every commit of connector in that table, in any order.
	Checkpoints func(t testing.TB, cfg map[string]string, connector string) map[string][]uint64
}

// The sink kit's checks, besides spec, invalid_config, capabilities and
// close.
const (
	CheckWriteFlushCommit = "write_flush_commit"
	CheckEmptyCheckpoint  = "empty_checkpoint"
	CheckPipelined        = "pipelined_checkpoints"
	CheckFrontierReopen   = "frontier_after_reopen"
	CheckOffsetsReset     = "offsets_reset"
	CheckPrepareSchema    = "prepare_schema"
	CheckCommitRetry      = "commit_retry"
	CheckSuperseded       = "superseded_committer"
	CheckCommitterTask    = "committer_task"
)

// SinkKit runs the sink conformance checks against target, each as a
// named subtest with a fresh plugin process (and a fresh config, with
// FreshConfig):
//
//   - spec, invalid_config: as in [SourceKit].
//   - capabilities: the component declares only a sink's capabilities
//     (sdk.Capability), the opened task has the ones Describe declared, a
//     declared frontier answers Frontier and declared schemas answer
//     PrepareSchema. (The Go SDK refuses an Open whose task implements an
//     optional interface the component does not declare, or lacks one it
//     does; this check holds plugins in other languages to the same.)
//   - write_flush_commit: PrepareSchema, Write of every batch spread over
//     the writers, Flush, Commit; Flush returns results only for writers
//     that got records, counting every record not rejected; with a
//     frontier (sdk.SinkTaskWithFrontier) it equals each partition's Next
//     and the checkpoint after Commit. An empty checkpoint afterwards
//     flushes nothing, commits fine and leaves the frontier alone.
//   - empty_checkpoint: on a fresh sink, Flush without writes returns no
//     results and Commit of the empty checkpoint succeeds.
//   - pipelined_checkpoints: writes of checkpoint 2 arrive before
//     Flush(1); each Flush returns only its own checkpoint's records, and
//     the commits apply in order.
//   - frontier_after_reopen: a sink reopened with the same config reports
//     the frontier committed before (skipped without a frontier).
//   - offsets_reset: after checkpoint 1, the sink is reopened with an
//     OffsetsReset (sdk.SinkOpenRequest) that rewinds the first partition
//     to the start of what checkpoint 1 covered; checkpoint 2 writes that
//     range again and must commit (not fenced as an overlap, its rows not
//     dropped as replays), and the frontier then has checkpoint 2 (skipped
//     without a frontier).
//   - commit_retry: a Commit interrupted after one table (by
//     [CommitRetry].Interrupted) is retried with the same request by a
//     fresh process: the retry succeeds and every table holds the
//     checkpoint exactly once (sdk.SinkTask's Commit contract), and the
//     frontier, if any, has it (skipped without CommitRetry).
//   - superseded_committer: one task commits checkpoints 1 and 2 of the
//     first partition; a second task of the same connector (a committer
//     that was superseded) then commits checkpoint 2 with a range of
//     another partition, new to the sink. Its range continues the
//     frontier, but its id is not above the newest: Commit must fail and
//     the frontier stay as it was (sdk.SinkTaskWithFrontier's contract).
//     Its checkpoint 3 then commits (skipped without a frontier).
//   - committer_task: a writing task writes checkpoints 1 and 2 and
//     flushes 1; a second task of the connector in the same process, with
//     one writer (a cluster's committer, sdk.Sink), reads the frontier and
//     commits the first task's checkpoint 1. The writing task's Flush(2)
//     must still return all of checkpoint 2, which the committer then
//     commits; with a frontier it has both checkpoints.
//   - prepare_schema: preparing the same schema twice succeeds (a sink
//     without schema support accepts all).
//   - close: Close succeeds and calls after it fail.
func SinkKit(t *testing.T, target Target, c SinkCase) {
	t.Helper()
	sinkKit(tAdapter{t}, target, c)
}

type sinkKitRun struct {
	c SinkCase
}

func sinkKit(t tb, target Target, c SinkCase) {
	if c.Component == "" {
		t.Fatal("sdktest.SinkKit: the case names no Component")
	}
	if c.Writers <= 0 {
		c.Writers = 2
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if len(c.Batches) == 0 {
		c.Batches = SampleBatches(2, 4, 250)
		defer releaseAll(c.Batches)
	}
	k := &sinkKitRun{c: c}
	checks := []struct {
		name string
		fn   func(t tb, s *session, cfg map[string]string, in []client.Batch)
	}{
		{CheckSpec, k.spec},
		{CheckInvalidConfig, k.invalidConfig},
		{CheckCapabilities, k.capabilities},
		{CheckWriteFlushCommit, k.writeFlushCommit},
		{CheckEmptyCheckpoint, k.emptyCheckpoint},
		{CheckPipelined, k.pipelined},
		{CheckFrontierReopen, k.frontierReopen},
		{CheckOffsetsReset, k.offsetsReset},
		{CheckSuperseded, k.superseded},
		{CheckCommitterTask, k.committerTask},
		{CheckPrepareSchema, k.prepareSchema},
		{CheckCommitRetry, k.commitRetry},
		{CheckClose, k.close},
	}
	for _, ch := range checks {
		t.run(ch.name, func(t tb) {
			skipIf(t, c.Skip, ch.name)
			if ch.name == CheckCommitRetry && c.CommitRetry == nil {
				t.Skip("the case sets no CommitRetry")
			}
			s := newSession(t, target, c.Timeout)
			cfg := maps.Clone(c.Config)
			if c.FreshConfig != nil {
				cfg = c.FreshConfig(t)
			}
			ch.fn(t, s, cfg, wireBatches(t, c.Batches))
		})
	}
}

func (k *sinkKitRun) open(t tb, s *session, cfg map[string]string) *client.SinkTask {
	t.Helper()
	return k.openWith(t, s, cfg, nil)
}

// openWith opens the sink with the host's pending offset override.
func (k *sinkKitRun) openWith(t tb, s *session, cfg map[string]string, reset *sdk.OffsetsReset) *client.SinkTask {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	task, err := s.p.OpenSink(ctx, client.SinkOpen{Component: k.c.Component, Connector: commitConnector, Config: cfg, Writers: k.c.Writers, OffsetsReset: reset})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return task
}

func (k *sinkKitRun) closeSink(t tb, s *session, task *client.SinkTask) {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func (k *sinkKitRun) spec(t tb, s *session, cfg map[string]string, _ []client.Batch) {
	checkSpec(t, s, sdk.KindSink, k.c.Component, cfg, k.c.NotSecret)
}

func (k *sinkKitRun) invalidConfig(t tb, s *session, cfg map[string]string, _ []client.Batch) {
	comp := s.describe(sdk.KindSink, k.c.Component)
	checkInvalidConfig(t, s, comp, invalidConfigs(comp, cfg, k.c.InvalidConfig), func(bad map[string]string) (func(), error) {
		ctx, cancel := s.callCtx(callTimeout)
		defer cancel()
		task, err := s.p.OpenSink(ctx, client.SinkOpen{Component: k.c.Component, Connector: "sdktest", Config: bad, Writers: k.c.Writers})
		if err != nil {
			return nil, err
		}
		return func() { _ = task.Close(ctx) }, nil
	})
}

// prepare announces every schema of the input, as the host does before
// the first batch of a schema.
func (k *sinkKitRun) prepare(t tb, s *session, task *client.SinkTask, in []sdk.Batch) {
	t.Helper()
	done := map[int64]bool{}
	for _, b := range in {
		if done[b.SchemaID] || b.Records == nil {
			continue
		}
		done[b.SchemaID] = true
		ws, err := client.EncodeSchema(b.SchemaID, valueSchema(b.Records.Schema()))
		if err != nil {
			t.Fatalf("%v", err)
		}
		ctx, cancel := s.callCtx(callTimeout)
		_, err = task.PrepareSchema(ctx, ws)
		cancel()
		if err != nil {
			t.Fatalf("PrepareSchema %d: %v", b.SchemaID, err)
		}
	}
}

// written tracks what one checkpoint wrote.
type written struct {
	records int64         // rows written and not rejected
	writers map[int]int64 // rows per writer
	ranges  map[string]*sdk.Range
}

func newWritten() *written {
	return &written{writers: map[int]int64{}, ranges: map[string]*sdk.Range{}}
}

func (w *written) rangeList() []sdk.Range {
	out := make([]sdk.Range, 0, len(w.ranges))
	for _, p := range slices.Sorted(maps.Keys(w.ranges)) {
		out = append(out, *w.ranges[p])
	}
	return out
}

// write writes batches to checkpoint cp, record j of batch i to writer
// (i+j) mod Writers. Every other batch goes in shared memory, as floe
// sends a batch a source shared, the others as bytes.
func (k *sinkKitRun) write(t tb, s *session, task *client.SinkTask, cp uint64, in []client.Batch, w *written) {
	t.Helper()
	for i, b := range in {
		if i%2 == 1 && client.SharedMemorySupported() {
			sb, err := client.ShareBatch(b)
			if err != nil {
				t.Fatalf("share batch %s [%d, %d): %v", b.Partition, b.From, b.Next, err)
			}
			defer sb.Release()
			b = sb
		}
		writers := make([]uint32, b.NumRecords)
		per := map[int]int64{}
		for j := range writers {
			writers[j] = uint32((i + j) % k.c.Writers)
			per[int(writers[j])]++
		}
		ctx, cancel := s.callCtx(callTimeout)
		rejected, err := task.Write(ctx, cp, b, writers)
		cancel()
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		for _, r := range rejected {
			if r.Offset < b.From || r.Offset >= b.Next {
				t.Errorf("Write of %s [%d, %d) rejected offset %d, outside the batch", b.Partition, b.From, b.Next, r.Offset)
			}
			if r.Reason == "" {
				t.Errorf("Write of %s [%d, %d) rejected offset %d without a reason", b.Partition, b.From, b.Next, r.Offset)
			}
		}
		if len(rejected) > 0 {
			t.Logf("Write of %s [%d, %d) rejected %d records (first: %s)", b.Partition, b.From, b.Next, len(rejected), rejected[0].Reason)
		}
		w.records += b.NumRecords - int64(len(rejected))
		for wr, n := range per {
			w.writers[wr] += n
		}
		if r, ok := w.ranges[b.Partition]; ok {
			r.Next = b.Next
		} else {
			w.ranges[b.Partition] = &sdk.Range{Partition: b.Partition, From: b.From, Next: b.Next}
		}
	}
}

// flush flushes cp and checks the results against what was written.
func (k *sinkKitRun) flush(t tb, s *session, task *client.SinkTask, cp uint64, w *written) []sdk.WriteResult {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	flushed, err := task.Flush(ctx, cp)
	if err != nil {
		t.Fatalf("Flush(%d): %v", cp, err)
	}
	if flushed.Skipped < 0 {
		t.Errorf("Flush(%d) reports %d records skipped; a count is never negative", cp, flushed.Skipped)
	}
	results := flushed.Results
	var sum int64
	for _, r := range results {
		switch {
		case r.Writer < 0 || r.Writer >= k.c.Writers:
			t.Errorf("Flush(%d) returned a result for writer %d, outside [0, %d)", cp, r.Writer, k.c.Writers)
		case w.writers[r.Writer] == 0:
			t.Errorf("Flush(%d) returned a result for writer %d, which got no records in checkpoint %d; results are only for written data", cp, r.Writer, cp)
		}
		if r.Records <= 0 || r.Bytes < 0 || r.Files < 0 {
			t.Errorf("Flush(%d) returned a result for writer %d with %d records, %d bytes, %d files; a result describes data written", cp, r.Writer, r.Records, r.Bytes, r.Files)
		}
		sum += r.Records
	}
	if sum != w.records {
		t.Errorf("Flush(%d) results count %d records; checkpoint %d wrote %d (not rejected)", cp, sum, cp, w.records)
	}
	return results
}

func (k *sinkKitRun) commit(t tb, s *session, task *client.SinkTask, cp uint64, w *written, results []sdk.WriteResult) {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	commits, err := task.Commit(ctx, sdk.CommitRequest{Checkpoint: cp, Ranges: w.rangeList(), Results: results})
	if err != nil {
		t.Fatalf("Commit(%d): %v", cp, err)
	}
	for _, c := range commits {
		if c.Records < 0 || c.Files < 0 || c.Attempts < 0 {
			t.Errorf("Commit(%d) reported table %q with %d records, %d files, %d attempts", cp, c.Table, c.Records, c.Files, c.Attempts)
		}
	}
}

// tryCommit commits cp and returns Commit's error, for the checks that
// expect a refusal or name the rule a failure breaks.
func (k *sinkKitRun) tryCommit(s *session, task *client.SinkTask, cp uint64, w *written, results []sdk.WriteResult) error {
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	_, err := task.Commit(ctx, sdk.CommitRequest{Checkpoint: cp, Ranges: w.rangeList(), Results: results})
	return err
}

// frontier returns the sink's frontier, or false when it keeps none.
func (k *sinkKitRun) frontier(t tb, s *session, task *client.SinkTask) (sdk.Frontier, bool) {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	f, err := task.Frontier(ctx)
	if errors.Is(err, sdk.ErrUnsupported) {
		return f, false
	}
	if err != nil {
		t.Fatalf("Frontier: %v", err)
	}
	return f, true
}

// checkFrontier compares the frontier with the Next of every range
// committed so far.
func checkFrontier(t tb, f sdk.Frontier, want map[string]int64, cp uint64, when string) {
	t.Helper()
	for p, next := range want {
		if got, ok := f.Positions[p]; !ok || got != next {
			t.Errorf("%s the frontier of partition %s is %d (present: %v), want %d, the Next of the committed range", when, p, got, ok, next)
		}
	}
	for p := range f.Positions {
		if _, ok := want[p]; !ok {
			t.Errorf("%s the frontier has partition %s, which was never committed", when, p)
		}
	}
	if f.Checkpoint != cp {
		t.Errorf("%s the frontier's checkpoint is %d, want %d", when, f.Checkpoint, cp)
	}
}

func nextOf(ws ...*written) map[string]int64 {
	out := map[string]int64{}
	for _, w := range ws {
		for p, r := range w.ranges {
			out[p] = r.Next
		}
	}
	return out
}

func (k *sinkKitRun) writeFlushCommit(t tb, s *session, cfg map[string]string, in []client.Batch) {
	task := k.open(t, s, cfg)
	defer k.closeSink(t, s, task)
	k.prepare(t, s, task, k.c.Batches)
	w := newWritten()
	k.write(t, s, task, 1, in, w)
	results := k.flush(t, s, task, 1, w)
	k.commit(t, s, task, 1, w, results)
	f, ok := k.frontier(t, s, task)
	if ok {
		checkFrontier(t, f, nextOf(w), 1, "after Commit(1)")
	}
	empty := newWritten()
	results = k.flush(t, s, task, 2, empty)
	if len(results) > 0 {
		t.Errorf("Flush(2) of a checkpoint without writes returned %d results", len(results))
	}
	k.commit(t, s, task, 2, empty, results)
	if ok {
		f, _ = k.frontier(t, s, task)
		checkFrontier(t, f, nextOf(w), f.Checkpoint, "after the empty Commit(2)")
		if f.Checkpoint != 1 && f.Checkpoint != 2 {
			t.Errorf("after the empty Commit(2) the frontier's checkpoint is %d, want 1 or 2", f.Checkpoint)
		}
	}
}

func (k *sinkKitRun) emptyCheckpoint(t tb, s *session, cfg map[string]string, _ []client.Batch) {
	task := k.open(t, s, cfg)
	defer k.closeSink(t, s, task)
	empty := newWritten()
	results := k.flush(t, s, task, 1, empty)
	if len(results) > 0 {
		t.Errorf("Flush(1) without writes returned %d results", len(results))
	}
	k.commit(t, s, task, 1, empty, results)
	if f, ok := k.frontier(t, s, task); ok && len(f.Positions) > 0 {
		t.Errorf("after an empty checkpoint the frontier holds %v; nothing was written", f.Positions)
	}
}

// halves splits in into the first half of each partition's batches and
// the rest.
func halves(in []client.Batch) (first, second []client.Batch) {
	count := map[string]int{}
	for _, b := range in {
		count[b.Partition]++
	}
	seen := map[string]int{}
	for _, b := range in {
		seen[b.Partition]++
		if seen[b.Partition] <= (count[b.Partition]+1)/2 {
			first = append(first, b)
		} else {
			second = append(second, b)
		}
	}
	return first, second
}

func (k *sinkKitRun) pipelined(t tb, s *session, cfg map[string]string, in []client.Batch) {
	// The first half of each partition's batches go to checkpoint 1, the
	// rest to checkpoint 2.
	first, second := halves(in)
	task := k.open(t, s, cfg)
	defer k.closeSink(t, s, task)
	k.prepare(t, s, task, k.c.Batches)
	w1, w2 := newWritten(), newWritten()
	k.write(t, s, task, 1, first, w1)
	k.write(t, s, task, 2, second, w2)
	r1 := k.flush(t, s, task, 1, w1)
	r2 := k.flush(t, s, task, 2, w2)
	k.commit(t, s, task, 1, w1, r1)
	if f, ok := k.frontier(t, s, task); ok {
		checkFrontier(t, f, nextOf(w1), 1, "after Commit(1)")
	}
	k.commit(t, s, task, 2, w2, r2)
	if f, ok := k.frontier(t, s, task); ok {
		checkFrontier(t, f, nextOf(w1, w2), 2, "after Commit(2)")
	}
}

func (k *sinkKitRun) frontierReopen(t tb, s *session, cfg map[string]string, in []client.Batch) {
	task := k.open(t, s, cfg)
	if _, ok := k.frontier(t, s, task); !ok {
		k.closeSink(t, s, task)
		t.Skip("the sink keeps no frontier (it declares no frontier capability)")
	}
	k.prepare(t, s, task, k.c.Batches)
	w := newWritten()
	k.write(t, s, task, 1, in, w)
	k.commit(t, s, task, 1, w, k.flush(t, s, task, 1, w))
	k.closeSink(t, s, task)

	task = k.open(t, s, cfg)
	defer k.closeSink(t, s, task)
	f, _ := k.frontier(t, s, task)
	checkFrontier(t, f, nextOf(w), 1, "after reopening the sink,")
}

func (k *sinkKitRun) offsetsReset(t tb, s *session, cfg map[string]string, in []client.Batch) {
	task := k.open(t, s, cfg)
	if _, ok := k.frontier(t, s, task); !ok {
		k.closeSink(t, s, task)
		t.Skip("the sink keeps no frontier (it declares no frontier capability)")
	}
	k.prepare(t, s, task, k.c.Batches)
	w1 := newWritten()
	k.write(t, s, task, 1, in, w1)
	k.commit(t, s, task, 1, w1, k.flush(t, s, task, 1, w1))
	k.closeSink(t, s, task)

	// The user rewinds the first partition to where checkpoint 1 began.
	first := in[0].Partition
	positions := nextOf(w1)
	positions[first] = w1.ranges[first].From
	var again []client.Batch
	for _, b := range in {
		if b.Partition == first {
			again = append(again, b)
		}
	}
	task = k.openWith(t, s, cfg, &sdk.OffsetsReset{Positions: positions, AfterCheckpoint: 1})
	k.prepare(t, s, task, k.c.Batches)
	w2 := newWritten()
	k.write(t, s, task, 2, again, w2)
	if err := k.tryCommit(s, task, 2, w2, k.flush(t, s, task, 2, w2)); err != nil {
		t.Fatalf("Commit(2) of partition %s from %d, where the offsets reset put it, failed: %v; a sink opened with an OffsetsReset fences against its positions", first, positions[first], err)
	}
	f, _ := k.frontier(t, s, task)
	checkFrontier(t, f, nextOf(w1, w2), 2, "after the reset and Commit(2)")
	k.closeSink(t, s, task)
}

func (k *sinkKitRun) superseded(t tb, s *session, cfg map[string]string, in []client.Batch) {
	task := k.open(t, s, cfg)
	defer k.closeSink(t, s, task)
	if _, ok := k.frontier(t, s, task); !ok {
		t.Skip("the sink keeps no frontier (it declares no frontier capability)")
	}
	parts := map[string][]client.Batch{}
	var order []string
	for _, b := range in {
		if parts[b.Partition] == nil {
			order = append(order, b.Partition)
		}
		parts[b.Partition] = append(parts[b.Partition], b)
	}
	if len(order) < 2 || len(parts[order[0]]) < 2 {
		t.Fatalf("the check needs batches of two partitions, the first with two batches or more; the case has %d partitions", len(order))
	}
	first, other := parts[order[0]], parts[order[1]]
	k.prepare(t, s, task, k.c.Batches)
	w1, w2 := newWritten(), newWritten()
	k.write(t, s, task, 1, first[:1], w1)
	k.commit(t, s, task, 1, w1, k.flush(t, s, task, 1, w1))
	k.write(t, s, task, 2, first[1:], w2)
	k.commit(t, s, task, 2, w2, k.flush(t, s, task, 2, w2))

	zombie := k.open(t, s, cfg)
	defer k.closeSink(t, s, zombie)
	k.prepare(t, s, zombie, k.c.Batches)
	late := newWritten()
	k.write(t, s, zombie, 2, other, late)
	if err := k.tryCommit(s, zombie, 2, late, k.flush(t, s, zombie, 2, late)); err == nil {
		t.Errorf("a second task's Commit(2) of partition %s succeeded after the first task committed checkpoint 2; a sink with a frontier refuses a checkpoint id not above its newest (a superseded committer's)", order[1])
	}
	f, _ := k.frontier(t, s, task)
	checkFrontier(t, f, nextOf(w1, w2), 2, "after the refused Commit(2) of a superseded committer,")

	again := newWritten()
	k.write(t, s, zombie, 3, other, again)
	k.commit(t, s, zombie, 3, again, k.flush(t, s, zombie, 3, again))
	f, _ = k.frontier(t, s, zombie)
	checkFrontier(t, f, nextOf(w1, w2, again), 3, "after Commit(3) of the same range,")
}

func (k *sinkKitRun) committerTask(t tb, s *session, cfg map[string]string, in []client.Batch) {
	first, second := halves(in)
	writing := k.open(t, s, cfg)
	defer k.closeSink(t, s, writing)
	k.prepare(t, s, writing, k.c.Batches)
	w1, w2 := newWritten(), newWritten()
	k.write(t, s, writing, 1, first, w1)
	k.write(t, s, writing, 2, second, w2)
	r1 := k.flush(t, s, writing, 1, w1)

	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	committer, err := s.p.OpenSink(ctx, client.SinkOpen{Component: k.c.Component, Connector: commitConnector, Config: cfg, Writers: 1})
	if err != nil {
		t.Fatalf("Open of a second task of the connector in the same process (the cluster's committer): %v", err)
	}
	defer k.closeSink(t, s, committer)
	_, frontier := k.frontier(t, s, committer)
	k.commit(t, s, committer, 1, w1, r1)
	// The committer's Open, Frontier and Commit leave the writing task's
	// checkpoint 2 whole.
	k.commit(t, s, committer, 2, w2, k.flush(t, s, writing, 2, w2))
	if frontier {
		f, _ := k.frontier(t, s, committer)
		checkFrontier(t, f, nextOf(w1, w2), 2, "after the committer task's Commit(2),")
	}
}

func (k *sinkKitRun) prepareSchema(t tb, s *session, cfg map[string]string, _ []client.Batch) {
	task := k.open(t, s, cfg)
	defer k.closeSink(t, s, task)
	k.prepare(t, s, task, k.c.Batches)
	k.prepare(t, s, task, k.c.Batches)
}

func (k *sinkKitRun) close(t tb, s *session, cfg map[string]string, in []client.Batch) {
	task := k.open(t, s, cfg)
	k.closeSink(t, s, task)
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	if _, err := task.Write(ctx, 1, in[0], nil); err == nil {
		t.Errorf("Write after Close succeeded; the sink's handle must be gone")
	}
}

// commitConnector is the connector name the kit opens sinks under.
const commitConnector = "sdktest"

func (k *sinkKitRun) commitRetry(t tb, s *session, _ map[string]string, in []client.Batch) {
	cr := k.c.CommitRetry
	cfg := cr.Config(t)
	const cp = 1
	w := newWritten()

	// The interrupted process: Commit fails (or the process dies) after
	// one table.
	ist := newSession(t, cr.Interrupted, k.c.Timeout)
	itask := k.open(t, ist, cfg)
	k.prepare(t, ist, itask, k.c.Batches)
	k.write(t, ist, itask, cp, in, w)
	// Not k.flush: a sink that writes a record to several tables may count
	// it once per table (write_flush_commit checks Flush).
	ctx, cancel := ist.callCtx(callTimeout)
	flushed, err := itask.Flush(ctx, cp)
	cancel()
	if err != nil {
		t.Fatalf("Flush(%d): %v", cp, err)
	}
	req := sdk.CommitRequest{Checkpoint: cp, Ranges: w.rangeList(), Results: flushed.Results}
	ctx, cancel = ist.callCtx(callTimeout)
	_, err = itask.Commit(ctx, req)
	cancel()
	if err == nil {
		t.Fatalf("Commit(%d) on %s succeeded; CommitRetry.Interrupted must interrupt it after one table", cp, cr.Interrupted)
	}
	ist.p.Kill()
	held := cr.Checkpoints(t, cfg, commitConnector)
	if len(held) < 2 {
		t.Fatalf("CommitRetry.Config writes %d tables; the check needs at least two", len(held))
	}
	partial := 0
	for _, cps := range held {
		partial += count(cps, cp)
	}
	if partial != 1 {
		t.Fatalf("after the interrupted Commit(%d) %d tables hold it (%v); CommitRetry.Interrupted must interrupt after exactly one", cp, partial, held)
	}

	// The host's retry, from a fresh process: the same request.
	task := k.open(t, s, cfg)
	ctx, cancel = s.callCtx(callTimeout)
	_, err = task.Commit(ctx, req)
	cancel()
	if err != nil {
		t.Fatalf("retried Commit(%d) after a Commit interrupted after one table: %v; Commit must be idempotent per checkpoint", cp, err)
	}
	for table, cps := range cr.Checkpoints(t, cfg, commitConnector) {
		if n := count(cps, cp); n != 1 {
			t.Errorf("after the retried Commit(%d), table %s holds it %d times (commits: %v); want exactly once", cp, table, n, cps)
		}
	}
	if f, ok := k.frontier(t, s, task); ok {
		checkFrontier(t, f, nextOf(w), cp, "after the retried Commit")
	}
	k.closeSink(t, s, task)
}

func count(cps []uint64, cp uint64) int {
	n := 0
	for _, c := range cps {
		if c == cp {
			n++
		}
	}
	return n
}
