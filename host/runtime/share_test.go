package runtime

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// hub is an in-memory control topic: every link receives every message
// published by any link after it joined, in publish order, itself
// included (as a Kafka partition read by every worker does).
type hub struct {
	mu    sync.Mutex
	links []*hubLink
	// drop, when set, loses the messages it returns true for.
	drop func(ControlMessage) bool
	sent []ControlMessage
}

type hubLink struct {
	h      *hub
	mu     sync.Mutex
	queue  []ControlMessage
	busy   bool // a message was handed out and not yet handled
	signal chan struct{}
	closed bool
}

func (h *hub) link() *hubLink {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := &hubLink{h: h, signal: make(chan struct{}, 1)}
	h.links = append(h.links, l)
	return l
}

func (h *hub) messages() []ControlMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sent)
}

func (l *hubLink) Publish(ctx context.Context, m ControlMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	if l.h.drop != nil && l.h.drop(m) {
		return nil
	}
	l.h.sent = append(l.h.sent, m)
	for _, o := range l.h.links {
		o.mu.Lock()
		if !o.closed {
			o.queue = append(o.queue, m)
			select {
			case o.signal <- struct{}{}:
			default:
			}
		}
		o.mu.Unlock()
	}
	return nil
}

func (l *hubLink) Receive(ctx context.Context) (ControlMessage, error) {
	for {
		l.mu.Lock()
		l.busy = false
		if l.closed {
			l.mu.Unlock()
			return ControlMessage{}, errors.New("link closed")
		}
		if len(l.queue) > 0 {
			m := l.queue[0]
			l.queue = l.queue[1:]
			l.busy = true
			l.mu.Unlock()
			return m, nil
		}
		l.mu.Unlock()
		select {
		case <-l.signal:
		case <-ctx.Done():
			return ControlMessage{}, ctx.Err()
		}
	}
}

func (l *hubLink) Sync(ctx context.Context) error {
	for {
		l.mu.Lock()
		idle := len(l.queue) == 0 && !l.busy
		l.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *hubLink) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// clusterEnv is a connector run by several workers: runtimes in one
// process, each with its own fake processes, sharing one table and one
// hub.
type clusterEnv struct {
	t       *testing.T
	hub     *hub
	table   *fakeTable
	src     *fakeSourceCfg
	workers map[string]*testEnv
	rts     map[string]*Connector
	epoch   int64
	gapWait time.Duration // Tuning.GapWait of the workers started next
}

func newClusterEnv(t *testing.T, src *fakeSourceCfg, cfg map[string]string) *clusterEnv {
	return &clusterEnv{t: t, hub: &hub{}, table: func() *fakeTable { ft := newFakeTable(); ft.crossProcess = true; return ft }(),
		src: src, workers: map[string]*testEnv{}, rts: map[string]*Connector{}}
}

// start starts worker id's runtime with its share.
func (ce *clusterEnv) start(ctx context.Context, id string, tasks []int, committer bool, cfg map[string]string) *Connector {
	ce.t.Helper()
	e := newEnv(ce.t, ce.src, cfg)
	e.fp.sink = ce.table
	e.opts.Tuning.GapWait = ce.gapWait
	if prev := ce.anyEnv(); prev != nil {
		e.opts.Offsets = prev.opts.Offsets // the cluster's offsets store
	}
	e.opts.Share = &Share{Worker: id, Tasks: tasks, Committer: committer, CommitterEpoch: ce.epoch, Link: ce.hub.link()}
	ce.workers[id] = e
	c := e.start(ctx)
	ce.rts[id] = c
	return c
}

func (ce *clusterEnv) anyEnv() *testEnv {
	for _, e := range ce.workers {
		return e
	}
	return nil
}

// move hands the shares out anew: tasks per worker and the committer.
func (ce *clusterEnv) move(committer string, tasks map[string][]int) {
	ce.epoch++
	for id, c := range ce.rts {
		c.SetShare(Share{Worker: id, Tasks: tasks[id], Committer: id == committer, CommitterEpoch: ce.epoch})
	}
}

// committed returns the rows committed to the table.
func (ce *clusterEnv) committed() int {
	n, _ := ce.table.committedRows()
	return n
}

// check verifies the table holds [0, count) of every partition exactly
// once, with no contract violation, and that no commit went back.
func (ce *clusterEnv) check(partitions int, count int64) {
	ce.t.Helper()
	e := &testEnv{t: ce.t, fp: &fakePlugins{sink: ce.table}}
	e.checkExactlyOnce(partitions, count)
	ce.table.mu.Lock()
	defer ce.table.mu.Unlock()
	var last uint64
	for _, c := range ce.table.commits {
		if c.Checkpoint <= last {
			ce.t.Fatalf("commit %d came after commit %d", c.Checkpoint, last)
		}
		last = c.Checkpoint
	}
}

// stopAndCheck stops the workers in order and checks that the table
// holds no row twice and exactly the rows its frontier sums to (no gap).
func (ce *clusterEnv) stopAndCheck(ctx context.Context, workers ...*Connector) {
	ce.t.Helper()
	for _, c := range workers {
		if err := c.Stop(ctx); err != nil {
			ce.t.Fatalf("stop: %v", err)
		}
	}
	fr := ce.table.frontierCopy()
	total, dups := ce.table.committedRows()
	if dups > 0 {
		ce.t.Fatalf("%d rows committed twice", dups)
	}
	sum := int64(0)
	for _, n := range fr {
		sum += n
	}
	if int64(total) != sum {
		ce.t.Fatalf("the table holds %d rows but its frontier %v sums to %d: a gap", total, fr, sum)
	}
}

// mergedCommits counts the commits that carried the checkpoints of more
// than one worker.
func (ce *clusterEnv) mergedCommits() int {
	n := 0
	for _, m := range ce.hub.messages() {
		if a := m.Answer; a != nil && a.Commit > 0 {
			workers := map[string]bool{}
			for _, r := range a.Covered {
				workers[r.Worker] = true
			}
			if len(workers) > 1 {
				n++
			}
		}
	}
	return n
}

// Two workers each run one task of a connector; one commits for both,
// in commits that carry both workers' checkpoints. Every record lands
// once, and the workers stop cleanly with everything committed.
func TestClusterCommitsEveryWorkersCheckpoints(t *testing.T) {
	src := &fakeSourceCfg{partitions: 4, count: 3000, batch: 50, readDelay: time.Millisecond}
	ce := newClusterEnv(t, src, nil)
	ctx := context.Background()
	a := ce.start(ctx, "a", []int{0}, true, nil)
	b := ce.start(ctx, "b", []int{1}, false, nil)
	waitFor(t, "every record committed", func() bool { return ce.committed() == 4*3000 })
	// Either worker shows the whole frontier, not only its own tasks'
	// partitions.
	for _, c := range []*Connector{a, b} {
		waitFor(t, "the whole frontier on each worker", func() bool {
			pos, _, _ := c.Offsets()
			return maps.Equal(pos, ce.table.frontierCopy())
		})
	}
	// The committer's worker stops last: the other's final checkpoint
	// needs it.
	for _, c := range []*Connector{b, a} {
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	ce.check(4, 3000)
	if n := ce.mergedCommits(); n == 0 {
		t.Fatalf("no commit carried both workers' checkpoints")
	}
	if st := a.Status(); st.Progress.Commits == 0 {
		t.Fatalf("the committer's worker reports no commits: %+v", st.Progress)
	}
}

// The committer moves from one worker to the other while both ingest,
// then a task moves: nothing is lost or doubled, and the workers go on.
func TestClusterCommitterAndTaskMove(t *testing.T) {
	src := &fakeSourceCfg{partitions: 4, batch: 20, readDelay: 2 * time.Millisecond}
	ce := newClusterEnv(t, src, map[string]string{"maintenance": "fake-maint"})
	ctx := context.Background()
	a := ce.start(ctx, "a", []int{0}, true, map[string]string{"maintenance": "fake-maint"})
	b := ce.start(ctx, "b", []int{1}, false, map[string]string{"maintenance": "fake-maint"})
	waitFor(t, "first commits", func() bool { return ce.committed() > 500 })
	if got := ce.workers["b"].fp.starts(sdk.KindMaintenance); got != 0 {
		t.Fatalf("maintenance started %d times on the worker without the committer", got)
	}

	ce.move("b", map[string][]int{"a": {0}, "b": {1}})
	before := ce.committed()
	waitFor(t, "commits by the new committer", func() bool { return ce.committed() > before+500 })
	waitFor(t, "maintenance beside the new committer", func() bool { return ce.workers["b"].fp.starts(sdk.KindMaintenance) > 0 })

	if !slices.ContainsFunc(ce.hub.messages(), func(m ControlMessage) bool {
		return m.Answer != nil && m.Answer.Committer == "b" && m.Answer.Commit > 0
	}) {
		t.Fatal("no commit answered by b, the new committer")
	}

	ce.move("b", map[string][]int{"a": {0, 1}})
	before = ce.committed()
	waitFor(t, "commits after task 1 moved to a", func() bool { return ce.committed() > before+500 })
	waitFor(t, "task 1 running on a", func() bool { return a.Status().Tasks[1].State == StateRunning })
	if st := b.Status(); st.Tasks[1].State != StateUnassigned {
		t.Fatalf("task 1 on b after it moved: %s", st.Tasks[1].State)
	}
	if !slices.Equal(a.LocalTasks(), []int{0, 1}) || len(b.LocalTasks()) != 0 || !b.Commits() || a.Commits() {
		t.Fatalf("shares: a runs %v (commits %v), b runs %v (commits %v)", a.LocalTasks(), a.Commits(), b.LocalTasks(), b.Commits())
	}

	// Stop both, the committer's worker last, and check what the table
	// holds.
	ce.stopAndCheck(ctx, a, b)
	if v := ce.table.violationsCopy(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
}

// A committer that starts after the workers published again for its
// move (the message came before its link listened; here the hub loses
// it) says it is Ready, and they publish again at once: a's checkpoint
// does not wait resendEvery.
func TestClusterNewCommitterAsksAgain(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 20, readDelay: 2 * time.Millisecond}
	ce := newClusterEnv(t, src, nil)
	ctx := context.Background()
	a := ce.start(ctx, "a", []int{0}, true, nil)
	b := ce.start(ctx, "b", []int{1}, false, nil)
	waitFor(t, "first commits", func() bool { return ce.committed() > 200 })

	// Flushed checkpoints are lost from now until b is ready, or for
	// half a second without a Ready.
	ready, moved := false, time.Now()
	// The workers publish meanwhile; the hub calls drop under its lock.
	ce.hub.mu.Lock()
	ce.hub.drop = func(m ControlMessage) bool {
		if m.Answer != nil && m.Answer.Ready && m.Answer.Committer == "b" {
			ready = true
		}
		return !ready && m.Flushed != nil && time.Since(moved) < 500*time.Millisecond
	}
	ce.hub.mu.Unlock()
	ce.move("b", map[string][]int{"a": {0}, "b": {1}})
	waitFor(t, "a checkpoint of a committed by b", func() bool {
		return slices.ContainsFunc(ce.hub.messages(), func(m ControlMessage) bool {
			return m.Answer != nil && m.Answer.Committer == "b" && m.Answer.Commit > 0 &&
				slices.ContainsFunc(m.Answer.Covered, func(r CheckpointRef) bool { return r.Worker == "a" })
		})
	})
	if d := time.Since(moved); d >= resendEvery/2 {
		t.Errorf("b committed a's checkpoint %s after the move; a Ready committer is sent the unanswered checkpoints at once, not after resendEvery (%s)", d, resendEvery)
	}
	ce.stopAndCheck(ctx, a, b)
}

// A lost answer is asked for again: the worker publishes its checkpoint
// again after resendEvery, and the committer answers as before, without
// committing twice.
func TestClusterAnswerLostIsAskedAgain(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, count: 400, batch: 50}
	ce := newClusterEnv(t, src, nil)
	var mu sync.Mutex
	dropped := 0
	ce.hub.drop = func(m ControlMessage) bool {
		mu.Lock()
		defer mu.Unlock()
		if m.Answer != nil && m.Answer.Commit > 0 && dropped == 0 {
			dropped++
			return true
		}
		return false
	}
	ctx := context.Background()
	a := ce.start(ctx, "a", []int{0}, true, nil)
	b := ce.start(ctx, "b", []int{1}, false, nil)
	waitFor(t, "every record committed", func() bool { return ce.committed() == 2*400 })
	for _, c := range []*Connector{b, a} {
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	ce.check(2, 400)
	if dropped != 1 {
		t.Fatalf("dropped %d answers, want 1", dropped)
	}
}

// A committer whose frontier is behind the table (the committer before
// it committed and stopped before answering) gets checkpoints that
// continue the table's frontier, above its own: it reads the table once
// they waited GapWait, and commits them, instead of waiting forever.
func TestClusterCommitterCatchesUpWithAnUnheardCommit(t *testing.T) {
	const count = 20000
	src := &fakeSourceCfg{partitions: 2, count: count, batch: 50, readDelay: time.Millisecond}
	ce := newClusterEnv(t, src, nil)
	ce.gapWait = 300 * time.Millisecond
	ctx := context.Background()
	// a only commits, so it commits nothing of its own around the commit
	// it does not hear of.
	a := ce.start(ctx, "a", nil, true, nil)
	b := ce.start(ctx, "b", []int{0, 1}, false, nil)
	waitFor(t, "first commits of topic/1", func() bool { return ce.table.frontierCopy()["topic/1"] > 0 })
	if err := b.Stop(ctx); err != nil {
		t.Fatalf("stop b: %v", err)
	}
	if from, _ := ce.table.commitUnheard("topic/1", 100); from+100 > count {
		t.Fatalf("b read topic/1 to %d before it stopped; the test needs room after it", from)
	}
	b = ce.start(ctx, "b", []int{0, 1}, false, nil)
	waitFor(t, "every record committed", func() bool { return ce.committed() == 2*count })
	for _, c := range []*Connector{b, a} {
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	ce.check(2, count)
}

// A checkpoint that waits on a gap the table does not explain (what
// filled it is lost) is refused once it waited GapWait, so its worker
// resumes from the frontier; the committer goes on committing.
func TestClusterCommitterRefusesALingeringGap(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 50, readDelay: time.Millisecond}
	ce := newClusterEnv(t, src, nil)
	ce.gapWait = 300 * time.Millisecond
	ctx := context.Background()
	ce.start(ctx, "a", []int{0, 1}, true, nil)
	waitFor(t, "first commits", func() bool { return ce.committed() > 200 })
	at := ce.table.frontierCopy()["topic/0"]
	lost := CheckpointRef{Worker: "z", Session: "s", Checkpoint: 1}
	stray := flushed("z", "s", 1, rng("topic/0", at+1_000_000, at+1_000_010))
	if err := ce.hub.link().Publish(ctx, ControlMessage{Flushed: &stray}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lingering checkpoint refused", func() bool {
		return slices.ContainsFunc(ce.hub.messages(), func(m ControlMessage) bool {
			return m.Answer != nil && slices.ContainsFunc(m.Answer.Refused, func(r Refusal) bool {
				return r.Ref == lost && strings.Contains(r.Reason, "nothing filled the gap")
			})
		})
	})
	before := ce.committed()
	waitFor(t, "commits after the refusal", func() bool { return ce.committed() > before+200 })
}

func rng(p string, from, next int64) sdk.Range {
	return sdk.Range{Partition: p, From: from, Next: next}
}

func flushed(worker, session string, id uint64, ranges ...sdk.Range) FlushedCheckpoint {
	return FlushedCheckpoint{Ref: CheckpointRef{Worker: worker, Session: session, Checkpoint: id}, Ranges: ranges}
}

// origin marks partitions of f as starting where their source began.
func origin(f FlushedCheckpoint, partitions ...string) FlushedCheckpoint {
	f.Origins = partitions
	return f
}

func TestPlanCommit(t *testing.T) {
	frontier := map[string]int64{"t/0": 100, "t/1": 50}
	for _, tc := range []struct {
		name    string
		waiting []FlushedCheckpoint
		chosen  []string
		refused []string
		next    map[string]int64
	}{{
		name: "two workers continue the frontier",
		waiting: []FlushedCheckpoint{
			flushed("a", "s", 1, rng("t/0", 100, 150)),
			flushed("b", "s", 7, rng("t/1", 50, 60)),
		},
		chosen: []string{"a/s/1", "b/s/7"},
		next:   map[string]int64{"t/0": 150, "t/1": 60},
	}, {
		name: "a worker's next checkpoint follows in the same commit, whatever the order",
		waiting: []FlushedCheckpoint{
			flushed("a", "s", 2, rng("t/0", 150, 170)),
			flushed("a", "s", 1, rng("t/0", 100, 150)),
		},
		chosen: []string{"a/s/1", "a/s/2"},
		next:   map[string]int64{"t/0": 170, "t/1": 50},
	}, {
		name: "a gap waits",
		waiting: []FlushedCheckpoint{
			flushed("a", "s", 3, rng("t/0", 170, 200)),
		},
		next: map[string]int64{"t/0": 100, "t/1": 50},
	}, {
		name: "below the frontier is refused, even with another range that fits",
		waiting: []FlushedCheckpoint{
			flushed("z", "old", 9, rng("t/0", 90, 120), rng("t/1", 50, 55)),
		},
		refused: []string{"z/old/9"},
		next:    map[string]int64{"t/0": 100, "t/1": 50},
	}, {
		name: "two checkpoints from one place: the first in order wins, the other is refused",
		waiting: []FlushedCheckpoint{
			flushed("b", "s", 1, rng("t/0", 100, 130)),
			flushed("a", "s", 4, rng("t/0", 100, 120)),
		},
		chosen:  []string{"a/s/4"},
		refused: []string{"b/s/1"},
		next:    map[string]int64{"t/0": 120, "t/1": 50},
	}, {
		name: "a partition new to the frontier is taken where its source began",
		waiting: []FlushedCheckpoint{
			origin(flushed("a", "s", 1, rng("t/9", 7, 10)), "t/9"),
		},
		chosen: []string{"a/s/1"},
		next:   map[string]int64{"t/0": 100, "t/1": 50, "t/9": 10},
	}, {
		name: "a partition new to the frontier that continues uncommitted work is refused",
		waiting: []FlushedCheckpoint{
			flushed("a", "s", 2, rng("t/9", 10, 20)),
			origin(flushed("b", "s", 1, rng("t/0", 100, 110), rng("t/8", 0, 5)), "t/0"),
		},
		refused: []string{"a/s/2", "b/s/1"},
		next:    map[string]int64{"t/0": 100, "t/1": 50},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := planCommit(frontier, tc.waiting)
			var chosen, refused []string
			for _, f := range p.chosen {
				chosen = append(chosen, f.Ref.String())
			}
			for _, r := range p.refused {
				refused = append(refused, r.Ref.String())
			}
			if !slices.Equal(chosen, tc.chosen) || !slices.Equal(refused, tc.refused) || !maps.Equal(p.next, tc.next) {
				t.Fatalf("chose %v, refused %v, next %v; want %v, %v, %v", chosen, refused, p.next, tc.chosen, tc.refused, tc.next)
			}
			if frontier["t/0"] != 100 {
				t.Fatalf("planCommit changed its input frontier: %v", frontier)
			}
		})
	}
}

func TestPlanRequestMergesRanges(t *testing.T) {
	p := planCommit(map[string]int64{"t/0": 100}, []FlushedCheckpoint{
		{Ref: CheckpointRef{Worker: "a", Session: "s", Checkpoint: 1}, Ranges: []sdk.Range{rng("t/0", 100, 150)}, Results: []sdk.WriteResult{{Writer: 0, Checkpoint: 1}}},
		{Ref: CheckpointRef{Worker: "a", Session: "s", Checkpoint: 2}, Ranges: []sdk.Range{rng("t/0", 150, 170), rng("t/1", 0, 5)}, Origins: []string{"t/1"}, Results: []sdk.WriteResult{{Writer: 0, Checkpoint: 2}}},
	})
	req := p.request(12)
	want := []sdk.Range{rng("t/0", 100, 170), rng("t/1", 0, 5)}
	if req.Checkpoint != 12 || !slices.Equal(req.Ranges, want) || len(req.Results) != 2 || req.Results[1].Checkpoint != 2 {
		t.Fatalf("request %+v; want commit 12 with ranges %v and both results", req, want)
	}
}

// A worker that stops while no committer answers (it died with the
// worker's checkpoints unanswered) stops within stopAnswerWait, without
// failing: its tasks' records are read again from the frontier by
// whoever runs them next.
func TestClusterStopWithoutCommitter(t *testing.T) {
	src := &fakeSourceCfg{partitions: 2, batch: 20, readDelay: time.Millisecond}
	ce := newClusterEnv(t, src, nil)
	ctx := context.Background()
	b := ce.start(ctx, "b", []int{1}, false, nil)
	waitFor(t, "b publishing checkpoints", func() bool {
		return slices.ContainsFunc(ce.hub.messages(), func(m ControlMessage) bool { return m.Flushed != nil })
	})
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.Stop(sctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(start); took > stopAnswerWait+5*time.Second {
		t.Fatalf("stop took %s; want about stopAnswerWait (%s)", took, stopAnswerWait)
	}
	if st := b.Status(); st.State == StateFailed {
		t.Fatalf("the worker failed: %s", st.Trace)
	}
	if n := ce.committed(); n != 0 {
		t.Fatalf("%d rows committed without a committer", n)
	}
}

// A gap refusal makes the worker distrust the frontier the link
// reported (it started partitions there, and the table does not hold
// it): its next session starts from the table's, until a newer commit
// is reported.
func TestKnownFrontierDistrustedAfterAGapRefusal(t *testing.T) {
	st := newShareState(Share{Worker: "b"})
	st.answer(CommitAnswer{Committer: "a", Commit: 5, Frontier: map[string]int64{"t/0": 16251}})
	if f := st.knownFrontier(); f["t/0"] != 16251 {
		t.Fatalf("known frontier %v; want t/0 at 16251", f)
	}
	ref := CheckpointRef{Worker: "b", Session: "s", Checkpoint: 9}
	st.answer(CommitAnswer{Committer: "a", Refused: []Refusal{{Ref: ref, Reason: "gap", Gap: true}}})
	if f := st.knownFrontier(); f != nil {
		t.Fatalf("known frontier %v after a gap refusal; want none (start from the table)", f)
	}
	st.answer(CommitAnswer{Committer: "a", Commit: 5, Frontier: map[string]int64{"t/0": 16251}}) // a repeat
	if f := st.knownFrontier(); f != nil {
		t.Fatalf("known frontier %v after a repeated answer; want none", f)
	}
	st.answer(CommitAnswer{Committer: "a", Commit: 6, Frontier: map[string]int64{"t/0": 16300}})
	if f := st.knownFrontier(); f["t/0"] != 16300 {
		t.Fatalf("known frontier %v after a newer commit; want t/0 at 16300", f)
	}
	// Another worker's gap refusal is not this worker's business.
	st.answer(CommitAnswer{Committer: "a", Refused: []Refusal{{Ref: CheckpointRef{Worker: "c", Session: "s", Checkpoint: 1}, Gap: true}}})
	if f := st.knownFrontier(); f["t/0"] != 16300 {
		t.Fatalf("known frontier %v after another worker's refusal; want t/0 at 16300", f)
	}
}
