package sdk_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
	"github.com/floehq/floe/sdk/sdktest"
)

// linger is how long the probe tasks keep working after their ctx ended,
// as a task finishing an append does; a Close in that window overlaps.
const linger = 300 * time.Millisecond

// probe records the calls on one task that overlap: any two for a source
// (whose calls never overlap), Close and any other for the other kinds,
// and any call after Close.
type probe struct {
	serial bool

	mu       sync.Mutex
	running  map[string]int
	closed   int
	overlaps []string
	started  chan string
}

func newProbe(serial bool) *probe {
	return &probe{serial: serial, running: map[string]int{}, started: make(chan string, 16)}
}

func (p *probe) call(name string) (done func()) {
	p.mu.Lock()
	for other, n := range p.running {
		if n > 0 && (p.serial || name == "Close" || other == "Close") {
			p.overlaps = append(p.overlaps, fmt.Sprintf("%s began while %s ran", name, other))
		}
	}
	if p.closed > 0 {
		p.overlaps = append(p.overlaps, name+" began after Close")
	}
	if name == "Close" {
		p.closed++
	}
	p.running[name]++
	p.mu.Unlock()
	select {
	case p.started <- name:
	default:
	}
	return func() {
		p.mu.Lock()
		p.running[name]--
		p.mu.Unlock()
	}
}

// block is a task method that waits for its ctx to end and then lingers.
func (p *probe) block(ctx context.Context, name string) error {
	defer p.call(name)()
	<-ctx.Done()
	time.Sleep(linger)
	return nil
}

func (p *probe) close(context.Context) error {
	p.call("Close")()
	return nil
}

// check fails the test on overlaps and when Close did not run once.
func (p *probe) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.overlaps {
		t.Errorf("overlapping calls: %s", o)
	}
	if p.closed != 1 {
		t.Errorf("the task's Close ran %d times, want once", p.closed)
	}
}

// waitStarted waits until the task runs a call named name.
func (p *probe) waitStarted(t *testing.T, name string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case got := <-p.started:
			if got == name {
				return
			}
		case <-timeout:
			t.Fatalf("the task's %s never started", name)
		}
	}
}

type probeSource struct{ p *probe }

func (s probeSource) Open(context.Context, sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return probeSourceTask(s), nil
}

type probeSourceTask struct{ p *probe }

func (t probeSourceTask) Read(ctx context.Context, _ int) ([]sdk.Batch, error) {
	return nil, t.p.block(ctx, "Read")
}
func (t probeSourceTask) Commit(ctx context.Context, _ map[string]int64) error {
	return t.p.block(ctx, "Commit")
}
func (t probeSourceTask) Close(ctx context.Context) error { return t.p.close(ctx) }

type probeSink struct{ p *probe }

func (s probeSink) Open(context.Context, sdk.SinkOpenRequest) (sdk.SinkTask, error) {
	return probeSinkTask(s), nil
}

type probeSinkTask struct{ p *probe }

func (t probeSinkTask) Write(ctx context.Context, _ sdk.WriteRequest) ([]sdk.Rejected, error) {
	return nil, t.p.block(ctx, "Write")
}
func (t probeSinkTask) Flush(ctx context.Context, _ uint64) ([]sdk.WriteResult, error) {
	return nil, t.p.block(ctx, "Flush")
}
func (t probeSinkTask) Commit(ctx context.Context, _ sdk.CommitRequest) ([]sdk.TableCommit, error) {
	return nil, t.p.block(ctx, "Commit")
}
func (t probeSinkTask) Close(ctx context.Context) error { return t.p.close(ctx) }

type probePartitioner struct{ p *probe }

func (s probePartitioner) Open(context.Context, sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	return probePartitionerTask(s), nil
}

type probePartitionerTask struct{ p *probe }

func (t probePartitionerTask) Partition(ctx context.Context, _ sdk.Batch) ([]uint32, error) {
	return nil, t.p.block(ctx, "Partition")
}
func (t probePartitionerTask) Close(ctx context.Context) error { return t.p.close(ctx) }

type probeMaintenance struct{ p *probe }

func (s probeMaintenance) Open(context.Context, sdk.MaintenanceOpenRequest) (sdk.MaintenanceTask, error) {
	return probeMaintenanceTask(s), nil
}

type probeMaintenanceTask struct{ p *probe }

func (t probeMaintenanceTask) Cycle(ctx context.Context, _ sdk.CycleRequest) (sdk.CycleResult, error) {
	return sdk.CycleResult{}, t.p.block(ctx, "Cycle")
}
func (t probeMaintenanceTask) Status(ctx context.Context) (sdk.MaintenanceStatus, error) {
	return sdk.MaintenanceStatus{}, t.p.block(ctx, "Status")
}
func (t probeMaintenanceTask) Close(ctx context.Context) error { return t.p.close(ctx) }

type nopHost struct{}

func (nopHost) StartPositions(context.Context, []string) (map[string]int64, error) { return nil, nil }
func (nopHost) PartitionsRevoked(context.Context, map[string]int64) error          { return nil }
func (nopHost) AdmitSchema(context.Context, client.Schema) error                   { return nil }
func (nopHost) DeadLetter(context.Context, []sdk.DeadLetter) error                 { return nil }

// serveProbe serves c in-process and attaches a client to it.
func serveProbe(t *testing.T, c sdk.Component) *client.Process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := sdk.ServeInProcess(ctx, sdk.InProcessOptions{}, c)
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.Attach(ctx, client.AttachOptions{Addr: srv.Addr, Done: srv.Done})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(); cancel(); <-srv.Done })
	return p
}

// probeCalls names the calls of each kind's probe task.
var probeCalls = map[sdk.Kind][]string{
	sdk.KindSource:      {"Read", "Commit"},
	sdk.KindPartitioner: {"Partition"},
	sdk.KindSink:        {"Write", "Flush", "Commit"},
	sdk.KindMaintenance: {"Cycle", "Status"},
}

// probeTask is one open task of a probe component: calls names the calls
// that block, and close closes the task.
type probeTask struct {
	calls map[string]func(context.Context) error
	close func(context.Context) error
}

func openProbe(t *testing.T, kind sdk.Kind, p *probe) probeTask {
	t.Helper()
	ctx := context.Background()
	c := sdk.Component{Name: "probe"}
	switch kind {
	case sdk.KindSource:
		c.Source = probeSource{p}
	case sdk.KindSink:
		c.Sink = probeSink{p}
	case sdk.KindPartitioner:
		c.Partitioner = probePartitioner{p}
	case sdk.KindMaintenance:
		c.Maintenance = probeMaintenance{p}
	}
	proc := serveProbe(t, c)
	batch := func() client.Batch {
		b := sdktest.SampleBatches(1, 1, 3)[0]
		defer b.Records.Release()
		w, err := client.EncodeBatch(b.Partition, b.From, b.Next, b.SchemaID, b.Records)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	switch kind {
	case sdk.KindSource:
		task, err := proc.OpenSource(ctx, client.SourceOpen{Component: "probe", Connector: "c", Tasks: 1, Host: nopHost{}})
		if err != nil {
			t.Fatal(err)
		}
		return probeTask{close: task.Close, calls: map[string]func(context.Context) error{
			"Read":   func(ctx context.Context) error { _, err := task.Read(ctx, 1); return err },
			"Commit": func(ctx context.Context) error { return task.Commit(ctx, map[string]int64{"p": 1}) },
		}}
	case sdk.KindSink:
		task, err := proc.OpenSink(ctx, client.SinkOpen{Component: "probe", Connector: "c", Writers: 1})
		if err != nil {
			t.Fatal(err)
		}
		w := batch()
		return probeTask{close: task.Close, calls: map[string]func(context.Context) error{
			"Write": func(ctx context.Context) error { _, err := task.Write(ctx, 1, w, nil); return err },
			"Flush": func(ctx context.Context) error { _, err := task.Flush(ctx, 1); return err },
			"Commit": func(ctx context.Context) error {
				_, err := task.Commit(ctx, sdk.CommitRequest{Checkpoint: 1})
				return err
			},
		}}
	case sdk.KindPartitioner:
		task, err := proc.OpenPartitioner(ctx, client.PartitionerOpen{Component: "probe", Connector: "c", Writers: 2})
		if err != nil {
			t.Fatal(err)
		}
		w := batch()
		return probeTask{close: task.Close, calls: map[string]func(context.Context) error{
			"Partition": func(ctx context.Context) error { _, _, err := task.Partition(ctx, w); return err },
		}}
	default:
		task, err := proc.OpenMaintenance(ctx, client.MaintenanceOpen{Component: "probe", Connector: "c"})
		if err != nil {
			t.Fatal(err)
		}
		return probeTask{close: task.Close, calls: map[string]func(context.Context) error{
			"Cycle":  func(ctx context.Context) error { _, err := task.Cycle(ctx, sdk.CycleRequest{}); return err },
			"Status": func(ctx context.Context) error { _, err := task.Status(ctx); return err },
		}}
	}
}

// The host gives up on a call (its ctx ends; gRPC returns on the host's
// side at once) and closes the task while the plugin's handler still
// runs: the task's Close must wait for that call to return.
func TestCloseWaitsForCallsTheHostGaveUpOn(t *testing.T) {
	for _, kind := range sdk.AllKinds() {
		for _, name := range probeCalls[kind] {
			t.Run(string(kind)+"/"+name, func(t *testing.T) {
				p := newProbe(kind == sdk.KindSource)
				task := openProbe(t, kind, p)
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				_ = task.calls[name](ctx) // ends with ctx, or fails: either way the host moves on
				cancel()
				cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer ccancel()
				if err := task.close(cctx); err != nil {
					t.Fatalf("Close: %v", err)
				}
				p.check(t)
			})
		}
	}
}

// A Close that arrives while a call blocks (its ctx has no deadline)
// cancels the call's ctx, so the call returns, and then closes the task.
func TestCloseCancelsCallsInFlight(t *testing.T) {
	for _, kind := range sdk.AllKinds() {
		for _, name := range probeCalls[kind] {
			t.Run(string(kind)+"/"+name, func(t *testing.T) {
				p := newProbe(kind == sdk.KindSource)
				task := openProbe(t, kind, p)
				returned := make(chan error, 1)
				go func() { returned <- task.calls[name](context.Background()) }()
				p.waitStarted(t, name)
				cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer ccancel()
				start := time.Now()
				if err := task.close(cctx); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if d := time.Since(start); d > linger+2*time.Second {
					t.Errorf("Close took %v; it should cancel the call in flight and wait only for it to return", d)
				}
				select {
				case err := <-returned:
					t.Logf("the %s in flight returned %v", name, err) // cancelled or not: it returned
				case <-time.After(5 * time.Second):
					t.Fatalf("the %s in flight never returned after Close", name)
				}
				p.check(t)
			})
		}
	}
}

// A source's calls never overlap, even when the host gave up on a Read
// and calls Commit at once.
func TestSourceCallsAreSerial(t *testing.T) {
	p := newProbe(true)
	task := openProbe(t, sdk.KindSource, p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_ = task.calls["Read"](ctx)
	cancel()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	go func() { time.Sleep(100 * time.Millisecond); cancel() }() // Commit ends promptly, after Read
	_ = task.calls["Commit"](ctx)
	if err := task.close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	p.check(t)
}

// A task that ignores its cancelled ctx cannot hold Close forever: Close
// gives up when its own ctx ends, and the task is closed once the call
// returns.
func TestCloseOfATaskIgnoringItsCtx(t *testing.T) {
	release := make(chan struct{})
	p := newProbe(true)
	task := &stubbornTask{p: p, release: release}
	proc := serveProbe(t, sdk.Component{Name: "probe", Source: stubbornSource{task}})
	st, err := proc.OpenSource(context.Background(), client.SourceOpen{Component: "probe", Connector: "c", Tasks: 1, Host: nopHost{}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = st.Read(context.Background(), 1) }()
	p.waitStarted(t, "Read")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := st.Close(ctx); err == nil {
		t.Fatal("Close of a task stuck in Read succeeded; it must not close the task under a running call")
	}
	close(release)
	p.waitStarted(t, "Close")
	p.check(t)
}

type stubbornSource struct{ t *stubbornTask }

func (s stubbornSource) Open(context.Context, sdk.SourceOpenRequest) (sdk.SourceTask, error) {
	return s.t, nil
}

type stubbornTask struct {
	p       *probe
	release chan struct{}
}

func (t *stubbornTask) Read(context.Context, int) ([]sdk.Batch, error) {
	defer t.p.call("Read")()
	<-t.release
	return nil, nil
}
func (t *stubbornTask) Commit(context.Context, map[string]int64) error { return nil }
func (t *stubbornTask) Close(ctx context.Context) error                { return t.p.close(ctx) }
