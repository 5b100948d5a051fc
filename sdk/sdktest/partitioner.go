package sdktest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// PartitionerCase describes a partitioner for [PartitionerKit].
type PartitionerCase struct {
	// Component is the partitioner's name in the target.
	Component string
	// Config is a valid connector config for it (for example
	// partitioner.fields naming a column of Batches).
	Config map[string]string
	// Writers is the writer count to open it with (default 4).
	Writers int
	// Batches are the input. The default is SampleBatches(3, 4, 500). The
	// kit does not release them.
	Batches []sdk.Batch
	// Deterministic says the same batch must always get the same writers,
	// from the same task, a second task, and concurrent calls.
	Deterministic bool
	// Goroutines is how many goroutines call Partition at once in the
	// concurrency check (default 8).
	Goroutines int
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
}

// The partitioner kit's checks, besides spec and invalid_config.
const (
	CheckOneWriterPerRecord = "one_writer_per_record"
	CheckDeterministic      = "deterministic"
	CheckConcurrent         = "concurrent"
	CheckOneWriter          = "one_writer"
	CheckClose              = "close"
	CheckColumns            = "columns"
)

// PartitionerKit runs the partitioner conformance checks against target,
// each as a named subtest with a fresh plugin process:
//
//   - spec, invalid_config: as in [SourceKit].
//   - capabilities: the component declares only a partitioner's
//     capabilities (sdk.Capability), the opened task has the ones
//     Describe declared, and with load declared, Partition reports a load
//     (the client refuses one that is not declared).
//   - one_writer_per_record: every batch gets exactly one writer index per
//     record, each in [0, Writers); a reported load has one value per
//     writer, none negative.
//   - deterministic (when the case says so): the same batch gets the same
//     writers again, and from a second task opened with the same config.
//   - concurrent: Goroutines goroutines partition all batches at once and
//     every answer is valid (and, if deterministic, the same as alone). Run
//     the test with -race and an InProcess target to let the race detector
//     see the plugin.
//   - one_writer: with one writer, every record goes to writer 0.
//   - close: Close succeeds and calls after it fail.
//   - columns (for a partitioner that declares the columns it reads,
//     sdk.PartitionerWithColumns): every declared column is in some batch,
//     and, when deterministic, the writers picked from batches holding
//     only those columns (what floe sends) are the ones picked from the
//     whole batches: a difference means Partition reads a column it did
//     not declare.
//
// Every check but columns partitions what floe sends: only the declared
// columns of each batch, when the partitioner declares them.
func PartitionerKit(t *testing.T, target Target, c PartitionerCase) {
	t.Helper()
	partitionerKit(tAdapter{t}, target, c)
}

type partitionerKitRun struct {
	c PartitionerCase
}

func partitionerKit(t tb, target Target, c PartitionerCase) {
	if c.Component == "" {
		t.Fatal("sdktest.PartitionerKit: the case names no Component")
	}
	if c.Writers <= 0 {
		c.Writers = 4
	}
	if c.Goroutines <= 0 {
		c.Goroutines = 8
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	if len(c.Batches) == 0 {
		c.Batches = SampleBatches(3, 4, 500)
		defer releaseAll(c.Batches)
	}
	k := &partitionerKitRun{c: c}
	checks := []struct {
		name string
		fn   func(t tb, s *session, in []client.Batch)
	}{
		{CheckSpec, k.spec},
		{CheckInvalidConfig, k.invalidConfig},
		{CheckCapabilities, k.capabilities},
		{CheckOneWriterPerRecord, k.oneWriterPerRecord},
		{CheckDeterministic, k.deterministic},
		{CheckConcurrent, k.concurrent},
		{CheckOneWriter, k.oneWriter},
		{CheckClose, k.close},
		{CheckColumns, k.columns},
	}
	for _, ch := range checks {
		t.run(ch.name, func(t tb) {
			skipIf(t, c.Skip, ch.name)
			s := newSession(t, target, c.Timeout)
			ch.fn(t, s, wireBatches(t, c.Batches))
		})
	}
}

func releaseAll(bs []sdk.Batch) {
	for _, b := range bs {
		if b.Records != nil {
			b.Records.Release()
		}
	}
}

func (k *partitionerKitRun) open(t tb, s *session, writers int) *client.PartitionerTask {
	t.Helper()
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	task, err := s.p.OpenPartitioner(ctx, client.PartitionerOpen{
		Component: k.c.Component, Connector: "sdktest", Config: maps.Clone(k.c.Config), Writers: writers,
	})
	if err != nil {
		t.Fatalf("Open with %d writers: %v", writers, err)
	}
	t.Cleanup(func() {
		ctx, cancel := s.callCtx(callTimeout)
		defer cancel()
		_ = task.Close(ctx)
	})
	return task
}

func (k *partitionerKitRun) spec(t tb, s *session, _ []client.Batch) {
	checkSpec(t, s, sdk.KindPartitioner, k.c.Component, k.c.Config, k.c.NotSecret)
}

func (k *partitionerKitRun) invalidConfig(t tb, s *session, _ []client.Batch) {
	comp := s.describe(sdk.KindPartitioner, k.c.Component)
	checkInvalidConfig(t, s, comp, invalidConfigs(comp, k.c.Config, k.c.InvalidConfig), func(bad map[string]string) (func(), error) {
		ctx, cancel := s.callCtx(callTimeout)
		defer cancel()
		task, err := s.p.OpenPartitioner(ctx, client.PartitionerOpen{
			Component: k.c.Component, Connector: "sdktest", Config: bad, Writers: k.c.Writers,
		})
		if err != nil {
			return nil, err
		}
		return func() { _ = task.Close(ctx) }, nil
	})
}

// partitionAll partitions every batch and checks each answer; the client
// already refuses a wrong count or an index out of range. Every other
// batch is in shared memory, as floe has a batch a source shared.
func (k *partitionerKitRun) partitionAll(t tb, s *session, task *client.PartitionerTask, in []client.Batch, writers int) [][]uint32 {
	t.Helper()
	out := make([][]uint32, len(in))
	for i, b := range in {
		if i%2 == 1 && client.SharedMemorySupported() {
			sb, err := client.ShareBatch(b)
			if err != nil {
				t.Fatalf("share batch %s [%d, %d): %v", b.Partition, b.From, b.Next, err)
			}
			defer sb.Release()
			b = sb
		}
		w, err := k.partition(s, task, b, writers)
		if err != nil {
			t.Fatalf("%v", err)
		}
		out[i] = w
	}
	return out
}

func (k *partitionerKitRun) partition(s *session, task *client.PartitionerTask, b client.Batch, writers int) ([]uint32, error) {
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	w, load, err := task.Partition(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("Partition of %s [%d, %d): %w", b.Partition, b.From, b.Next, err)
	}
	if load != nil {
		if len(load) != writers {
			return nil, fmt.Errorf("Partition of %s [%d, %d) reported load for %d writers, want %d", b.Partition, b.From, b.Next, len(load), writers)
		}
		for i, l := range load {
			if l < 0 {
				return nil, fmt.Errorf("Partition of %s [%d, %d) reported a negative load %v for writer %d", b.Partition, b.From, b.Next, l, i)
			}
		}
	}
	return w, nil
}

func (k *partitionerKitRun) oneWriterPerRecord(t tb, s *session, in []client.Batch) {
	task := k.open(t, s, k.c.Writers)
	got := k.partitionAll(t, s, task, in, k.c.Writers)
	used := map[uint32]int{}
	for _, ws := range got {
		for _, w := range ws {
			used[w]++
		}
	}
	if len(used) == 1 && k.c.Writers > 1 {
		t.Logf("note: every record went to writer %d of %d", slices.Collect(maps.Keys(used))[0], k.c.Writers)
	}
}

func (k *partitionerKitRun) deterministic(t tb, s *session, in []client.Batch) {
	if !k.c.Deterministic {
		t.Skip("the case does not say the partitioner is deterministic")
	}
	task := k.open(t, s, k.c.Writers)
	first := k.partitionAll(t, s, task, in, k.c.Writers)
	again := k.partitionAll(t, s, task, in, k.c.Writers)
	other := k.partitionAll(t, s, k.open(t, s, k.c.Writers), in, k.c.Writers)
	for i := range in {
		if j := firstDiff(first[i], again[i]); j >= 0 {
			t.Errorf("batch %s [%d, %d): record %d went to writer %d, then to %d on the same input", in[i].Partition, in[i].From, in[i].Next, j, first[i][j], again[i][j])
		}
		if j := firstDiff(first[i], other[i]); j >= 0 {
			t.Errorf("batch %s [%d, %d): record %d went to writer %d, and to %d from a second task with the same config", in[i].Partition, in[i].From, in[i].Next, j, first[i][j], other[i][j])
		}
	}
}

func firstDiff(a, b []uint32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func (k *partitionerKitRun) concurrent(t tb, s *session, in []client.Batch) {
	task := k.open(t, s, k.c.Writers)
	var ref [][]uint32
	if k.c.Deterministic {
		ref = k.partitionAll(t, s, task, in, k.c.Writers)
	}
	var mu sync.Mutex
	var problems []string
	var wg sync.WaitGroup
	for g := range k.c.Goroutines {
		wg.Go(func() {
			for n := range in {
				i := (n + g) % len(in) // each goroutine starts elsewhere
				w, err := k.partition(s, task, in[i], k.c.Writers)
				mu.Lock()
				switch {
				case err != nil:
					problems = append(problems, err.Error())
				case ref != nil && firstDiff(ref[i], w) >= 0:
					j := firstDiff(ref[i], w)
					problems = append(problems, fmt.Sprintf("batch %s [%d, %d): record %d went to writer %d alone but to %d under concurrent calls",
						in[i].Partition, in[i].From, in[i].Next, j, ref[i][j], w[j]))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, p := range problems {
		if i == maxErrors {
			t.Errorf("... and %d more", len(problems)-i)
			break
		}
		t.Errorf("%s", p)
	}
}

func (k *partitionerKitRun) oneWriter(t tb, s *session, in []client.Batch) {
	task := k.open(t, s, 1)
	for i, ws := range k.partitionAll(t, s, task, in, 1) {
		for j, w := range ws {
			if w != 0 {
				t.Fatalf("batch %s [%d, %d): record %d went to writer %d with one writer", in[i].Partition, in[i].From, in[i].Next, j, w)
			}
		}
	}
}

func (k *partitionerKitRun) close(t tb, s *session, in []client.Batch) {
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	task, err := s.p.OpenPartitioner(ctx, client.PartitionerOpen{
		Component: k.c.Component, Connector: "sdktest", Config: maps.Clone(k.c.Config), Writers: k.c.Writers,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, _, err := task.Partition(ctx, in[0]); err == nil {
		t.Errorf("Partition after Close succeeded; the task's handle must be gone")
	}
}

func (k *partitionerKitRun) columns(t tb, s *session, in []client.Batch) {
	task := k.open(t, s, k.c.Writers)
	cols, projected := task.Columns()
	if !projected {
		t.Skip("the partitioner declares no columns (sdk.PartitionerWithColumns): it receives whole batches")
	}
	t.Logf("declared columns: %q", cols)
	have := map[string]bool{}
	for i, b := range in {
		if b.NumRecords == 0 {
			continue
		}
		rec, err := b.Decode(nil)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		for _, f := range rec.Schema().Fields() {
			have[f.Name] = true
		}
		rec.Release()
	}
	for _, c := range cols {
		if !have[c] && !strings.Contains(c, ".") {
			t.Errorf("declares column %q, which none of the batches has (their columns: %s); a column the batch lacks is not sent",
				c, strings.Join(slices.Sorted(maps.Keys(have)), ", "))
		}
	}
	if !k.c.Deterministic {
		return
	}
	ctx, cancel := s.callCtx(callTimeout)
	defer cancel()
	whole, err := s.p.OpenPartitioner(ctx, client.PartitionerOpen{
		Component: k.c.Component, Connector: "sdktest", Config: maps.Clone(k.c.Config), Writers: k.c.Writers, WholeBatches: true,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = whole.Close(ctx) }()
	got := k.partitionAll(t, s, task, in, k.c.Writers)
	ref := k.partitionAll(t, s, whole, in, k.c.Writers)
	for i := range in {
		if j := firstDiff(ref[i], got[i]); j >= 0 {
			t.Errorf("batch %s [%d, %d): record %d goes to writer %d from the whole batch but to %d from its declared columns %q; "+
				"Partition reads a column it does not declare in Columns", in[i].Partition, in[i].From, in[i].Next, j, ref[i][j], got[i][j], cols)
		}
	}
}
