package rest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/floehq/floe/host/worker"
)

// fakeWorker is an in-memory worker.API for the handler tests. Its
// behaviour follows the API's contract; err, when set, is returned by the
// next call that can fail.
type fakeWorker struct {
	mu         sync.Mutex
	ready      error
	connectors map[string]*fakeConnector
	err        error
	calls      []string
}

type fakeConnector struct {
	config map[string]string
	state  worker.State
	tasks  []worker.TaskState
	topics []string
	offs   []worker.Offset
}

func newFakeWorker() *fakeWorker {
	return &fakeWorker{connectors: map[string]*fakeConnector{}}
}

func (f *fakeWorker) record(format string, args ...any) error {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	err := f.err
	f.err = nil
	return err
}

func (f *fakeWorker) get(name string) (*fakeConnector, error) {
	c, ok := f.connectors[name]
	if !ok {
		return nil, fmt.Errorf("connector %s: %w", name, worker.ErrNotFound)
	}
	return c, nil
}

func (f *fakeWorker) info(name string, c *fakeConnector) worker.ConnectorInfo {
	info := worker.ConnectorInfo{Name: name, Config: maps.Clone(c.config), Type: "sink"}
	for i := range c.tasks {
		info.Tasks = append(info.Tasks, worker.TaskID{Connector: name, Task: i})
	}
	return info
}

func (f *fakeWorker) ServerInfo(context.Context) worker.ServerInfo {
	return worker.ServerInfo{Version: "0.1.0", Commit: "abc123", KafkaClusterID: "standalone"}
}

func (f *fakeWorker) Ready(context.Context) error { f.mu.Lock(); defer f.mu.Unlock(); return f.ready }

func (f *fakeWorker) Connectors(context.Context) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.connectors))
}

func (f *fakeWorker) Connector(_ context.Context, name string) (worker.ConnectorInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return worker.ConnectorInfo{}, err
	}
	return f.info(name, c), nil
}

func (f *fakeWorker) status(name string, c *fakeConnector) worker.ConnectorStatus {
	return worker.ConnectorStatus{
		Name:      name,
		Connector: worker.ConnectorState{State: c.state, WorkerID: "127.0.0.1:8083"},
		Tasks:     slices.Clone(c.tasks),
		Type:      "sink",
		Floe:      &worker.Progress{RecordsIn: 10, Commits: 2, Checkpoint: 3},
	}
}

func (f *fakeWorker) ConnectorStatus(_ context.Context, name string) (worker.ConnectorStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return worker.ConnectorStatus{}, err
	}
	return f.status(name, c), nil
}

// validateConfig is the fake's validation: connector.class must be
// "iceberg" and tasks.max a number.
func validateConfig(config map[string]string) *worker.ValidationError {
	infos := worker.ConfigInfos{Name: config["connector.class"]}
	for _, k := range slices.Sorted(maps.Keys(config)) {
		v := config[k]
		ci := worker.ConfigInfo{Definition: worker.ConfigDef{Name: k, Type: "STRING"}, Value: worker.ConfigValue{Name: k, Value: &v, Visible: true}}
		if k == "tasks.max" && v != "1" && v != "2" {
			ci.Value.Errors = []string{fmt.Sprintf("invalid int value %q", v)}
			infos.ErrorCount++
		}
		if k == "catalog.password" {
			ci.Definition.Type = "PASSWORD"
		}
		infos.Configs = append(infos.Configs, ci)
	}
	if infos.ErrorCount > 0 {
		return &worker.ValidationError{Infos: infos}
	}
	return nil
}

func (f *fakeWorker) CreateConnector(ctx context.Context, name string, config map[string]string, initial worker.State) (worker.ConnectorInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("create %s %s", name, initial); err != nil {
		return worker.ConnectorInfo{}, err
	}
	if _, ok := f.connectors[name]; ok {
		return worker.ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, worker.ErrExists)
	}
	if ve := validateConfig(config); ve != nil {
		return worker.ConnectorInfo{}, ve
	}
	c := &fakeConnector{config: maps.Clone(config), state: initial,
		tasks: []worker.TaskState{{ID: 0, State: initial, WorkerID: "w"}}}
	f.connectors[name] = c
	return f.info(name, c), nil
}

func (f *fakeWorker) PutConnectorConfig(ctx context.Context, name string, config map[string]string) (worker.ConnectorInfo, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("put %s", name); err != nil {
		return worker.ConnectorInfo{}, false, err
	}
	if ve := validateConfig(config); ve != nil {
		return worker.ConnectorInfo{}, false, ve
	}
	c, ok := f.connectors[name]
	if !ok {
		c = &fakeConnector{state: worker.StateRunning}
		f.connectors[name] = c
	}
	c.config = maps.Clone(config)
	return f.info(name, c), !ok, nil
}

func (f *fakeWorker) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (worker.ConnectorInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("patch %s", name); err != nil {
		return worker.ConnectorInfo{}, err
	}
	c, err := f.get(name)
	if err != nil {
		return worker.ConnectorInfo{}, err
	}
	for k, v := range patch {
		if v == nil {
			delete(c.config, k)
		} else {
			c.config[k] = *v
		}
	}
	return f.info(name, c), nil
}

func (f *fakeWorker) DeleteConnector(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("delete %s", name); err != nil {
		return err
	}
	if _, err := f.get(name); err != nil {
		return err
	}
	delete(f.connectors, name)
	return nil
}

func (f *fakeWorker) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (worker.ConnectorStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("restart %s tasks=%v failed=%v", name, includeTasks, onlyFailed); err != nil {
		return worker.ConnectorStatus{}, err
	}
	c, err := f.get(name)
	if err != nil {
		return worker.ConnectorStatus{}, err
	}
	st := f.status(name, c)
	st.Connector.State = worker.StateRestarting
	return st, nil
}

func (f *fakeWorker) RestartTask(ctx context.Context, name string, task int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("restart-task %s %d", name, task); err != nil {
		return err
	}
	c, err := f.get(name)
	if err != nil {
		return err
	}
	if task >= len(c.tasks) {
		return fmt.Errorf("task %s-%d: %w", name, task, worker.ErrNotFound)
	}
	return nil
}

func (f *fakeWorker) setState(op, name string, st worker.State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("%s %s", op, name); err != nil {
		return err
	}
	c, err := f.get(name)
	if err != nil {
		return err
	}
	c.state = st
	return nil
}

func (f *fakeWorker) Pause(ctx context.Context, name string) error {
	return f.setState("pause", name, worker.StatePaused)
}
func (f *fakeWorker) Resume(ctx context.Context, name string) error {
	return f.setState("resume", name, worker.StateRunning)
}
func (f *fakeWorker) Stop(ctx context.Context, name string) error {
	return f.setState("stop", name, worker.StateStopped)
}

func (f *fakeWorker) Tasks(_ context.Context, name string) ([]worker.TaskInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return nil, err
	}
	var out []worker.TaskInfo
	for i := range c.tasks {
		out = append(out, worker.TaskInfo{ID: worker.TaskID{Connector: name, Task: i}, Config: maps.Clone(c.config)})
	}
	return out, nil
}

func (f *fakeWorker) TaskStatus(_ context.Context, name string, task int) (worker.TaskState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return worker.TaskState{}, err
	}
	if task >= len(c.tasks) {
		return worker.TaskState{}, fmt.Errorf("task %s-%d: %w", name, task, worker.ErrNotFound)
	}
	return c.tasks[task], nil
}

func (f *fakeWorker) Offsets(ctx context.Context, name string) ([]worker.Offset, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return nil, err
	}
	return c.offs, nil
}

func (f *fakeWorker) AlterOffsets(ctx context.Context, name string, offsets []worker.Offset) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return err
	}
	if c.state != worker.StateStopped {
		return fmt.Errorf("connector %s is %s: %w", name, c.state, worker.ErrBadState)
	}
	c.offs = offsets
	return nil
}

func (f *fakeWorker) ResetOffsets(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return err
	}
	if c.state != worker.StateStopped {
		return fmt.Errorf("connector %s is %s: %w", name, c.state, worker.ErrBadState)
	}
	c.offs = nil
	return nil
}

func (f *fakeWorker) Topics(_ context.Context, name string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.get(name)
	if err != nil {
		return nil, err
	}
	return c.topics, nil
}

func (f *fakeWorker) ResetTopics(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("reset-topics %s", name); err != nil {
		return err
	}
	c, err := f.get(name)
	if err != nil {
		return err
	}
	c.topics = nil
	return nil
}

// fakePlugins is what the worker lists: the class is the Connect class
// name where the component has one.
var fakePlugins = []worker.PluginInfo{
	{Class: "org.apache.iceberg.connect.IcebergSinkConnector", Type: "sink", Version: "0.1.0",
		Floe: &worker.PluginNames{Name: "iceberg", Aliases: []string{"org.apache.iceberg.connect.IcebergSinkConnector"}}},
	{Class: "datagen", Type: "source", Version: "0.1.0", Floe: &worker.PluginNames{Name: "datagen", Aliases: []string{}}},
	{Class: "hash", Type: "partitioner", Version: "0.1.0", Floe: &worker.PluginNames{Name: "hash", Aliases: []string{}}},
}

func (f *fakeWorker) Plugins(_ context.Context, connectorsOnly bool) []worker.PluginInfo {
	var out []worker.PluginInfo
	for _, p := range fakePlugins {
		if !connectorsOnly || p.Type == "sink" || p.Type == "source" {
			out = append(out, p)
		}
	}
	return out
}

func (f *fakeWorker) PluginConfig(_ context.Context, name string) ([]worker.ConfigDef, error) {
	switch name {
	case "iceberg", "org.apache.iceberg.connect.IcebergSinkConnector", "IcebergSinkConnector":
		def := "1"
		return []worker.ConfigDef{
			{Name: "tasks.max", Type: "INT", DefaultValue: &def, Importance: "HIGH"},
			{Name: "catalog.password", Type: "PASSWORD"},
		}, nil
	case "datagen", "hash":
		return []worker.ConfigDef{{Name: name + ".seed", Type: "LONG"}}, nil
	}
	return nil, fmt.Errorf("plugin %s: %w", name, worker.ErrNotFound)
}

func (f *fakeWorker) Validate(ctx context.Context, plugin string, config map[string]string) (worker.ConfigInfos, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("validate %s %s", plugin, config["connector.class"]); err != nil {
		return worker.ConfigInfos{}, err
	}
	if _, err := f.PluginConfig(ctx, plugin); err != nil {
		return worker.ConfigInfos{}, err
	}
	if ve := validateConfig(config); ve != nil {
		return ve.Infos, nil
	}
	infos := worker.ConfigInfos{Name: plugin}
	for _, k := range slices.Sorted(maps.Keys(config)) {
		v := config[k]
		ci := worker.ConfigInfo{Definition: worker.ConfigDef{Name: k, Type: "STRING"}, Value: worker.ConfigValue{Name: k, Value: &v}}
		if k == "catalog.password" {
			ci.Definition.Type = "PASSWORD"
		}
		infos.Configs = append(infos.Configs, ci)
	}
	return infos, nil
}

func (f *fakeWorker) Tables(ctx context.Context, name string) (worker.TablesReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.get(name); err != nil {
		return worker.TablesReport{}, err
	}
	n := func(v int64) *int64 { return &v }
	return worker.TablesReport{Tables: []worker.TableHealth{{Table: "demo.orders", Source: worker.TablesFromMaintenance,
		DataFiles: n(12), SmallFiles: n(3), Records: n(1000)}}}, nil
}

var _ worker.API = (*fakeWorker)(nil)

var errBoom = errors.New("boom")
