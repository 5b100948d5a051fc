package sdktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/sdk"
)

// ---------------------------------------------------------------- source

// fakeSource is a conforming source over two partitions, with switches
// that each break one rule, for the kit's own tests.
type fakeSource struct {
	gap             bool // skip ten positions between batches
	noAdmit         bool // never call AdmitSchema
	admitWrong      bool // admit a schema whose columns differ from the batches'
	ignoreStart     bool // start at 0 whatever StartPositions says
	hugeAfterPause  bool // buffer everything produced while unread into one batch
	ignoreCtx       bool // Read sleeps 4 s whatever ctx says
	intTimestamp    bool // __timestamp as int64
	ignoreRejection bool // hand on rows of a rejected schema
	badConfigError  bool // Open fails on a bad "rows" without naming the key
	openOnlyRule    bool // Open refuses rows over 1000, which the spec does not say
	checkedRule     bool // the spec's check refuses rows over 1000, as Open does
	failCommit      bool // Commit fails
	endAfter        int64
}

var fakeValueSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)

func (f *fakeSource) component() sdk.Component {
	rows := sdk.Int("rows").Default("50").Min(1).Describe("records per batch")
	if f.badConfigError {
		rows = sdk.String("rows").Default("50").Describe("records per batch")
	}
	spec := sdk.NewSpec(rows, sdk.Password("password").Describe("a secret"))
	if f.checkedRule {
		spec = spec.WithCheck(func(cfg sdk.Config) error {
			rows, err := cfg.Int("rows")
			if err != nil {
				return err
			}
			return rowsRule(rows)
		})
	}
	return sdk.Component{
		Name:    "fake",
		Version: "1.0.0",
		Spec:    spec,
		Source:  f,
	}
}

// rowsRule is a rule a spec field does not state.
func rowsRule(rows int) error {
	if rows > 1000 {
		return sdk.KeyError("rows", "at most 1000, got %d", rows)
	}
	return nil
}

func (f *fakeSource) Open(_ context.Context, req sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	rows, err := strconv.Atoi(req.Config.String("rows"))
	if err != nil {
		return nil, errors.New("bad configuration")
	}
	if f.openOnlyRule || f.checkedRule {
		if err := rowsRule(rows); err != nil {
			return nil, err
		}
	}
	return &fakeSourceTask{f: f, host: req.Host, rows: int64(rows), next: map[string]int64{}, opened: time.Now()}, nil
}

type fakeSourceTask struct {
	f        *fakeSource
	host     sdk.SourceHost
	rows     int64
	started  bool
	next     map[string]int64
	turn     int
	lastRead time.Time
	opened   time.Time
	ended    bool
}

func (t *fakeSourceTask) Read(ctx context.Context, max int) ([]sdk.Batch, error) {
	if t.f.ignoreCtx {
		time.Sleep(4 * time.Second)
	}
	if t.ended {
		return nil, sdk.ErrEndOfInput
	}
	if !t.started {
		if !t.f.noAdmit {
			s := fakeValueSchema
			if t.f.admitWrong {
				s = arrow.NewSchema([]arrow.Field{{Name: "w", Type: arrow.PrimitiveTypes.Int32}}, nil)
			}
			if err := t.host.AdmitSchema(ctx, sdk.Schema{ID: 1, Arrow: s}); err != nil {
				if !t.f.ignoreRejection {
					return nil, err
				}
			}
		}
		pos, err := t.host.StartPositions(ctx, []string{"a", "b"})
		if err != nil {
			return nil, err
		}
		if !t.f.ignoreStart {
			for p, n := range pos {
				t.next[p] = n
			}
		}
		t.started = true
	}
	rows := t.rows
	if t.f.hugeAfterPause && !t.lastRead.IsZero() && time.Since(t.lastRead) > time.Second {
		rows = 200_000
	}
	t.lastRead = time.Now()
	var out []sdk.Batch
	for range max {
		p := []string{"a", "b"}[t.turn%2]
		t.turn++
		from := t.next[p]
		n := rows
		if t.f.endAfter > 0 {
			n = min(n, t.f.endAfter-from)
		}
		if n <= 0 {
			continue
		}
		out = append(out, fakeBatch(p, from, n, t.f.intTimestamp))
		t.next[p] = from + n
		if t.f.gap {
			t.next[p] += 10
		}
	}
	if len(out) == 0 && t.f.endAfter > 0 {
		t.ended = true
		return nil, sdk.ErrEndOfInput
	}
	return out, nil
}

func fakeBatch(p string, from, n int64, intTimestamp bool) sdk.Batch {
	tsType := arrow.DataType(&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"})
	if intTimestamp {
		tsType = arrow.PrimitiveTypes.Int64
	}
	s := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.BinaryTypes.String},
		{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64},
		{Name: sdk.ColumnTimestamp, Type: tsType},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", p, from+i))
		b.Field(1).(*array.Int64Builder).Append(from + i)
		switch tb := b.Field(2).(type) {
		case *array.TimestampBuilder:
			tb.Append(arrow.Timestamp(1_700_000_000_000 + from + i))
		case *array.Int64Builder:
			tb.Append(1_700_000_000_000 + from + i)
		}
	}
	return sdk.Batch{Partition: p, From: from, Next: from + n, SchemaID: 1, Records: b.NewRecordBatch()}
}

func (t *fakeSourceTask) Commit(context.Context, map[string]int64) error {
	if t.f.failCommit {
		return errors.New("commit refused")
	}
	return nil
}
func (t *fakeSourceTask) Close(context.Context) error { return nil }

// ---------------------------------------------------------------- partitioner

// fakePartitioner hashes customer_id, with switches that break one rule.
type fakePartitioner struct {
	outOfRange bool // writer index = writers
	short      bool // one index fewer than records
	random     bool // random writer
	shared     bool // a shared counter: different answers under concurrency
	fixed      bool // assumes four writers whatever Open said
	failClose  bool // Close fails
	claimsLoad bool // declares the load capability, reports none
	// columns, when set, are the columns the task declares
	// (sdk.PartitionerWithColumns).
	columns []string
	peeks   bool // also reads __offset, which it does not declare
}

func (f *fakePartitioner) component() sdk.Component {
	c := sdk.Component{
		Name:        "fakehash",
		Version:     "1.0.0",
		Spec:        sdk.NewSpec(sdk.String("partitioner.fields").Default("customer_id").Describe("the key column")),
		Partitioner: f,
	}
	if f.claimsLoad {
		c.Capabilities = []sdk.Capability{sdk.CapabilityLoad}
	}
	return c
}

func (f *fakePartitioner) Open(_ context.Context, req sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	t := &fakePartitionerTask{f: f, writers: req.Writers, field: req.Config.String("partitioner.fields")}
	if f.columns != nil {
		return &fakeColumnsTask{t}, nil
	}
	return t, nil
}

// fakeColumnsTask is a fakePartitionerTask that declares its columns.
type fakeColumnsTask struct{ *fakePartitionerTask }

func (t *fakeColumnsTask) Columns() []string { return t.f.columns }

type fakePartitionerTask struct {
	f       *fakePartitioner
	writers int
	field   string
	mu      sync.Mutex
	counter uint32
}

func (t *fakePartitionerTask) Partition(_ context.Context, b sdk.Batch) ([]uint32, error) {
	idx := b.Records.Schema().FieldIndices(t.field)
	if len(idx) == 0 {
		return nil, fmt.Errorf("no column %q", t.field)
	}
	col := b.Records.Column(idx[0]).(*array.String)
	var offsets *array.Int64
	if t.f.peeks {
		if idx := b.Records.Schema().FieldIndices(sdk.ColumnOffset); len(idx) > 0 {
			offsets = b.Records.Column(idx[0]).(*array.Int64)
		}
	}
	out := make([]uint32, col.Len())
	for i := range out {
		h := uint32(0)
		for _, c := range []byte(col.Value(i)) {
			h = h*31 + uint32(c)
		}
		if offsets != nil {
			h += uint32(offsets.Value(i))
		}
		out[i] = h % uint32(t.writers)
		if t.f.fixed {
			out[i] = h % 4
		}
		switch {
		case t.f.outOfRange:
			out[i] = uint32(t.writers)
		case t.f.random:
			out[i] = uint32(rand.IntN(t.writers))
		case t.f.shared:
			t.mu.Lock()
			t.counter++
			out[i] = (h + t.counter/1000) % uint32(t.writers)
			t.mu.Unlock()
		}
	}
	if t.f.short {
		out = out[:len(out)-1]
	}
	return out, nil
}

func (t *fakePartitionerTask) Close(context.Context) error {
	if t.f.failClose {
		return errors.New("close failed")
	}
	return nil
}

// ---------------------------------------------------------------- sink

// fakeSink keeps committed positions in memory, shared by every task of
// the component (as a table would be), with switches that break one rule.
type fakeSink struct {
	phantomResults bool // Flush returns a result for an idle writer
	mixCheckpoints bool // Flush(N) also returns N+1's records
	wrongFrontier  bool // frontier lags the committed ranges
	failEmpty      bool // Commit of an empty checkpoint fails
	forget         bool // a reopened sink forgets its frontier
	badPrepare     bool // PrepareSchema fails the second time
	failClose      bool // Close fails
	ignoreReset    bool // Open ignores the host's offsets reset
	undeclared     bool // the component does not declare its frontier
	stuckWaits     bool // Waits names a service while everything answers
	backwardIDs    bool // Commit accepts a checkpoint id not above the newest
	openResets     bool // Open drops the unflushed writes of the table's open tasks

	mu        sync.Mutex
	positions map[string]map[string]int64 // config "table" → partition → next
	cps       map[string]uint64
	open      []*fakeSinkTask
}

func (f *fakeSink) component() sdk.Component {
	caps := []sdk.Capability{sdk.CapabilityFrontier, sdk.CapabilitySchemas, sdk.CapabilityWaits}
	if f.undeclared {
		caps = caps[1:]
	}
	return sdk.Component{
		Name:         "fakesink",
		Version:      "1.0.0",
		Spec:         sdk.NewSpec(sdk.String("table").Require().Describe("where to write")),
		Capabilities: caps,
		Sink:         f,
	}
}

// Waits waits for nothing: the fake's table is memory.
func (f *fakeSink) Waits(string) []sdk.ServiceWait {
	if f.stuckWaits {
		return []sdk.ServiceWait{{Service: "catalog at memory", Since: time.Now(), Attempts: 1, LastError: "stuck"}}
	}
	return nil
}

func (f *fakeSink) Open(_ context.Context, req sdk.SinkOpenRequest) (sdk.SinkTask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.positions == nil {
		f.positions, f.cps = map[string]map[string]int64{}, map[string]uint64{}
	}
	table := req.Config.String("table")
	if f.forget {
		delete(f.positions, table)
		delete(f.cps, table)
	}
	reset := req.OffsetsReset
	if f.ignoreReset || (reset != nil && f.cps[table] > reset.AfterCheckpoint) {
		reset = nil
	}
	if f.openResets {
		for _, o := range f.open {
			if o.table == table {
				o.mu.Lock()
				clear(o.counts)
				o.mu.Unlock()
			}
		}
	}
	t := &fakeSinkTask{f: f, table: table, reset: reset, counts: map[uint64]map[int]int64{}}
	f.open = append(f.open, t)
	return t, nil
}

type fakeSinkTask struct {
	f        *fakeSink
	table    string
	reset    *sdk.OffsetsReset // pending until the first commit
	mu       sync.Mutex
	counts   map[uint64]map[int]int64 // checkpoint → writer → records
	prepared map[int64]bool
}

func (t *fakeSinkTask) PrepareSchema(_ context.Context, s sdk.Schema) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.prepared == nil {
		t.prepared = map[int64]bool{}
	}
	if t.prepared[s.ID] {
		if t.f.badPrepare {
			return nil, fmt.Errorf("table %s exists already", t.table)
		}
		return nil, nil
	}
	t.prepared[s.ID] = true
	return []string{"created table " + t.table}, nil
}

func (t *fakeSinkTask) Write(_ context.Context, req sdk.WriteRequest) ([]sdk.Rejected, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.counts[req.Checkpoint]
	if c == nil {
		c = map[int]int64{}
		t.counts[req.Checkpoint] = c
	}
	for i := range req.Batch.Records.NumRows() {
		w := 0
		if len(req.Writers) > 0 {
			w = int(req.Writers[i])
		}
		c[w]++
	}
	return nil, nil
}

func (t *fakeSinkTask) Flush(_ context.Context, cp uint64) ([]sdk.WriteResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []sdk.WriteResult
	for w, n := range t.counts[cp] {
		if t.f.mixCheckpoints {
			n += t.counts[cp+1][w]
		}
		out = append(out, sdk.WriteResult{Writer: w, Records: n, Bytes: n * 10, Files: 1, Payload: []byte(fmt.Sprintf("%d/%d", cp, w))})
	}
	if t.f.phantomResults {
		out = append(out, sdk.WriteResult{Writer: 1, Records: 1, Files: 1})
	}
	delete(t.counts, cp)
	return out, nil
}

func (t *fakeSinkTask) Commit(_ context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	if len(req.Results) == 0 && t.f.failEmpty {
		return nil, errors.New("nothing to commit")
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	pos := t.f.positions[t.table]
	if t.reset != nil {
		pos = maps.Clone(t.reset.Positions)
	}
	if pos == nil {
		pos = map[string]int64{}
	}
	// Fencing, as a table would: the id grows, a range continues the
	// frontier.
	if newest := t.f.cps[t.table]; len(req.Results) > 0 && req.Checkpoint <= newest && !t.f.backwardIDs {
		return nil, fmt.Errorf("fenced: checkpoint %d is not above the newest, %d", req.Checkpoint, newest)
	}
	for _, r := range req.Ranges {
		if f, ok := pos[r.Partition]; ok && r.From != f && !t.f.wrongFrontier {
			return nil, fmt.Errorf("fenced: partition %s is committed up to %d, the checkpoint starts at %d", r.Partition, f, r.From)
		}
	}
	t.f.positions[t.table] = pos
	t.reset = nil
	var records int64
	for _, r := range req.Ranges {
		pos[r.Partition] = r.Next
		if t.f.wrongFrontier {
			pos[r.Partition] = r.From
		}
	}
	for _, r := range req.Results {
		records += r.Records
	}
	if len(req.Results) > 0 {
		t.f.cps[t.table] = req.Checkpoint
	}
	return []sdk.TableCommit{{Table: t.table, SnapshotID: int64(req.Checkpoint), Records: records, Files: len(req.Results), Attempts: 1}}, nil
}

func (t *fakeSinkTask) Frontier(context.Context) (sdk.Frontier, error) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	pos := map[string]int64{}
	for p, n := range t.f.positions[t.table] {
		pos[p] = n
	}
	return sdk.Frontier{Positions: pos, Checkpoint: t.f.cps[t.table]}, nil
}

func (t *fakeSinkTask) Close(context.Context) error {
	if t.f.failClose {
		return errors.New("close failed")
	}
	return nil
}

// ---------------------------------------------------------------- maintenance

// fakeMaintenance looks after one pretend table; dryRunWrites breaks the
// dry-run rule.
type fakeMaintenance struct {
	dryRunWrites bool
	sloppyRuns   bool // runs without a table name
	busyStatus   bool // Status fails while a Cycle runs
	failClose    bool
}

func (f *fakeMaintenance) component() sdk.Component {
	return sdk.Component{
		Name:        "fakemaint",
		Version:     "1.0.0",
		Spec:        sdk.NewSpec(sdk.Int("target.files").Default("1").Min(1).Describe("files after compaction")),
		Maintenance: f,
	}
}

func (f *fakeMaintenance) Open(_ context.Context, req sdk.MaintenanceOpenRequest) (sdk.MaintenanceTask, error) {
	target, err := req.Config.Int64("target.files")
	if err != nil {
		return nil, err
	}
	return &fakeMaintenanceTask{f: f, files: 10, target: target}, nil
}

type fakeMaintenanceTask struct {
	f       *fakeMaintenance
	mu      sync.Mutex
	files   int64
	target  int64
	cycling atomic.Bool
}

func (t *fakeMaintenanceTask) Cycle(_ context.Context, req sdk.CycleRequest) (sdk.CycleResult, error) {
	t.cycling.Store(true)
	defer t.cycling.Store(false)
	time.Sleep(300 * time.Millisecond) // long enough for a Status to overlap
	t.mu.Lock()
	defer t.mu.Unlock()
	run := sdk.TaskRun{Table: "db.t", Task: "rewrite-data-files", Trigger: "file-count", Started: time.Now(), FilesBefore: t.files, FilesAfter: t.target}
	if t.f.sloppyRuns {
		run.Table = ""
	}
	if !req.DryRun || t.f.dryRunWrites {
		t.files = t.target
	}
	return sdk.CycleResult{Runs: []sdk.TaskRun{run}, Next: time.Minute}, nil
}

func (t *fakeMaintenanceTask) Status(context.Context) (sdk.MaintenanceStatus, error) {
	if t.f.busyStatus && t.cycling.Load() {
		return sdk.MaintenanceStatus{}, errors.New("busy compacting")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return sdk.MaintenanceStatus{Tables: []sdk.TableHealth{{Table: "db.t", Snapshots: 3, DataFiles: t.files, DataBytes: t.files * 100, Records: 1000}}}, nil
}

func (t *fakeMaintenanceTask) Close(context.Context) error {
	if t.f.failClose {
		return errors.New("close failed")
	}
	return nil
}
