package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// The fakes stand in for plugin processes in one test process. A fake
// process "crashes" by closing its Exited channel; calls on its tasks fail
// from then on, as calls to a dead plugin do.

var errConnLost = errors.New("rpc error: code = Unavailable desc = connection lost")

// fakePlugins starts fake processes.
type fakePlugins struct {
	t      *testing.T
	source *fakeSourceCfg
	sink   *fakeTable // the durable side of the sink: survives crashes
	part   *fakePartCfg
	maint  *fakeMaintCfg

	mu       sync.Mutex
	procs    map[sdk.Kind][]*fakeProcess
	startErr map[sdk.Kind]error // fail every start of a kind
	opts     map[sdk.Kind]client.StartOptions
	// waits is what the sink says it waits for; waitsAsked counts the
	// questions.
	waits      []sdk.ServiceWait
	waitsAsked int
}

func newFakePlugins(t *testing.T, src *fakeSourceCfg) *fakePlugins {
	return &fakePlugins{
		t: t, source: src, sink: newFakeTable(), part: &fakePartCfg{}, maint: &fakeMaintCfg{},
		procs: map[sdk.Kind][]*fakeProcess{}, startErr: map[sdk.Kind]error{},
		opts: map[sdk.Kind]client.StartOptions{},
	}
}

func (f *fakePlugins) Start(_ context.Context, kind sdk.Kind, name string, opts client.StartOptions) (Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.startErr[kind]; err != nil {
		return nil, err
	}
	p := &fakeProcess{f: f, kind: kind, exited: make(chan struct{})}
	f.procs[kind] = append(f.procs[kind], p)
	f.opts[kind] = opts
	return p, nil
}

// latest returns the newest process of a kind.
func (f *fakePlugins) latest(kind sdk.Kind) *fakeProcess {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := f.procs[kind]
	if len(ps) == 0 {
		return nil
	}
	return ps[len(ps)-1]
}

func (f *fakePlugins) starts(kind sdk.Kind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.procs[kind])
}

// live reports processes not killed or crashed.
func (f *fakePlugins) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, ps := range f.procs {
		for _, p := range ps {
			if !p.dead() {
				n++
			}
		}
	}
	return n
}

type fakeProcess struct {
	f      *fakePlugins
	kind   sdk.Kind
	once   sync.Once
	exited chan struct{}
	reason atomic.Value
}

func (p *fakeProcess) crash(reason string) {
	p.reason.Store(reason)
	p.once.Do(func() { close(p.exited) })
}

func (p *fakeProcess) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *fakeProcess) check() error {
	if p.dead() {
		return errConnLost
	}
	return nil
}

func (p *fakeProcess) Validate(context.Context, sdk.Kind, string, map[string]string) ([]sdk.ConfigError, error) {
	return nil, p.check()
}

func (p *fakeProcess) Exited() <-chan struct{} { return p.exited }
func (p *fakeProcess) ExitReason() string {
	if r, ok := p.reason.Load().(string); ok {
		return r
	}
	return ""
}
func (p *fakeProcess) Kill() { p.crash("killed by floe") }

func (p *fakeProcess) OpenSource(ctx context.Context, req client.SourceOpen) (SourceTask, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.f.source.open(ctx, p, req)
}

func (p *fakeProcess) OpenPartitioner(_ context.Context, req client.PartitionerOpen) (PartitionerTask, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return &fakePartitioner{p: p, cfg: p.f.part, writers: req.Writers}, nil
}

func (p *fakeProcess) OpenSink(_ context.Context, req client.SinkOpen) (SinkTask, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.f.sink.open(p, req), nil
}

func (p *fakeProcess) SinkWaits(_ context.Context, component, connector string) ([]sdk.ServiceWait, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if p.kind != sdk.KindSink || component != "fake-sink" || connector != "c" {
		return nil, fmt.Errorf("waits of %s %q of connector %q asked of a %s process", sdk.KindSink, component, connector, p.kind)
	}
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	p.f.waitsAsked++
	return slices.Clone(p.f.waits), nil
}

func (p *fakeProcess) OpenMaintenance(_ context.Context, req client.MaintenanceOpen) (MaintenanceTask, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return &fakeMaint{p: p, cfg: p.f.maint}, nil
}

// ---------------------------------------------------------------- source

// fakeSourceCfg drives the fake source. Partitions are "topic/<n>"; task i
// of n owns the partitions whose number is i modulo n.
type fakeSourceCfg struct {
	partitions int
	count      int64 // records per partition; 0 = endless
	batch      int64
	readDelay  time.Duration
	// gapAt makes the first batch reaching this offset of partition 0
	// skip 5 positions (a source bug the host must catch).
	gapAt int64
	// replayEvery makes every nth batch start 2 records early (overlap).
	replayEvery int

	reads   atomic.Int64
	opens   atomic.Int64
	mu      sync.Mutex
	commits map[string]int64 // source.Commit positions seen
	acks    atomic.Int64     // source.Commit calls that got through
	hosts   []client.SourceHost
	revoke  func(client.SourceHost) // called once from a Read, if set
	// hold, when set, keeps every Read waiting until it is closed (or the
	// Read's ctx ends).
	hold chan struct{}
	// inRead counts Reads under way.
	inRead atomic.Int64
	// letters, when set, are dead-lettered from the first Reads, as the
	// kafka source does: when DeadLetter fails and the Read's ctx ended,
	// the next Read tries again; otherwise the Read fails with the error.
	letters       []sdk.DeadLetter
	lettersStored atomic.Bool
	letterTries   atomic.Int64
	// commitHangs, when set, makes every source Commit wait until its ctx
	// ends, as librdkafka's does during a rebalance.
	commitHangs bool
}

type fakeSource struct {
	cfg   *fakeSourceCfg
	p     *fakeProcess
	host  client.SourceHost
	pos   map[string]int64
	names []string
	next  int
	n     int64
}

func (c *fakeSourceCfg) open(ctx context.Context, p *fakeProcess, req client.SourceOpen) (*fakeSource, error) {
	c.opens.Add(1)
	var names []string
	for i := 0; i < c.partitions; i++ {
		if i%req.Tasks == req.Task {
			names = append(names, fmt.Sprintf("topic/%d", i))
		}
	}
	start, err := req.Host.StartPositions(ctx, names)
	if err != nil {
		return nil, err
	}
	pos := map[string]int64{}
	for _, n := range names {
		pos[n] = start[n]
	}
	c.mu.Lock()
	c.hosts = append(c.hosts, req.Host)
	c.mu.Unlock()
	return &fakeSource{cfg: c, p: p, host: req.Host, pos: pos, names: names}, nil
}

func (s *fakeSource) Read(ctx context.Context, max int) (client.ReadResult, error) {
	if err := s.p.check(); err != nil {
		return client.ReadResult{}, err
	}
	s.cfg.reads.Add(1)
	s.cfg.inRead.Add(1)
	defer s.cfg.inRead.Add(-1)
	if h := s.cfg.hold; h != nil {
		select {
		case <-h:
		case <-ctx.Done():
			return client.ReadResult{}, nil
		}
	}
	if len(s.cfg.letters) > 0 && !s.cfg.lettersStored.Load() {
		s.cfg.letterTries.Add(1)
		if err := s.host.DeadLetter(ctx, s.cfg.letters); err != nil {
			if ctx.Err() != nil {
				return client.ReadResult{}, nil
			}
			return client.ReadResult{}, fmt.Errorf("dead letters: %w", err)
		}
		s.cfg.lettersStored.Store(true)
	}
	if s.cfg.revoke != nil {
		s.cfg.mu.Lock()
		f := s.cfg.revoke
		s.cfg.revoke = nil
		s.cfg.mu.Unlock()
		if f != nil {
			f(s.host)
		}
	}
	if s.cfg.readDelay > 0 {
		select {
		case <-time.After(s.cfg.readDelay):
		case <-ctx.Done():
			return client.ReadResult{}, nil
		}
	}
	var out client.ReadResult
	for len(out.Batches) < max {
		name, ok := s.pick()
		if !ok {
			break
		}
		from := s.pos[name]
		next := from + s.cfg.batch
		if s.cfg.count > 0 {
			next = min(next, s.cfg.count)
		}
		s.n++
		emitFrom := from
		if name == "topic/0" && s.cfg.gapAt > 0 && from <= s.cfg.gapAt && s.cfg.gapAt < next {
			emitFrom = from + 5
			next += 5
		}
		if s.cfg.replayEvery > 0 && s.n%int64(s.cfg.replayEvery) == 0 && from >= 2 {
			emitFrom = from - 2
		}
		b, err := makeBatch(name, emitFrom, next)
		if err != nil {
			return out, err
		}
		out.Batches = append(out.Batches, b)
		s.pos[name] = next
	}
	if len(out.Batches) == 0 {
		if s.cfg.count > 0 {
			return client.ReadResult{EndOfInput: true}, nil
		}
	}
	return out, s.p.check()
}

// pick returns the next partition with data, round robin.
func (s *fakeSource) pick() (string, bool) {
	for range s.names {
		name := s.names[s.next%len(s.names)]
		s.next++
		if s.cfg.count == 0 || s.pos[name] < s.cfg.count {
			return name, true
		}
	}
	return "", false
}

func (s *fakeSource) Commit(ctx context.Context, positions map[string]int64) error {
	if err := s.p.check(); err != nil {
		return err
	}
	if s.cfg.commitHangs {
		<-ctx.Done()
		return ctx.Err()
	}
	s.cfg.mu.Lock()
	defer s.cfg.mu.Unlock()
	if s.cfg.commits == nil {
		s.cfg.commits = map[string]int64{}
	}
	maps.Copy(s.cfg.commits, positions)
	s.cfg.acks.Add(1)
	return nil
}

func (s *fakeSource) Close(context.Context) error { return s.p.check() }

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
	{Name: sdk.ColumnTimestamp, Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// makeBatch builds a batch of records [from, next) of one partition.
func makeBatch(partition string, from, next int64) (client.Batch, error) {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer bld.Release()
	for o := from; o < next; o++ {
		bld.Field(0).(*array.Int64Builder).Append(o * 10)
		bld.Field(1).(*array.Int64Builder).Append(o)
		bld.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + o))
		bld.Field(3).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("k%d", o)))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	return client.EncodeBatch(partition, from, next, 1, rec)
}

// ---------------------------------------------------------------- partitioner

type fakePartCfg struct {
	calls      atomic.Int64
	crashAt    int64 // crash the process on this call number (once)
	crashed    atomic.Bool
	failAlways bool
}

type fakePartitioner struct {
	p       *fakeProcess
	cfg     *fakePartCfg
	writers int
}

func (f *fakePartitioner) Partition(_ context.Context, b client.Batch) ([]uint32, []float64, error) {
	if err := f.p.check(); err != nil {
		return nil, nil, err
	}
	n := f.cfg.calls.Add(1)
	if f.cfg.crashAt > 0 && n == f.cfg.crashAt && f.cfg.crashed.CompareAndSwap(false, true) {
		f.p.crash("partitioner crashed on purpose")
		return nil, nil, errConnLost
	}
	if f.cfg.failAlways {
		return nil, nil, errors.New("partitioner refuses")
	}
	w := make([]uint32, b.NumRecords)
	for i := range w {
		w[i] = uint32((b.From + int64(i)) % int64(f.writers))
	}
	load := make([]float64, f.writers)
	for i := range load {
		load[i] = 1
	}
	return w, load, nil
}

func (f *fakePartitioner) Close(context.Context) error { return nil }

// ---------------------------------------------------------------- sink

// fakeTable is the durable side of the fake sink (a table): committed
// rows and the frontier. It checks the host's side of the sink contract
// and records every violation.
type fakeTable struct {
	mu                 sync.Mutex
	frontier           map[string]int64
	checkpoint         uint64
	rows               map[string]map[int64]int // committed offsets -> times committed
	commits            []sdk.CommitRequest
	violations         []string
	configs            []map[string]string
	resets             []*sdk.OffsetsReset // each Open's OffsetsReset
	maxPending         int
	commitDelay        time.Duration
	commitFails        int   // fail this many commits, then succeed
	commitErr          error // fail every commit with it when set
	failWrite          error
	rejectOff          map[int64]bool // offsets the sink rejects
	skipOff            map[int64]bool // offsets the sink drops on purpose
	writesDuringCommit atomic.Int64
	committing         atomic.Bool
	opens              int
	tasks              []*fakeSink
	// crossProcess makes Flush describe the rows in its results and
	// Commit take the rows from the results it is given, which may come
	// from other processes (a cluster's workers), instead of from its own
	// process's flushed checkpoint.
	crossProcess bool
}

// fakePayload is a flushed checkpoint's rows, in crossProcess mode.
type fakePayload struct {
	Checkpoint uint64             `json:"checkpoint"`
	Rows       map[string][]int64 `json:"rows"`
}

func newFakeTable() *fakeTable {
	return &fakeTable{frontier: map[string]int64{}, rows: map[string]map[int64]int{}}
}

func (t *fakeTable) violate(format string, args ...any) {
	t.violations = append(t.violations, fmt.Sprintf(format, args...))
}

func (t *fakeTable) open(p *fakeProcess, req client.SinkOpen) *fakeSink {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.opens++
	t.configs = append(t.configs, maps.Clone(req.Config))
	t.resets = append(t.resets, req.OffsetsReset)
	s := &fakeSink{t: t, p: p, ckpts: map[uint64]*fakeCkpt{}}
	t.tasks = append(t.tasks, s)
	return s
}

// commitUnheard commits the next n rows of partition as a committer
// would that stopped before it answered: the workers never hear of it.
// It returns the range committed.
func (t *fakeTable) commitUnheard(partition string, n int64) (from, next int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	from, next = t.frontier[partition], t.frontier[partition]+n
	if t.rows[partition] == nil {
		t.rows[partition] = map[int64]int{}
	}
	for o := from; o < next; o++ {
		t.rows[partition][o]++
	}
	t.frontier[partition] = next
	t.checkpoint++
	t.commits = append(t.commits, sdk.CommitRequest{Checkpoint: t.checkpoint, Ranges: []sdk.Range{{Partition: partition, From: from, Next: next}}})
	return from, next
}

func (t *fakeTable) committedRows() (total int, dups int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.rows {
		for _, n := range m {
			total++
			if n > 1 {
				dups++
			}
		}
	}
	return
}

func (t *fakeTable) frontierCopy() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.frontier)
}

func (t *fakeTable) violationsCopy() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.violations)
}

// fakeSink is one open sink in one process: the uncommitted side.
type fakeSink struct {
	t             *fakeTable
	p             *fakeProcess
	mu            sync.Mutex
	ckpts         map[uint64]*fakeCkpt
	lastFlushed   uint64
	lastCommitted uint64
}

type fakeCkpt struct {
	inflight int
	flushed  bool
	rows     map[string][]int64
	records  int64
	skipped  int64
}

func (s *fakeSink) ckpt(n uint64) *fakeCkpt {
	c := s.ckpts[n]
	if c == nil {
		c = &fakeCkpt{rows: map[string][]int64{}}
		s.ckpts[n] = c
	}
	return c
}

func (s *fakeSink) Frontier(context.Context) (sdk.Frontier, error) {
	if err := s.p.check(); err != nil {
		return sdk.Frontier{}, err
	}
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return sdk.Frontier{Positions: maps.Clone(s.t.frontier), Checkpoint: s.t.checkpoint}, nil
}

func (s *fakeSink) PrepareSchema(_ context.Context, sc client.Schema) ([]string, error) {
	if err := s.p.check(); err != nil {
		return nil, err
	}
	if sc.ID == 666 {
		return nil, sdk.RejectSchema("field x: int to string")
	}
	return []string{"added column v"}, nil
}

func (s *fakeSink) Write(_ context.Context, n uint64, b client.Batch, writers []uint32) ([]sdk.Rejected, error) {
	if err := s.p.check(); err != nil {
		return nil, err
	}
	s.t.mu.Lock()
	failWrite := s.t.failWrite
	reject, skip := s.t.rejectOff, s.t.skipOff
	s.t.mu.Unlock()
	if failWrite != nil {
		return nil, failWrite
	}
	if s.t.committing.Load() {
		s.t.writesDuringCommit.Add(1)
	}
	rec, err := b.Decode(memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	offs := rec.Column(1).(*array.Int64)
	s.mu.Lock()
	c := s.ckpt(n)
	if c.flushed {
		s.t.mu.Lock()
		s.t.violate("write of checkpoint %d after its flush", n)
		s.t.mu.Unlock()
	}
	c.inflight++
	s.mu.Unlock()
	if int64(len(writers)) != b.NumRecords {
		s.t.mu.Lock()
		s.t.violate("write of %d records with %d writer indexes", b.NumRecords, len(writers))
		s.t.mu.Unlock()
	}
	var rejected []sdk.Rejected
	time.Sleep(time.Millisecond) // let barriers race writes
	s.mu.Lock()
	for i := 0; i < offs.Len(); i++ {
		o := offs.Value(i)
		if o < b.From || o >= b.Next {
			s.t.mu.Lock()
			s.t.violate("row %d of %s outside its batch [%d, %d)", o, b.Partition, b.From, b.Next)
			s.t.mu.Unlock()
		}
		if reject[o] {
			rejected = append(rejected, sdk.Rejected{Offset: o, Reason: "value too large"})
			continue
		}
		if skip[o] {
			c.skipped++
			continue
		}
		c.rows[b.Partition] = append(c.rows[b.Partition], o)
		c.records++
	}
	c.inflight--
	s.mu.Unlock()
	return rejected, nil
}

func (s *fakeSink) Flush(_ context.Context, n uint64) (client.Flushed, error) {
	if err := s.p.check(); err != nil {
		return client.Flushed{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.ckpt(n)
	s.t.mu.Lock()
	if c.inflight > 0 {
		s.t.violate("flush of checkpoint %d with %d writes in flight", n, c.inflight)
	}
	if n <= s.lastFlushed {
		s.t.violate("flush of checkpoint %d after %d", n, s.lastFlushed)
	}
	pending := 0
	for _, o := range s.ckpts {
		if o.flushed {
			pending++
		}
	}
	if pending+1 > s.t.maxPending && s.t.maxPending > 0 {
		s.t.violate("checkpoint %d flushed with %d checkpoints awaiting commit (max %d)", n, pending, s.t.maxPending)
	}
	s.t.mu.Unlock()
	c.flushed = true
	s.lastFlushed = n
	payload := []byte(fmt.Sprint(n))
	if s.t.crossProcess {
		payload, _ = json.Marshal(fakePayload{Checkpoint: n, Rows: c.rows})
	}
	return client.Flushed{
		Results: []sdk.WriteResult{{Payload: payload, Writer: 0, Records: c.records, Files: 1}},
		Skipped: c.skipped,
	}, nil
}

func (s *fakeSink) Commit(ctx context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	if err := s.p.check(); err != nil {
		return nil, err
	}
	s.t.committing.Store(true)
	defer s.t.committing.Store(false)
	s.t.mu.Lock()
	delay, fails, cerr := s.t.commitDelay, s.t.commitFails, s.t.commitErr
	if fails > 0 {
		s.t.commitFails--
	}
	s.t.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if cerr != nil {
		return nil, cerr
	}
	if fails > 0 {
		return nil, errors.New("requirement failed: branch main has changed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.ckpts[req.Checkpoint]
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if s.t.crossProcess {
		c = &fakeCkpt{rows: map[string][]int64{}, flushed: true}
		for _, r := range req.Results {
			var p fakePayload
			if err := json.Unmarshal(r.Payload, &p); err != nil {
				s.t.violate("commit %d: a result's payload does not decode: %v", req.Checkpoint, err)
				return nil, err
			}
			if want := cmp.Or(r.Checkpoint, req.Checkpoint); p.Checkpoint != want {
				s.t.violate("commit %d: a result of checkpoint %d says it is of %d", req.Checkpoint, p.Checkpoint, want)
			}
			for part, offs := range p.Rows {
				c.rows[part] = append(c.rows[part], offs...)
				c.records += int64(len(offs))
			}
		}
	}
	if c == nil || !c.flushed {
		s.t.violate("commit of checkpoint %d that was not flushed", req.Checkpoint)
		return nil, errors.New("not flushed")
	}
	if req.Checkpoint <= s.lastCommitted {
		s.t.violate("commit of checkpoint %d after %d", req.Checkpoint, s.lastCommitted)
	}
	reset := s.t.resets[len(s.t.resets)-1] != nil
	// Fencing: every range starts at the table's frontier.
	for _, r := range req.Ranges {
		if f, ok := s.t.frontier[r.Partition]; ok && f != r.From && !reset {
			return nil, fmt.Errorf("fenced: range %s [%d, %d) does not start at the frontier %d", r.Partition, r.From, r.Next, f)
		}
	}
	covered := map[string]sdk.Range{}
	for _, r := range req.Ranges {
		covered[r.Partition] = r
	}
	for p, offs := range c.rows {
		r, ok := covered[p]
		for _, o := range offs {
			if !ok || o < r.From || o >= r.Next {
				s.t.violate("checkpoint %d holds row %s@%d outside its ranges", req.Checkpoint, p, o)
			}
		}
	}
	for p, offs := range c.rows {
		if s.t.rows[p] == nil {
			s.t.rows[p] = map[int64]int{}
		}
		for _, o := range offs {
			s.t.rows[p][o]++
		}
	}
	for _, r := range req.Ranges {
		s.t.frontier[r.Partition] = r.Next
	}
	s.t.checkpoint = req.Checkpoint
	s.t.commits = append(s.t.commits, req)
	s.lastCommitted = req.Checkpoint
	if !s.t.crossProcess { // a cluster commit's id names no local checkpoint
		delete(s.ckpts, req.Checkpoint)
	}
	return []sdk.TableCommit{{Table: "db.t", SnapshotID: int64(req.Checkpoint), Records: c.records, Files: 1, Attempts: 1}}, nil
}

func (s *fakeSink) Close(context.Context) error { return nil }

// ---------------------------------------------------------------- maintenance

type fakeMaintCfg struct {
	cycles atomic.Int64
}

type fakeMaint struct {
	p   *fakeProcess
	cfg *fakeMaintCfg
}

func (m *fakeMaint) Cycle(context.Context, sdk.CycleRequest) (sdk.CycleResult, error) {
	if err := m.p.check(); err != nil {
		return sdk.CycleResult{}, err
	}
	n := m.cfg.cycles.Add(1)
	// Every cycle compacts; every third also expires, and fails.
	runs := []sdk.TaskRun{{Table: "db.t", Task: "rewrite-data-files", Started: time.Now(), FilesBefore: 10 + n, FilesAfter: 2}}
	if n%3 == 0 {
		runs = append(runs, sdk.TaskRun{Table: "db.t", Task: "expire-snapshots", Started: time.Now(), Error: "commit: conflict"})
	}
	return sdk.CycleResult{Runs: runs, Next: 10 * time.Millisecond, Tables: []sdk.TableHealth{{Table: "db.t", DataFiles: 3}}}, nil
}

func (m *fakeMaint) Status(context.Context) (sdk.MaintenanceStatus, error) {
	if err := m.p.check(); err != nil {
		return sdk.MaintenanceStatus{}, err
	}
	return sdk.MaintenanceStatus{Tables: []sdk.TableHealth{{Table: "db.t", DataFiles: 3}}}, nil
}

func (m *fakeMaint) Close(context.Context) error { return nil }
