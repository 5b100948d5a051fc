package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floehq/floe/host/metrics"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

type testEnv struct {
	t     *testing.T
	fp    *fakePlugins
	opts  Options
	store *store.Local
}

func newEnv(t *testing.T, src *fakeSourceCfg, cfg map[string]string) *testEnv {
	t.Helper()
	fp := newFakePlugins(t, src)
	conf := map[string]string{
		"name": "c", "connector.class": "fake-sink", "source": "fake-source",
		"tasks.max": "2", "commit.interval.ms": "20", "plugin.restart.backoff.ms": "1",
	}
	maps.Copy(conf, cfg)
	st, err := store.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("FLOE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	comps := map[sdk.Kind]client.Component{
		sdk.KindSource:      {Kind: sdk.KindSource, Name: "fake-source"},
		sdk.KindPartitioner: {Kind: sdk.KindPartitioner, Name: "fake-part"},
		sdk.KindSink:        {Kind: sdk.KindSink, Name: "fake-sink"},
	}
	if m := conf["maintenance"]; m != "" {
		comps[sdk.KindMaintenance] = client.Component{Kind: sdk.KindMaintenance, Name: m}
	}
	return &testEnv{t: t, fp: fp, store: st, opts: Options{
		Name: "c", Config: conf, Components: comps,
		DataDir: t.TempDir(), Plugins: fp, Offsets: st, Statuses: st,
		Metrics: metrics.New().Connector("c"), Logger: logger,
		Tuning: Tuning{
			ReadPoll: 20 * time.Millisecond, CommitBackoff: time.Millisecond, CommitMaxBackoff: 5 * time.Millisecond,
			CloseTimeout: 2 * time.Second, RestartStableAfter: time.Hour, ShutdownTimeout: 10 * time.Second,
		},
	}}
}

func (e *testEnv) start(ctx context.Context) *Connector {
	e.t.Helper()
	c, err := Start(ctx, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = c.Stop(sctx)
	})
	return c
}

// patience bounds every wait for something that should happen. It is
// generous because a CI machine running the other packages beside these
// tests can take seconds over one fsync of the offsets store, and every
// commit makes one; a passing test never waits for it.
const patience = 30 * time.Second

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", patience, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkExactlyOnce verifies that the table holds every offset of
// [0, count) of every partition exactly once, and no contract violation.
func (e *testEnv) checkExactlyOnce(partitions int, count int64) {
	e.t.Helper()
	if v := e.fp.sink.violationsCopy(); len(v) > 0 {
		e.t.Fatalf("sink contract violations:\n%s", strings.Join(v, "\n"))
	}
	total, dups := e.fp.sink.committedRows()
	if dups > 0 {
		e.t.Fatalf("%d rows committed more than once", dups)
	}
	if want := int64(partitions) * count; int64(total) != want {
		e.t.Fatalf("committed %d rows, want %d", total, want)
	}
	fr := e.fp.sink.frontierCopy()
	for p := range partitions {
		if got := fr[fmt.Sprintf("topic/%d", p)]; got != count {
			e.t.Fatalf("frontier of topic/%d = %d, want %d (frontier %v)", p, got, count, fr)
		}
	}
}

func TestBoundedRunCommitsEverythingOnce(t *testing.T) {
	src := &fakeSourceCfg{partitions: 5, count: 1000, batch: 37}
	e := newEnv(t, src, map[string]string{"tasks.max": "3"})
	e.fp.sink.maxPending = DefaultMaxPending
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(5, 1000)

	st := c.Status()
	if st.State != StateRunning || len(st.Tasks) != 3 {
		t.Fatalf("status %+v", st)
	}
	for i, ts := range st.Tasks {
		if ts.State != StateRunning {
			t.Errorf("task %d is %s (%s); tasks stay RUNNING at end of input", i, ts.State, ts.Trace)
		}
	}
	p := st.Progress
	if p.RecordsIn < 5000 || p.RecordsOut != 5000 || p.Commits == 0 || p.Checkpoint == 0 || p.FilesWritten == 0 || len(p.WriterLoad) != 3 {
		t.Errorf("progress %+v", p)
	}
	// The store holds the committed offsets, the connector reports them.
	cm, err := e.store.Committed(context.Background(), "c")
	if err != nil || cm.Positions["topic/4"] != 1000 || cm.Checkpoint != p.Checkpoint {
		t.Errorf("stored offsets %+v %v", cm, err)
	}
	pos, ckpt, ok := c.Offsets()
	if !ok || pos["topic/0"] != 1000 || ckpt != p.Checkpoint {
		t.Errorf("Offsets() = %v %d %v", pos, ckpt, ok)
	}
	if got := c.Topics(); len(got) != 1 || got[0] != "topic" {
		t.Errorf("topics %v", got)
	}
	if ts, _ := e.store.Topics(context.Background(), "c"); len(ts) != 1 {
		t.Errorf("stored topics %v", ts)
	}
	// The source heard of the commits.
	waitFor(t, "source commits", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.commits["topic/3"] == 1000
	})
	// Plugin configs carry floe.data.dir and the start options the limits.
	for _, cfg := range e.fp.sink.configs {
		if cfg[KeyDataDir] != e.opts.DataDir {
			t.Errorf("sink config without %s: %v", KeyDataDir, cfg)
		}
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.fp.live(); n != 0 {
		t.Errorf("%d plugin processes still alive after Stop", n)
	}
}

func TestCheckpointsEveryIntervalAndContiguousRanges(t *testing.T) {
	src := &fakeSourceCfg{partitions: 3, count: 0, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "15"})
	c := e.start(context.Background())
	waitFor(t, "10 commits", func() bool { return c.Status().Progress.Commits >= 10 })
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.fp.sink.mu.Lock()
	commits := append([]sdk.CommitRequest(nil), e.fp.sink.commits...)
	e.fp.sink.mu.Unlock()
	next := map[string]int64{}
	var last uint64
	for _, cr := range commits {
		if cr.Checkpoint <= last {
			t.Fatalf("checkpoint %d after %d", cr.Checkpoint, last)
		}
		last = cr.Checkpoint
		for _, r := range cr.Ranges {
			if r.From != next[r.Partition] || r.Next <= r.From {
				t.Fatalf("checkpoint %d: range %+v does not continue at %d", cr.Checkpoint, r, next[r.Partition])
			}
			next[r.Partition] = r.Next
		}
	}
	if v := e.fp.sink.violationsCopy(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
	// Shutdown committed everything that was read: the frontier equals
	// what the source handed on.
	total, dups := e.fp.sink.committedRows()
	st := c.Status()
	if dups != 0 || int64(total) != st.Progress.RecordsIn {
		t.Fatalf("committed %d rows (%d dups), read %d", total, dups, st.Progress.RecordsIn)
	}
}

func TestIdleConnectorMakesNoCommit(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 1, batch: 1}
	e := newEnv(t, src, nil)
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	n := c.Status().Progress.Commits
	// An empty barrier leaves no trace in the fakes, but after end of
	// input each checkpointer pass declares it again: clear it and wait
	// for it, five times, so five chances to commit went by.
	for range 5 {
		c.progress.endOfInput.Store(false)
		waitFor(t, "a checkpointer pass", func() bool { return c.Status().Progress.EndOfInput })
	}
	if got := c.Status().Progress.Commits; got != n {
		t.Fatalf("commits went from %d to %d with no data", n, got)
	}
}

func TestSlowCommitDoesNotStallWrites(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 5, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "10", "checkpoint.max.pending": "2"})
	e.fp.sink.maxPending = 2
	e.fp.sink.commitDelay = 150 * time.Millisecond
	c := e.start(context.Background())
	waitFor(t, "3 commits", func() bool { return c.Status().Progress.Commits >= 3 })
	if n := e.fp.sink.writesDuringCommit.Load(); n == 0 {
		t.Fatal("no write happened while a commit ran: commits are not pipelined")
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := e.fp.sink.violationsCopy(); len(v) > 0 {
		t.Fatalf("violations (pending bound?): %v", v)
	}
}

func TestCommitRetriesThenSucceeds(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 100, batch: 10}
	e := newEnv(t, src, nil)
	e.fp.sink.commitFails = 3
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(2, 100)
}

func TestCommitFailsPastTheLimit(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 100, batch: 10}
	e := newEnv(t, src, nil)
	e.opts.Tuning.CommitMaxAttempts = 4
	e.fp.sink.commitErr = errors.New("catalog unreachable")
	c := e.start(context.Background())
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("connector did not fail")
	}
	st := c.Status()
	if st.State != StateFailed || !strings.Contains(st.Trace, "failed 4 times") || !strings.Contains(st.Trace, "catalog unreachable") {
		t.Fatalf("status %s %q", st.State, st.Trace)
	}
	for i, ts := range st.Tasks {
		if ts.State != StateFailed || !strings.Contains(ts.Trace, "catalog unreachable") {
			t.Errorf("task %d: %s %q", i, ts.State, ts.Trace)
		}
	}
	if c.Err() == nil {
		t.Error("Err() is nil after a failure")
	}
	if total, _ := e.fp.sink.committedRows(); total != 0 {
		t.Errorf("%d rows visible although no commit succeeded", total)
	}
	if n := e.fp.live(); n != 0 {
		t.Errorf("%d processes alive after the failure", n)
	}
}

func TestGapFailsTheTask(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 200, batch: 10, gapAt: 55}
	e := newEnv(t, src, nil)
	c := e.start(context.Background())
	waitFor(t, "task 0 failed", func() bool { return c.Status().Tasks[0].State == StateFailed })
	tr := c.Status().Tasks[0].Trace
	if !strings.Contains(tr, "topic/0") || !strings.Contains(tr, "gap") || !strings.Contains(tr, "[50, 55)") {
		t.Fatalf("trace %q should name the partition and the missing offsets", tr)
	}
	// The other task goes on to the end.
	waitFor(t, "topic/1 committed", func() bool { return e.fp.sink.frontierCopy()["topic/1"] == 200 })
	if st := c.Status(); st.Tasks[1].State != StateRunning || st.Progress.EndOfInput {
		t.Fatalf("status %+v", st)
	}
	// What task 0 wrote before the gap is committed, nothing after it.
	if got := e.fp.sink.frontierCopy()["topic/0"]; got != 50 {
		t.Fatalf("topic/0 frontier = %d, want 50", got)
	}
}

func TestOverlapIsTrimmed(t *testing.T) {
	src := &fakeSourceCfg{partitions: 3, count: 500, batch: 7, replayEvery: 3}
	e := newEnv(t, src, nil)
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(3, 500)
}

func TestShutdownCommitsWhatWasRead(t *testing.T) {
	src := &fakeSourceCfg{partitions: 4, batch: 25, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "1h"})
	ctx, cancel := context.WithCancel(context.Background())
	c := e.start(ctx)
	waitFor(t, "records read", func() bool { return c.Status().Progress.RecordsIn > 1000 })
	if n := c.Status().Progress.Commits; n != 0 {
		t.Fatalf("%d commits before the interval", n)
	}
	cancel() // the lifetime ends: a graceful stop
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("connector did not stop")
	}
	if err := c.Err(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	total, dups := e.fp.sink.committedRows()
	if in := c.Status().Progress.RecordsIn; dups != 0 || int64(total) != in || c.Status().Progress.Commits != 1 {
		t.Fatalf("committed %d (%d dups) of %d read in %d commits", total, dups, in, c.Status().Progress.Commits)
	}
	if n := e.fp.live(); n != 0 {
		t.Errorf("%d processes alive", n)
	}
}

// A source Commit that never answers (librdkafka's during a rebalance)
// does not hold up a clean stop: the final acknowledgement is cut short
// after ackTimeout, and everything read is committed.
func TestStopDoesNotWaitForAHungSourceCommit(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 25, readDelay: time.Millisecond, commitHangs: true}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "1h"})
	c := e.start(context.Background())
	waitFor(t, "records read", func() bool { return c.Status().Progress.RecordsIn > 500 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(start); took > ackTimeout+5*time.Second {
		t.Errorf("stop took %v with a hung source commit; want about ackTimeout (%v) at most", took, ackTimeout)
	}
	total, dups := e.fp.sink.committedRows()
	if in := c.Status().Progress.RecordsIn; dups != 0 || int64(total) != in {
		t.Fatalf("committed %d (%d dups) of %d read", total, dups, in)
	}
}

func TestSinkCrashRewindsToTheFrontier(t *testing.T) {
	src := &fakeSourceCfg{partitions: 4, count: 3000, batch: 20, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "10"})
	c := e.start(context.Background())
	waitFor(t, "some commits", func() bool { return c.Status().Progress.Commits >= 3 })
	e.fp.latest(sdk.KindSink).crash("sink crashed on purpose")
	waitFor(t, "a second sink", func() bool { return e.fp.starts(sdk.KindSink) >= 2 })
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(4, 3000)
	if n := c.Status().Progress.PluginRestarts; n < 1 {
		t.Errorf("plugin restarts = %d", n)
	}
	if src.opens.Load() < 4 {
		t.Errorf("source tasks opened %d times; a rewind reopens them", src.opens.Load())
	}
}

// A write failing on a service that is down (sdk.ErrTransient) reopens
// the sink on the same process and rewinds to its frontier: the connector
// does not fail, and nothing is lost or doubled.
func TestTransientWriteFailureReopensTheSink(t *testing.T) {
	src := &fakeSourceCfg{partitions: 4, count: 3000, batch: 20, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "10"})
	c := e.start(context.Background())
	waitFor(t, "some commits", func() bool { return c.Status().Progress.Commits >= 3 })
	tbl := e.fp.sink
	tbl.mu.Lock()
	tbl.failWrite = sdk.Transient(errors.New("object store unreachable"))
	opens := tbl.opens
	tbl.mu.Unlock()
	waitFor(t, "a reopened sink", func() bool {
		tbl.mu.Lock()
		defer tbl.mu.Unlock()
		return tbl.opens > opens
	})
	if err := c.Err(); err != nil {
		t.Fatalf("the connector failed on a transient write failure: %v", err)
	}
	tbl.mu.Lock()
	tbl.failWrite = nil
	tbl.mu.Unlock()
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(4, 3000)
	if n := e.fp.starts(sdk.KindSink); n != 1 {
		t.Errorf("sink processes started %d times, want 1 (the process lives on)", n)
	}
}

// A service that stays down fails the connector once the reopens have
// found it down for as long as a commit may retry (CommitMaxElapsed).
func TestTransientWriteFailuresFailTheConnectorPastTheLimit(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 100, batch: 10}
	e := newEnv(t, src, nil)
	e.opts.Tuning.CommitMaxElapsed = 3 * time.Second
	e.fp.sink.failWrite = sdk.Transient(errors.New("object store unreachable"))
	c := e.start(context.Background())
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("the connector did not fail although its sink stayed unavailable")
	}
	st := c.Status()
	if st.State != StateFailed || !strings.Contains(st.Trace, "on every reopen") || !strings.Contains(st.Trace, "object store unreachable") {
		t.Fatalf("status %s %q", st.State, st.Trace)
	}
	e.fp.sink.mu.Lock()
	opens := e.fp.sink.opens
	e.fp.sink.mu.Unlock()
	if opens < 3 {
		t.Errorf("the sink was opened %d times before the connector failed, want several reopens", opens)
	}
}

func TestSourceAndPartitionerCrashesLoseNothing(t *testing.T) {
	src := &fakeSourceCfg{partitions: 4, count: 2000, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "10"})
	e.fp.part.crashAt = 30
	c := e.start(context.Background())
	waitFor(t, "some reads", func() bool { return src.reads.Load() > 40 })
	e.fp.latest(sdk.KindSource).crash("source crashed on purpose")
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(4, 2000)
	if e.fp.starts(sdk.KindSource) < 2 || e.fp.starts(sdk.KindPartitioner) < 2 {
		t.Errorf("starts: source %d partitioner %d", e.fp.starts(sdk.KindSource), e.fp.starts(sdk.KindPartitioner))
	}
	if e.fp.starts(sdk.KindSink) != 1 {
		t.Errorf("the sink restarted (%d starts) though it never crashed", e.fp.starts(sdk.KindSink))
	}
}

func TestRestartsExhaustedFailTheTasks(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"plugin.restart.max.attempts": "2"})
	c := e.start(context.Background())
	waitFor(t, "running", func() bool { return c.Status().Progress.RecordsIn > 0 })
	// Every new source process dies at once.
	e.fp.mu.Lock()
	e.fp.startErr[sdk.KindSource] = errors.New("exec format error")
	e.fp.mu.Unlock()
	e.fp.latest(sdk.KindSource).crash("segfault")
	waitFor(t, "tasks failed", func() bool {
		st := c.Status()
		return st.Tasks[0].State == StateFailed && st.Tasks[1].State == StateFailed
	})
	tr := c.Status().Tasks[0].Trace
	if !strings.Contains(tr, "source") || !strings.Contains(tr, "exec format error") {
		t.Fatalf("trace %q", tr)
	}
}

func TestPauseAndResume(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, nil)
	e.opts.Paused = true
	c := e.start(context.Background())
	waitFor(t, "tasks PAUSED", func() bool {
		st := c.Status()
		return st.Tasks[0].State == StatePaused && st.Tasks[1].State == StatePaused
	})
	pausedLoops(t, c, src, 3)
	if st := c.Status(); st.State != StatePaused || src.reads.Load() != 0 {
		t.Fatalf("paused connector: state %s, %d reads", st.State, src.reads.Load())
	}
	c.Resume()
	waitFor(t, "reads", func() bool { return src.reads.Load() > 5 })
	c.Pause()
	waitFor(t, "tasks PAUSED: the Reads under way returned", func() bool {
		st := c.Status()
		return st.Tasks[0].State == StatePaused && st.Tasks[1].State == StatePaused
	})
	n := src.reads.Load()
	pausedLoops(t, c, src, 3)
	if got := src.reads.Load(); got != n {
		t.Fatalf("reads went on while paused: %d -> %d", n, got)
	}
	// What was read before the pause gets committed.
	waitFor(t, "all read committed", func() bool {
		total, _ := e.fp.sink.committedRows()
		return int64(total) == c.Status().Progress.RecordsIn
	})
	if st := c.Status(); st.Tasks[0].State != StatePaused {
		t.Fatalf("task state %s", st.Tasks[0].State)
	}
}

// TestPausedOnlyOnceReadsReturned: a Read under way when the pause comes
// may still deliver records, so the task is not PAUSED until it returned.
func TestPausedOnlyOnceReadsReturned(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 10, hold: make(chan struct{})}
	e := newEnv(t, src, nil)
	e.opts.Tuning.ReadPoll = time.Minute
	c := e.start(context.Background())
	waitFor(t, "both tasks inside a Read", func() bool { return src.inRead.Load() == 2 })
	c.Pause() // it settles the states before it returns
	st := c.Status()
	if st.State == StatePaused || st.Tasks[0].State == StatePaused || st.Tasks[1].State == StatePaused {
		t.Fatalf("PAUSED while the Reads are under way: connector %s, tasks %s %s", st.State, st.Tasks[0].State, st.Tasks[1].State)
	}
	close(src.hold) // the Reads return their batches
	waitFor(t, "PAUSED once the Reads returned", func() bool {
		st := c.Status()
		return st.State == StatePaused && st.Tasks[0].State == StatePaused && st.Tasks[1].State == StatePaused
	})
	in, reads := c.Status().Progress.RecordsIn, src.reads.Load()
	if in == 0 {
		t.Fatal("the Reads under way at the pause delivered nothing")
	}
	pausedLoops(t, c, src, 3)
	if st := c.Status(); st.Progress.RecordsIn != in || src.reads.Load() != reads {
		t.Fatalf("read on after PAUSED: records %d -> %d, reads %d -> %d", in, st.Progress.RecordsIn, reads, src.reads.Load())
	}
	c.Resume()
	waitFor(t, "reading after resume", func() bool { return src.reads.Load() > reads })
	if st := c.Status(); st.State != StateRunning {
		t.Fatalf("after resume: %s", st.State)
	}
}

// pausedLoops wakes every task's read loop n times while paused and waits
// until each wake was seen: an acknowledgement wakes the loop, which
// delivers it to the source's Commit and must then wait again rather than
// read. So a check after it had n chances per task to catch a read.
func pausedLoops(t *testing.T, c *Connector, src *fakeSourceCfg, n int) {
	t.Helper()
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s == nil {
		t.Fatal("no session")
	}
	s.runnersMu.Lock()
	runners := slices.Clone(s.runners)
	s.runnersMu.Unlock()
	for range n {
		for _, r := range runners {
			if r == nil {
				t.Fatal("a task has no runner")
			}
			before := src.acks.Load()
			r.acknowledge(map[string]int64{"wake-probe": 0})
			waitFor(t, "the paused loop to take the acknowledgement", func() bool { return src.acks.Load() > before })
		}
	}
}

func TestRestartTask(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 3000, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, nil)
	c := e.start(context.Background())
	waitFor(t, "reads", func() bool { return src.reads.Load() > 10 })
	if err := c.RestartTask(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartTask(context.Background(), 7); err == nil {
		t.Fatal("restart of task 7 of 2 succeeded")
	}
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(2, 3000)
	if src.opens.Load() != 3 {
		t.Errorf("source opened %d times, want 3", src.opens.Load())
	}
}

func TestPartitionsRevokedWaitsForTheCommit(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "1h", "tasks.max": "1"})
	c := e.start(context.Background())
	waitFor(t, "reads", func() bool { return c.Status().Progress.RecordsIn >= 100 })
	src.mu.Lock()
	host := src.hosts[0]
	src.mu.Unlock()
	pos := c.sess.startPositions(context.Background(), nil) // what the host accepted so far
	if err := host.PartitionsRevoked(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	fr := e.fp.sink.frontierCopy()
	for p, n := range pos {
		if fr[p] < n {
			t.Fatalf("PartitionsRevoked returned before %s was committed to %d (frontier %d)", p, n, fr[p])
		}
	}
}

// TestSlowDeadLetterQueueRetriesThenNamesTheReason: while the dead-letter
// producer cannot connect, the task's Reads end early and the source tries
// again (no failure from a Read's deadline); once the connect attempt
// gives up, the task fails with the producer's reason.
func TestSlowDeadLetterQueueRetriesThenNamesTheReason(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	src := &fakeSourceCfg{partitions: 1, batch: 10, readDelay: time.Millisecond,
		letters: []sdk.DeadLetter{{Partition: "topic/0", Offset: 3, Stage: "deserialize", Reason: "bad magic byte"}}}
	e := newEnv(t, src, map[string]string{"tasks.max": "1", "errors.tolerance": "all",
		"errors.deadletterqueue.topic.name": "c-dlq", "errors.deadletterqueue.producer.bootstrap.servers": closed})
	e.opts.Tuning.ReadPoll = 300 * time.Millisecond
	e.opts.Tuning.DeadLetterConnectTimeout = 3 * time.Second
	c := e.start(context.Background())
	// A failed task reads no more, so the third try means two Reads ended
	// at their deadline without failing it.
	var st Status
	waitFor(t, "dead-letter retries", func() bool {
		st = c.Status()
		return st.Tasks[0].State == StateFailed || src.letterTries.Load() >= 3
	})
	if st.Tasks[0].State == StateFailed {
		t.Fatalf("the task failed after %d dead-letter tries, while the queue was still connecting: %s", src.letterTries.Load(), st.Tasks[0].Trace)
	}
	waitFor(t, "task FAILED", func() bool { return c.Status().Tasks[0].State == StateFailed })
	trace := c.Status().Tasks[0].Trace
	for _, want := range []string{"dead-letter queue c-dlq", "brokers are down"} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace %q lacks %q", trace, want)
		}
	}
}

func TestDeadLettersAndSchemas(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"errors.tolerance": "all", "errors.log.enable": "true"})
	c := e.start(context.Background())
	waitFor(t, "a host", func() bool { src.mu.Lock(); defer src.mu.Unlock(); return len(src.hosts) > 0 })
	src.mu.Lock()
	host := src.hosts[0]
	src.mu.Unlock()
	ctx := context.Background()
	if err := host.DeadLetter(ctx, []sdk.DeadLetter{{Partition: "topic/0", Offset: 1, Stage: "deserialize", Reason: "bad"}}); err != nil {
		t.Fatal(err)
	}
	if n := c.Status().Progress.DeadLetters; n != 1 {
		t.Fatalf("dead letters = %d", n)
	}
	if err := host.AdmitSchema(ctx, client.Schema{ID: 666}); !errors.Is(err, sdk.ErrSchemaRejected) {
		t.Fatalf("AdmitSchema of a rejected schema: %v", err)
	}
	if err := host.AdmitSchema(ctx, client.Schema{ID: 2}); err != nil {
		t.Fatal(err)
	}

	// errors.tolerance=none: DeadLetter returns the error to fail with.
	src2 := &fakeSourceCfg{partitions: 1, batch: 10, readDelay: time.Millisecond}
	e2 := newEnv(t, src2, nil)
	e2.start(context.Background())
	waitFor(t, "a host", func() bool { src2.mu.Lock(); defer src2.mu.Unlock(); return len(src2.hosts) > 0 })
	src2.mu.Lock()
	host2 := src2.hosts[0]
	src2.mu.Unlock()
	err := host2.DeadLetter(ctx, []sdk.DeadLetter{{Partition: "topic/0", Offset: 9, Stage: "convert", Reason: "bad"}})
	if err == nil || !strings.Contains(err.Error(), "topic/0@9") {
		t.Fatalf("tolerance none: %v", err)
	}
}

func TestRejectedRecordsAreDeadLettered(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, count: 50, batch: 10}
	e := newEnv(t, src, map[string]string{"errors.tolerance": "all"})
	e.fp.sink.rejectOff = map[int64]bool{3: true, 17: true}
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	if n := c.Status().Progress.DeadLetters; n != 2 {
		t.Fatalf("dead letters = %d", n)
	}
	if fr := e.fp.sink.frontierCopy(); fr["topic/0"] != 50 {
		t.Fatalf("frontier %v", fr)
	}

	// With errors.tolerance=none a rejection fails the connector before
	// the checkpoint holding it commits.
	src2 := &fakeSourceCfg{partitions: 1, count: 50, batch: 10}
	e2 := newEnv(t, src2, nil)
	e2.fp.sink.rejectOff = map[int64]bool{3: true}
	c2 := e2.start(context.Background())
	select {
	case <-c2.Done():
	case <-time.After(patience):
		t.Fatal("connector did not fail")
	}
	if st := c2.Status(); st.State != StateFailed || !strings.Contains(st.Trace, "topic/0@3") {
		t.Fatalf("status %s %q", st.State, st.Trace)
	}
	if fr := e2.fp.sink.frontierCopy(); fr["topic/0"] > 0 {
		t.Fatalf("the rejected record's checkpoint committed: frontier %v", fr)
	}
}

func TestSkippedRecordsAreCounted(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, count: 50, batch: 10}
	e := newEnv(t, src, nil)
	e.fp.sink.skipOff = map[int64]bool{3: true, 17: true, 41: true}
	m := metrics.New()
	e.opts.Metrics = m.Connector("c")
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	// Skipped records are neither dead letters nor a failure: the
	// checkpoints holding them commit, and the count reaches the status
	// and floe_records_skipped_total.
	p := c.Status().Progress
	if p.Skipped != 3 || p.DeadLetters != 0 {
		t.Fatalf("skipped = %d, dead letters = %d; want 3 and 0", p.Skipped, p.DeadLetters)
	}
	if fr := e.fp.sink.frontierCopy(); fr["topic/0"] != 50 {
		t.Fatalf("frontier %v", fr)
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "floe_records_skipped_total" && len(mf.GetMetric()) == 1 {
			got = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if got != 3 {
		t.Fatalf("floe_records_skipped_total{connector=\"c\"} = %v; want 3 (-1: no series)", got)
	}
}

func TestOffsetOverride(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 100, batch: 10}
	e := newEnv(t, src, nil)
	// The table holds topic/0 up to 80 and topic/1 up to 100; the user
	// rewinds topic/0 to 30 and leaves topic/1 where it is.
	e.fp.sink.frontier = map[string]int64{"topic/0": 80, "topic/1": 100}
	e.fp.sink.checkpoint = 4
	ctx := context.Background()
	if err := e.store.PutOverride(ctx, "c", store.Override{Positions: map[string]int64{"topic/0": 30, "topic/1": 100}, AfterCheckpoint: 4}); err != nil {
		t.Fatal(err)
	}
	c := e.start(ctx)
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.fp.sink.mu.Lock()
	got := e.fp.sink.resets[0]
	e.fp.sink.mu.Unlock()
	if got == nil || got.Positions["topic/0"] != 30 || got.Positions["topic/1"] != 100 || got.AfterCheckpoint != 4 {
		t.Fatalf("the sink's Open carried offsets reset %+v; want topic/0 at 30, topic/1 at 100 after checkpoint 4", got)
	}
	if _, ok := e.fp.sink.configs[0]["floe.offsets.reset"]; ok {
		t.Fatalf("the override still travels in the sink's config too: %v", e.fp.sink.configs[0])
	}
	e.fp.sink.mu.Lock()
	first := e.fp.sink.commits[0]
	e.fp.sink.mu.Unlock()
	if first.Ranges[0].Partition != "topic/0" || first.Ranges[0].From != 30 {
		t.Fatalf("first commit after the override: %+v", first.Ranges)
	}
	if _, err := e.store.Override(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("override still stored after its commit: %v", err)
	}
}

func TestSpentOverrideIsIgnored(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, count: 100, batch: 10}
	e := newEnv(t, src, nil)
	e.fp.sink.frontier = map[string]int64{"topic/0": 60}
	e.fp.sink.checkpoint = 9
	ctx := context.Background()
	_ = e.store.PutOverride(ctx, "c", store.Override{Positions: map[string]int64{"topic/0": 0}, AfterCheckpoint: 5})
	c := e.start(ctx)
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.fp.sink.mu.Lock()
	first := e.fp.sink.commits[0]
	e.fp.sink.mu.Unlock()
	if first.Ranges[0].From != 60 || first.Checkpoint != 10 {
		t.Fatalf("resumed from %+v at checkpoint %d; want the frontier 60 and checkpoint 10", first.Ranges, first.Checkpoint)
	}
	if _, err := e.store.Override(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("spent override kept: %v", err)
	}
}

func TestMaintenanceRunsAndRestartsAlone(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, map[string]string{"maintenance": "fake-maint"})
	m := metrics.New()
	e.opts.Metrics = m.Connector("c")
	c := e.start(context.Background())
	waitFor(t, "cycles", func() bool { return e.fp.maint.cycles.Load() >= 3 })

	// The runs reach the status and the metrics, the health the gauges.
	waitFor(t, "runs in the status", func() bool {
		mp := c.Status().Progress.Maintenance
		return mp != nil && mp.Runs >= 4 && mp.FailedRuns >= 1
	})
	mp := c.Status().Progress.Maintenance
	if len(mp.LastRuns) != 2 || mp.LastRuns[0].Task != "expire-snapshots" || mp.LastRuns[0].Error == "" ||
		mp.LastRuns[1].Task != "rewrite-data-files" || mp.LastRuns[1].FilesAfter != 2 || mp.Error != "" {
		t.Fatalf("maintenance progress = %+v", mp)
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "floe_maintenance_runs_total"); err != nil || n != 2 {
		t.Fatalf("floe_maintenance_runs_total: %d series (ok and failed expected), %v", n, err)
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "floe_table_data_files"); err != nil || n != 1 {
		t.Fatalf("floe_table_data_files: %d series, %v", n, err)
	}
	st, fromMaint, err := c.Tables(context.Background())
	if err != nil || !fromMaint || len(st.Tables) != 1 || st.Tables[0].DataFiles != 3 {
		t.Fatalf("Tables() = %+v %v %v", st, fromMaint, err)
	}
	e.fp.latest(sdk.KindMaintenance).crash("oom")
	n := e.fp.maint.cycles.Load()
	waitFor(t, "cycles after the restart", func() bool { return e.fp.maint.cycles.Load() > n+2 })
	if e.fp.starts(sdk.KindSink) != 1 || e.fp.starts(sdk.KindSource) != 1 {
		t.Fatal("a maintenance crash restarted other plugins")
	}
}

func TestTablesFromTheSink(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, count: 30, batch: 10}
	e := newEnv(t, src, nil)
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	st, fromMaint, err := c.Tables(context.Background())
	if err != nil || fromMaint || len(st.Tables) != 1 || st.Tables[0].Table != "db.t" || st.Tables[0].Records != 30 {
		t.Fatalf("Tables() = %+v %v %v", st, fromMaint, err)
	}
	ct := c.CommittedTables()
	if len(ct) != 1 || ct[0].Table != "db.t" || ct[0].Records != 30 || ct[0].Commits == 0 || ct[0].LastCommit.IsZero() {
		t.Fatalf("CommittedTables() = %+v", ct)
	}
}

func TestProcessLimitsReachTheStart(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, count: 10, batch: 10}
	e := newEnv(t, src, map[string]string{"process.sink.cpus": "1.5", "process.sink.memory": "256MiB", "process.sink.nice": "5"})
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.fp.mu.Lock()
	o := e.fp.opts[sdk.KindSink]
	e.fp.mu.Unlock()
	env := strings.Join(o.Env, " ")
	if env != "GOMAXPROCS=2 GOMEMLIMIT=268435456" || o.Nice != 5 || o.Logger == nil {
		t.Fatalf("start options: env %q nice %d", env, o.Nice)
	}
}

func TestStopHardWhenCtxEnds(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, batch: 10, readDelay: time.Millisecond}
	e := newEnv(t, src, nil)
	e.fp.sink.commitDelay = time.Hour
	c := e.start(context.Background())
	waitFor(t, "reads", func() bool { return c.Status().Progress.RecordsIn > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := c.Stop(ctx)
	if err == nil || !strings.Contains(err.Error(), "read again") {
		t.Fatalf("Stop = %v", err)
	}
	if n := e.fp.live(); n != 0 {
		t.Fatalf("%d processes alive", n)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := goruntime.NumGoroutine()
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
		}()
	}
	wg.Wait()
	func() {
		src := &fakeSourceCfg{partitions: 3, count: 500, batch: 10}
		e := newEnv(t, src, map[string]string{"maintenance": "fake-maint"})
		c, err := Start(context.Background(), e.opts)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
		e.fp.latest(sdk.KindSink).crash("again")
		// Stop only once the crash was handled, so its goroutines count.
		waitFor(t, "a second sink", func() bool { return e.fp.starts(sdk.KindSink) >= 2 })
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}()
	waitFor(t, "goroutines to end", func() bool { return goruntime.NumGoroutine() <= before+2 })
}

func TestSettings(t *testing.T) {
	base := map[string]string{"name": "c", "connector.class": "s", "source": "x"}
	s, err := ParseSettings("c", base)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tasks != 1 || s.CommitInterval != DefaultCommitInterval || s.MaxPending != 3 || s.MaxBufferedBytes != 512<<20 ||
		s.MaxInflight != 4 || s.RestartMaxAttempts != 5 || s.RestartBackoff != time.Second || s.DLQ.TolerateAll {
		t.Fatalf("defaults %+v", s)
	}
	alt := maps.Clone(base)
	alt[KeyCommitIntervalAlt] = "1000"
	if s, _ := ParseSettings("c", alt); s.CommitInterval != time.Second {
		t.Fatalf("alias: %v", s.CommitInterval)
	}
	alt[KeyCommitInterval] = "2s"
	if s, _ := ParseSettings("c", alt); s.CommitInterval != 2*time.Second {
		t.Fatalf("commit.interval.ms wins: %v", s.CommitInterval)
	}
	bad := maps.Clone(base)
	bad["tasks.max"] = "0"
	bad["process.sink.memory"] = "lots"
	bad["errors.tolerance"] = "some"
	_, err = ParseSettings("c", bad)
	for _, k := range []string{"tasks.max", "process.sink.memory", "errors.tolerance"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not name %s", err, k)
		}
	}
	for in, want := range map[string]int64{"1024": 1024, "512MiB": 512 << 20, "2G": 2 << 30, "1.5 KiB": 1536} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d %v", in, got, err)
		}
	}
	if backoff(time.Second, 1) != time.Second || backoff(time.Second, 3) != 4*time.Second || backoff(time.Second, 20) != MaxRestartBackoff {
		t.Error("backoff")
	}
}

func TestBufferedBytesForceCheckpoints(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 300, batch: 10}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "1h", "checkpoint.max.buffered.bytes": "2000"})
	c := e.start(context.Background())
	waitFor(t, "end of input", func() bool { return c.Status().Progress.EndOfInput })
	e.checkExactlyOnce(2, 300)
	if n := c.Status().Progress.Commits; n < 5 {
		t.Fatalf("%d commits: the byte limit did not force checkpoints", n)
	}
}

func TestPendingLimitSlowsIngestion(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, batch: 10}
	e := newEnv(t, src, map[string]string{"commit.interval.ms": "5", "checkpoint.max.pending": "1", "checkpoint.max.buffered.bytes": "3000"})
	e.fp.sink.maxPending = 1
	e.fp.sink.commitDelay = 200 * time.Millisecond
	c := e.start(context.Background())
	waitFor(t, "2 commits", func() bool { return c.Status().Progress.Commits >= 2 })
	// With one pending checkpoint and a 3000-byte epoch, reads stall
	// while a commit runs: far fewer records than an unbounded pipeline.
	in := c.Status().Progress.RecordsIn
	t.Logf("%d records read during 2 slow commits", in)
	if in > 2000 {
		t.Fatalf("%d records read in ~400 ms of commits: ingestion did not wait", in)
	}
	if st := c.Status().Progress; st.PendingCheckpoints > 1 {
		t.Fatalf("pending %d", st.PendingCheckpoints)
	}
	if v := e.fp.sink.violationsCopy(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
}

// A sink that declares the waits capability is asked what it waits for,
// and the status shows its answer until the sink waits no more; one that
// does not declare it is never asked.
func TestStatusShowsWhatTheSinkWaitsFor(t *testing.T) {
	src := &fakeSourceCfg{partitions: 1, count: 0, batch: 10}
	e := newEnv(t, src, nil)
	sink := e.opts.Components[sdk.KindSink]
	sink.Capabilities = []sdk.Capability{sdk.CapabilityWaits}
	e.opts.Components[sdk.KindSink] = sink
	since := time.Now().Add(-3 * time.Second).Truncate(time.Millisecond)
	want := sdk.ServiceWait{Service: "catalog at http://127.0.0.1:8181", Since: since, Attempts: 4, LastError: "connection refused"}
	e.fp.mu.Lock()
	e.fp.waits = []sdk.ServiceWait{want}
	e.fp.mu.Unlock()
	c := e.start(context.Background())
	defer func() { _ = c.Stop(context.Background()) }()
	waitFor(t, "the wait in the status", func() bool { return len(c.Status().Progress.Waits) == 1 })
	if got := c.Status().Progress.Waits[0]; got != want {
		t.Fatalf("status waits for %+v, the sink said %+v", got, want)
	}
	e.fp.mu.Lock()
	e.fp.waits = nil
	e.fp.mu.Unlock()
	waitFor(t, "the wait to clear", func() bool { return len(c.Status().Progress.Waits) == 0 })

	e2 := newEnv(t, src, nil)
	c2 := e2.start(context.Background())
	waitFor(t, "a commit", func() bool { return c2.Status().Progress.Commits > 0 })
	time.Sleep(2 * waitsPoll)
	_ = c2.Stop(context.Background())
	e2.fp.mu.Lock()
	defer e2.fp.mu.Unlock()
	if e2.fp.waitsAsked != 0 {
		t.Fatalf("a sink without the waits capability was asked %d times what it waits for", e2.fp.waitsAsked)
	}
}
