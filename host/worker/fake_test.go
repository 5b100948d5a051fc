package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// fakePlugins is an in-process stand-in for the plugin registry: a source
// "gen" emitting gen.count records per task, the partitioner "hash", a
// sink "tbl" keeping its frontier in memory, and maintenance "upkeep".
type fakePlugins struct {
	mu        sync.Mutex
	frontier  map[string]int64
	ckpt      uint64
	rows      int64
	sinkCfgs  []map[string]string
	resets    []*sdk.OffsetsReset // each sink Open's OffsetsReset
	live      atomic.Int64
	starts    atomic.Int64
	tlsStarts atomic.Int64 // starts asked for plugin.transport.tls
	hideSink  bool         // pretend the sink plugin was uninstalled
	// failTask makes the Reads of that source task fail (-1: none).
	failTask atomic.Int64
	// failPermanent marks those failures sdk.Permanent; failCommit makes
	// the sink's Commits fail.
	failPermanent, failCommit atomic.Bool
	// readDelay slows every Read down.
	readDelay time.Duration
	// badDelay slows the sink's validation of tbl.path "bad" down.
	badDelay time.Duration
	// badIn, when set, is closed when a validation of tbl.path "bad"
	// begins; badGate, when set, holds that validation until closed.
	badIn, badGate chan struct{}
	// probes counts the sink's probe runs; probeLeft is the time its
	// last one had before its ctx's deadline.
	probes    atomic.Int64
	probeLeft atomic.Int64
}

func newFakePlugins() *fakePlugins {
	f := &fakePlugins{frontier: map[string]int64{}}
	f.failTask.Store(-1)
	return f
}

func (f *fakePlugins) Components() []client.Component {
	comps := []client.Component{
		{Kind: sdk.KindSource, Name: "gen", Version: "1.0", Fields: []sdk.Field{
			*sdk.Long("gen.count").Default("0").Describe("records per task"),
			*sdk.Password("gen.token"),
		}},
		// A Kafka source: gen under another name, declaring Kafka's keys.
		{Kind: sdk.KindSource, Name: "kafka", Version: "1.0", Fields: []sdk.Field{
			*sdk.String("kafka.bootstrap.servers").Require(),
			*sdk.Prefix("kafka."),
			*sdk.List("topics"),
			*sdk.String("value.format"),
			*sdk.String("schema.registry.url"),
			*sdk.Long("gen.count").Default("0"),
		}},
		{Kind: sdk.KindPartitioner, Name: "hash", Version: "1.0"},
		{Kind: sdk.KindMaintenance, Name: "upkeep", Version: "1.0"},
	}
	f.mu.Lock()
	hide := f.hideSink
	f.mu.Unlock()
	if !hide {
		comps = append(comps, client.Component{Kind: sdk.KindSink, Name: "tbl", Aliases: []string{"com.example.TblSinkConnector"}, Version: "2.0", Fields: []sdk.Field{
			*sdk.String("tbl.path").Require().Describe("where"),
			*sdk.Password("tbl.password"),
			*sdk.Prefix("tbl.opt."),
		}})
	}
	return comps
}

func (f *fakePlugins) Start(_ context.Context, kind sdk.Kind, name string, opts client.StartOptions) (runtime.Process, error) {
	if _, ok := findComponent(f.Components(), kind, name); !ok {
		return nil, fmt.Errorf("unknown %s plugin %q", kind, name)
	}
	f.live.Add(1)
	f.starts.Add(1)
	if opts.TLS {
		f.tlsStarts.Add(1)
	}
	return &fakeProc{f: f, exited: make(chan struct{})}, nil
}

type fakeProc struct {
	f      *fakePlugins
	once   sync.Once
	exited chan struct{}
}

func (p *fakeProc) Validate(_ context.Context, kind sdk.Kind, _ string, cfg map[string]string) ([]sdk.ConfigError, error) {
	if cfg[runtime.KeyDataDir] == "" {
		return []sdk.ConfigError{{Key: runtime.KeyDataDir, Message: "missing"}}, nil
	}
	if kind == sdk.KindSink && cfg["tbl.path"] == "bad" {
		time.Sleep(p.f.badDelay)
		if p.f.badIn != nil {
			close(p.f.badIn)
		}
		if p.f.badGate != nil {
			<-p.f.badGate
		}
		return []sdk.ConfigError{{Key: "tbl.path", Message: "path \"bad\" is not writable"}}, nil
	}
	if kind == sdk.KindSink && cfg["tbl.path"] == "" {
		return []sdk.ConfigError{{Key: "tbl.path", Message: "missing required configuration \"tbl.path\" which has no default value"}}, nil
	}
	return nil, nil
}

// ValidateAndProbe runs the sink's probe after Validate: tbl.path
// "unreachable" is a store it cannot reach.
func (p *fakeProc) ValidateAndProbe(ctx context.Context, kind sdk.Kind, comp string, cfg map[string]string) ([]sdk.ConfigError, error) {
	errs, err := p.Validate(ctx, kind, comp, cfg)
	if err != nil || len(errs) > 0 || kind != sdk.KindSink {
		return errs, err
	}
	p.f.probes.Add(1)
	if dl, ok := ctx.Deadline(); ok {
		p.f.probeLeft.Store(int64(time.Until(dl)))
	}
	if cfg["tbl.path"] == "unreachable" {
		return []sdk.ConfigError{{Key: "tbl.path", Message: "store unreachable: timeout after 10s"}}, nil
	}
	return nil, nil
}

func (p *fakeProc) Exited() <-chan struct{} { return p.exited }
func (p *fakeProc) ExitReason() string      { return "killed" }
func (p *fakeProc) Kill() {
	p.once.Do(func() { close(p.exited); p.f.live.Add(-1) })
}

func (p *fakeProc) OpenSource(ctx context.Context, req client.SourceOpen) (runtime.SourceTask, error) {
	part := fmt.Sprintf("t/%d", req.Task)
	start, err := req.Host.StartPositions(ctx, []string{part})
	if err != nil {
		return nil, err
	}
	var count int64
	if v := req.Config["gen.count"]; v != "" {
		if _, err := fmt.Sscan(v, &count); err != nil {
			return nil, fmt.Errorf("fake source: gen.count %q: %w", v, err)
		}
	}
	return &fakeSrc{f: p.f, task: req.Task, part: part, pos: start[part], count: count}, nil
}

func (p *fakeProc) OpenPartitioner(context.Context, client.PartitionerOpen) (runtime.PartitionerTask, error) {
	return fakePart{}, nil
}

func (p *fakeProc) OpenSink(_ context.Context, req client.SinkOpen) (runtime.SinkTask, error) {
	p.f.mu.Lock()
	p.f.sinkCfgs = append(p.f.sinkCfgs, maps.Clone(req.Config))
	p.f.resets = append(p.f.resets, req.OffsetsReset)
	p.f.mu.Unlock()
	return &fakeSink{f: p.f, pending: map[uint64]map[string]int64{}}, nil
}

func (p *fakeProc) OpenMaintenance(context.Context, client.MaintenanceOpen) (runtime.MaintenanceTask, error) {
	return fakeMaint{}, nil
}

type fakeSrc struct {
	f     *fakePlugins
	task  int
	part  string
	pos   int64
	count int64
}

var schema = arrow.NewSchema([]arrow.Field{{Name: sdk.ColumnOffset, Type: arrow.PrimitiveTypes.Int64}}, nil)

func (s *fakeSrc) Read(ctx context.Context, max int) (client.ReadResult, error) {
	if s.f.failTask.Load() == int64(s.task) {
		err := fmt.Errorf("task %d: the source broke", s.task)
		if s.f.failPermanent.Load() {
			err = sdk.Permanent(err)
		}
		return client.ReadResult{}, err
	}
	if d := s.f.readDelay; d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return client.ReadResult{}, nil
		}
	}
	if s.count > 0 && s.pos >= s.count {
		return client.ReadResult{EndOfInput: true}, nil
	}
	next := s.pos + 10
	if s.count > 0 {
		next = min(next, s.count)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	for o := s.pos; o < next; o++ {
		bld.Field(0).(*array.Int64Builder).Append(o)
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	b, err := client.EncodeBatch(s.part, s.pos, next, 1, rec)
	if err != nil {
		return client.ReadResult{}, err
	}
	s.pos = next
	return client.ReadResult{Batches: []client.Batch{b}}, nil
}

func (s *fakeSrc) Commit(context.Context, map[string]int64) error { return nil }
func (s *fakeSrc) Close(context.Context) error                    { return nil }

type fakePart struct{}

func (fakePart) Partition(_ context.Context, b client.Batch) ([]uint32, []float64, error) {
	return make([]uint32, b.NumRecords), nil, nil
}
func (fakePart) Close(context.Context) error { return nil }

type fakeSink struct {
	f       *fakePlugins
	mu      sync.Mutex
	pending map[uint64]map[string]int64
	rows    map[uint64]int64
}

func (s *fakeSink) Frontier(context.Context) (sdk.Frontier, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return sdk.Frontier{Positions: maps.Clone(s.f.frontier), Checkpoint: s.f.ckpt}, nil
}

func (s *fakeSink) PrepareSchema(context.Context, client.Schema) ([]string, error) { return nil, nil }

func (s *fakeSink) Write(_ context.Context, n uint64, b client.Batch, _ []uint32) ([]sdk.Rejected, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[uint64]int64{}
	}
	s.rows[n] += b.NumRecords
	return nil, nil
}

func (s *fakeSink) Flush(_ context.Context, n uint64) (client.Flushed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return client.Flushed{Results: []sdk.WriteResult{{Records: s.rows[n], Files: 1}}}, nil
}

func (s *fakeSink) Commit(_ context.Context, req sdk.CommitRequest) ([]sdk.TableCommit, error) {
	if s.f.failCommit.Load() {
		return nil, errors.New("the table store is down")
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	for _, r := range req.Ranges {
		s.f.frontier[r.Partition] = r.Next
		s.f.rows += r.Next - r.From
	}
	s.f.ckpt = req.Checkpoint
	return []sdk.TableCommit{{Table: "db.t", Records: req.Results[0].Records, Files: 1}}, nil
}

func (s *fakeSink) Close(context.Context) error { return nil }

type fakeMaint struct{}

func (fakeMaint) Cycle(context.Context, sdk.CycleRequest) (sdk.CycleResult, error) {
	return sdk.CycleResult{}, nil
}
func (fakeMaint) Status(context.Context) (sdk.MaintenanceStatus, error) {
	return sdk.MaintenanceStatus{Tables: []sdk.TableHealth{{Table: "db.t", DataFiles: 7}},
		Runs: []sdk.TaskRun{{Table: "db.t", Task: "rewrite-data-files"}}}, nil
}
func (fakeMaint) Close(context.Context) error { return nil }
