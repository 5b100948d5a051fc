package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floehq/floe/host/worker"
)

// fakeWorker is an in-memory runningWorker for the CLI's unit tests. Each
// status read advances a running connector's progress; a connector whose
// config has fake.records reaches the end of its input after that many
// records, and one with fake.fail fails its task 0 with that trace.
type fakeWorker struct {
	mu         sync.Mutex
	connectors map[string]*fakeConnector
	closed     bool
	reg        *prometheus.Registry
}

type fakeConnector struct {
	config map[string]string
	state  worker.State
	reads  int64
}

func newFakeWorker() *fakeWorker {
	return &fakeWorker{connectors: map[string]*fakeConnector{}, reg: prometheus.NewRegistry()}
}

func (f *fakeWorker) Metrics() *prometheus.Registry { return f.reg }

func (f *fakeWorker) Close(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeWorker) isClosed() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.closed }

func (f *fakeWorker) config(name string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.connectors[name]; ok {
		return maps.Clone(c.config)
	}
	return nil
}

func (f *fakeWorker) ServerInfo(context.Context) worker.ServerInfo {
	return worker.ServerInfo{Version: "test"}
}
func (f *fakeWorker) Ready(context.Context) error { return nil }

func (f *fakeWorker) Connectors(context.Context) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.connectors))
}

func (f *fakeWorker) Connector(_ context.Context, name string) (worker.ConnectorInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.connectors[name]
	if !ok {
		return worker.ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, worker.ErrNotFound)
	}
	return worker.ConnectorInfo{Name: name, Config: maps.Clone(c.config), Type: "sink"}, nil
}

func (f *fakeWorker) ConnectorStatus(_ context.Context, name string) (worker.ConnectorStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.connectors[name]
	if !ok {
		return worker.ConnectorStatus{}, fmt.Errorf("connector %s: %w", name, worker.ErrNotFound)
	}
	st := worker.ConnectorStatus{Name: name, Type: "sink",
		Connector: worker.ConnectorState{State: c.state, WorkerID: "test"},
		Tasks:     []worker.TaskState{{ID: 0, State: c.state, WorkerID: "test"}},
		Floe:      &worker.Progress{}}
	if trace := c.config["fake.fail"]; trace != "" {
		st.Tasks[0].State = worker.StateFailed
		st.Tasks[0].Trace = trace
		return st, nil
	}
	if c.state == worker.StateRunning {
		c.reads++
	}
	records := c.reads * 1000
	if limit, err := parseInt(c.config["fake.records"]); err == nil && records >= limit {
		records = limit
		st.Floe.EndOfInput = true
	}
	st.Floe.RecordsIn, st.Floe.RecordsOut = records, records
	st.Floe.Commits = c.reads / 2
	st.Floe.Checkpoint = uint64(c.reads / 2)
	st.Floe.FilesWritten = c.reads
	return st, nil
}

func parseInt(s string) (int64, error) {
	var n int64
	_, err := fmt.Sscan(s, &n)
	return n, err
}

func validate(config map[string]string) error {
	if config["tasks.max"] == "x" {
		v := "x"
		return &worker.ValidationError{Infos: worker.ConfigInfos{ErrorCount: 1, Configs: []worker.ConfigInfo{{
			Value: worker.ConfigValue{Name: "tasks.max", Value: &v, Errors: []string{`invalid int value "x"`}}}}}}
	}
	return nil
}

func (f *fakeWorker) CreateConnector(ctx context.Context, name string, config map[string]string, initial worker.State) (worker.ConnectorInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.connectors[name]; ok {
		return worker.ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, worker.ErrExists)
	}
	if err := validate(config); err != nil {
		return worker.ConnectorInfo{}, err
	}
	f.connectors[name] = &fakeConnector{config: maps.Clone(config), state: initial}
	return worker.ConnectorInfo{Name: name, Config: config}, nil
}

func (f *fakeWorker) PutConnectorConfig(ctx context.Context, name string, config map[string]string) (worker.ConnectorInfo, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := validate(config); err != nil {
		return worker.ConnectorInfo{}, false, err
	}
	c, ok := f.connectors[name]
	if !ok {
		c = &fakeConnector{state: worker.StateRunning}
		f.connectors[name] = c
	}
	c.config = maps.Clone(config)
	return worker.ConnectorInfo{Name: name, Config: config}, !ok, nil
}

func (f *fakeWorker) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (worker.ConnectorInfo, error) {
	return worker.ConnectorInfo{}, worker.ErrNotFound
}

func (f *fakeWorker) DeleteConnector(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.connectors[name]; !ok {
		return fmt.Errorf("connector %s: %w", name, worker.ErrNotFound)
	}
	delete(f.connectors, name)
	return nil
}

func (f *fakeWorker) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (worker.ConnectorStatus, error) {
	return f.ConnectorStatus(ctx, name)
}
func (f *fakeWorker) RestartTask(ctx context.Context, name string, task int) error { return nil }
func (f *fakeWorker) Pause(ctx context.Context, name string) error                 { return nil }
func (f *fakeWorker) Resume(ctx context.Context, name string) error                { return nil }
func (f *fakeWorker) Stop(ctx context.Context, name string) error                  { return nil }
func (f *fakeWorker) Tasks(_ context.Context, name string) ([]worker.TaskInfo, error) {
	return nil, nil
}
func (f *fakeWorker) TaskStatus(_ context.Context, name string, task int) (worker.TaskState, error) {
	return worker.TaskState{}, worker.ErrNotFound
}
func (f *fakeWorker) Offsets(ctx context.Context, name string) ([]worker.Offset, error) {
	return nil, nil
}
func (f *fakeWorker) AlterOffsets(ctx context.Context, name string, offsets []worker.Offset) error {
	return nil
}
func (f *fakeWorker) ResetOffsets(ctx context.Context, name string) error                { return nil }
func (f *fakeWorker) Topics(_ context.Context, name string) ([]string, error)            { return nil, nil }
func (f *fakeWorker) ResetTopics(_ context.Context, name string) error                   { return nil }
func (f *fakeWorker) Plugins(_ context.Context, connectorsOnly bool) []worker.PluginInfo { return nil }
func (f *fakeWorker) PluginConfig(_ context.Context, name string) ([]worker.ConfigDef, error) {
	return nil, worker.ErrNotFound
}
func (f *fakeWorker) Validate(ctx context.Context, plugin string, config map[string]string) (worker.ConfigInfos, error) {
	return worker.ConfigInfos{}, nil
}
func (f *fakeWorker) Tables(ctx context.Context, name string) (worker.TablesReport, error) {
	return worker.TablesReport{}, nil
}

var _ runningWorker = (*fakeWorker)(nil)
