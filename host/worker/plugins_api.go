package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/sdk"
)

// Topics implements [API].
func (w *Worker) Topics(ctx context.Context, name string) ([]string, error) {
	c, err := w.get(name)
	if err != nil {
		return nil, err
	}
	if _, _, rt, _, _ := c.snapshot(); rt != nil {
		return rt.Topics(), nil
	}
	return w.statuses.Topics(ctx, name)
}

// ResetTopics implements [API].
func (w *Worker) ResetTopics(ctx context.Context, name string) error {
	c, err := w.get(name)
	if err != nil {
		return err
	}
	if _, _, rt, _, _ := c.snapshot(); rt != nil {
		return rt.ResetTopics(ctx)
	}
	return w.statuses.PutTopics(ctx, name, nil)
}

// Plugins implements [API]: Class is the component's Connect class name
// (see [connectClass]), Type its kind (source, sink, partitioner,
// maintenance), Floe its floe name and aliases.
func (w *Worker) Plugins(_ context.Context, connectorsOnly bool) []PluginInfo {
	out := []PluginInfo{}
	for _, c := range w.plugins.Components() {
		if connectorsOnly && c.Kind != sdk.KindSource && c.Kind != sdk.KindSink {
			continue
		}
		aliases := append([]string{}, c.Aliases...)
		out = append(out, PluginInfo{Class: connectClass(c), Type: pluginType(c.Kind), Version: c.Version,
			Floe: &PluginNames{Name: c.Name, Aliases: aliases}})
	}
	return out
}

// PluginConfig implements [API]: the component's own keys (name or
// alias; sinks first when several kinds share a name).
func (w *Worker) PluginConfig(_ context.Context, name string) ([]ConfigDef, error) {
	all := w.plugins.Components()
	for _, k := range []sdk.Kind{sdk.KindSink, sdk.KindSource, sdk.KindPartitioner, sdk.KindMaintenance} {
		if c, ok := findComponent(all, k, name); ok {
			out := make([]ConfigDef, len(c.Fields))
			for i, f := range c.Fields {
				out[i] = configDef(f, i+1, c.Name)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("plugin %s: %w", name, ErrNotFound)
}

// HostConfig returns the definitions of the connector keys the host owns
// (for `floe plugins` and docs).
func HostConfig() []ConfigDef {
	fields := runtime.HostSpec().Fields()
	out := make([]ConfigDef, len(fields))
	for i, f := range fields {
		out[i] = configDef(f, i+1, "")
	}
	return out
}

// Validate implements [API]. plugin names the component the config is
// validated for: the config's key of that component's kind
// (connector.class for a sink, source for a source, ...) is set to it when
// absent. The answer lists every key of the host and of the connector's
// components; values of PASSWORD keys are null. An unknown plugin is an
// error entry, not an error. Unlike the validation of create and update,
// it also runs the components' probes (sdk.Spec.WithProbe), which may
// reach the systems the config names.
func (w *Worker) Validate(ctx context.Context, plugin string, config map[string]string) (ConfigInfos, error) {
	cfg := maps.Clone(config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	all := w.plugins.Components()
	key := runtime.KeyConnectorClass
	for _, k := range []sdk.Kind{sdk.KindSink, sdk.KindSource, sdk.KindPartitioner, sdk.KindMaintenance} {
		if _, ok := findComponent(all, k, plugin); ok {
			key = kindKey(k)
			break
		}
	}
	var mismatch string
	if cur, ok := cfg[key]; !ok || cur == "" {
		cfg[key] = plugin
	} else if cur != plugin {
		if c, ok := findComponent(all, kindOfKey(key), plugin); !ok || (c.Name != cur && !slices.Contains(c.Aliases, cur)) {
			mismatch = fmt.Sprintf("the config names %q but validation was asked for plugin %q", cur, plugin)
		}
	}
	v := w.validateWith(ctx, cfg, true)
	infos := v.infos
	if mismatch != "" {
		for i := range infos.Configs {
			if infos.Configs[i].Value.Name == key {
				infos.Configs[i].Value.Errors = append(infos.Configs[i].Value.Errors, mismatch)
				infos.ErrorCount++
			}
		}
	}
	if infos.Name == "" {
		infos.Name = plugin
	}
	return infos, nil
}

func kindOfKey(key string) sdk.Kind {
	for _, k := range sdk.AllKinds() {
		if kindKey(k) == key {
			return k
		}
	}
	return sdk.KindSink
}

// Tables implements [API]: the maintenance plugin's table health and runs
// when the connector has one, else what the sink reported of this run's
// commits (see [TableHealth]). A connector that is not running reports
// nothing.
func (w *Worker) Tables(ctx context.Context, name string) (TablesReport, error) {
	c, err := w.get(name)
	if err != nil {
		return TablesReport{}, err
	}
	rep := TablesReport{Tables: []TableHealth{}, Runs: []MaintenanceRun{}}
	_, _, rt, _, _ := c.snapshot()
	if rt == nil {
		return rep, nil
	}
	st, fromMaintenance, err := rt.Tables(ctx)
	if err != nil {
		return rep, err
	}
	if !fromMaintenance {
		for _, t := range rt.CommittedTables() {
			rep.Tables = append(rep.Tables, TableHealth{
				Table: t.Table, Source: TablesFromCommits, SnapshotID: &t.SnapshotID, Commits: &t.Commits,
				CommittedRecords: &t.Records, CommittedFiles: &t.Files, LastCommit: t.LastCommit,
			})
		}
		return rep, nil
	}
	for _, t := range st.Tables {
		rep.Tables = append(rep.Tables, TableHealth{
			Table: t.Table, Source: TablesFromMaintenance, Snapshots: &t.Snapshots, DataFiles: &t.DataFiles,
			SmallFiles: &t.SmallFiles, DeleteFiles: &t.DeleteFiles, DataBytes: &t.DataBytes, Records: &t.Records,
			Manifests: &t.Manifests, MetadataBytes: &t.MetadataBytes, LastCommit: t.LastCommit,
			MaxPartitionFiles: &t.MaxPartitionFiles, MaxPartition: &t.MaxPartition,
		})
	}
	for _, r := range st.Runs {
		rep.Runs = append(rep.Runs, MaintenanceRunOf(r))
	}
	return rep, nil
}

// MaintenanceRunOf is r as the REST API shows it.
func MaintenanceRunOf(r sdk.TaskRun) MaintenanceRun {
	return MaintenanceRun{
		Table: r.Table, Task: r.Task, Trigger: r.Trigger, Started: r.Started, Duration: r.Duration,
		FilesBefore: r.FilesBefore, FilesAfter: r.FilesAfter, BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter,
		Error: r.Error, Detail: r.Detail,
	}
}
