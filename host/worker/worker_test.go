package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/sdk"
)

func newWorker(t *testing.T, fp *fakePlugins, dir string) *Worker {
	t.Helper()
	w, err := New(context.Background(), Config{DataDir: dir, WorkerID: "w1"}, Deps{
		Plugins: fp,
		Tuning:  runtime.Tuning{ReadPoll: 10 * time.Millisecond, CloseTimeout: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	return w
}

func baseConfig() map[string]string {
	return map[string]string{
		"connector.class": "tbl", "source": "gen", "tbl.path": "/x", "tasks.max": "2",
		"commit.interval.ms": "20", "gen.count": "100",
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func endOfInput(w *Worker, name string) func() bool {
	return func() bool {
		st, err := w.ConnectorStatus(context.Background(), name)
		return err == nil && st.Floe != nil && st.Floe.EndOfInput
	}
}

func TestCreateRunsToEndOfInput(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	if err := w.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, err := w.CreateConnector(ctx, "orders", baseConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "orders" || info.Type != "sink" || len(info.Tasks) != 2 || info.Config["name"] != "orders" {
		t.Fatalf("info %+v", info)
	}
	waitFor(t, "end of input", endOfInput(w, "orders"))
	st, _ := w.ConnectorStatus(context.Background(), "orders")
	if st.Connector.State != StateRunning || st.Connector.WorkerID != "w1" || len(st.Tasks) != 2 || st.Tasks[1].State != StateRunning {
		t.Fatalf("status %+v", st)
	}
	if st.Floe.RecordsOut != 200 || st.Floe.Commits == 0 {
		t.Fatalf("progress %+v", st.Floe)
	}
	offs, err := w.Offsets(ctx, "orders")
	if err != nil || len(offs) != 2 {
		t.Fatalf("offsets %+v %v", offs, err)
	}
	// gen is not a Kafka source: its "t/1" is a partition name, not a topic.
	if offs[1].Partition["partition"] != "t/1" || offs[1].Offset["position"] != int64(100) || len(offs[1].Partition) != 1 {
		t.Fatalf("offset entry %+v", offs[1])
	}
	if tp, _ := w.Topics(context.Background(), "orders"); len(tp) != 1 || tp[0] != "t" {
		t.Fatalf("topics %v", tp)
	}
	if err := w.ResetTopics(context.Background(), "orders"); err != nil {
		t.Fatal(err)
	}
	if tp, _ := w.Topics(context.Background(), "orders"); len(tp) != 0 {
		t.Fatalf("topics after reset %v", tp)
	}
	rep, err := w.Tables(ctx, "orders")
	// No maintenance plugin: what the commits said, and no table-wide
	// count pretending to be 0.
	if err != nil || len(rep.Tables) != 1 {
		t.Fatalf("tables %+v %v", rep, err)
	}
	if th := rep.Tables[0]; th.Source != TablesFromCommits || th.CommittedRecords == nil || *th.CommittedRecords != 200 ||
		th.Commits == nil || *th.Commits == 0 || th.LastCommit.IsZero() {
		t.Fatalf("table from the commits %+v", th)
	}
	raw, _ := json.Marshal(rep.Tables[0])
	for _, unknown := range []string{"snapshots", "data_bytes", "manifests", "small_files", `"records"`} {
		if strings.Contains(string(raw), unknown) {
			t.Errorf("without maintenance the table reports %s: %s", unknown, raw)
		}
	}
	if _, err := w.CreateConnector(ctx, "orders", baseConfig(), ""); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if ts, err := w.TaskStatus(context.Background(), "orders", 1); err != nil || ts.ID != 1 {
		t.Fatalf("task status %+v %v", ts, err)
	}
	if _, err := w.TaskStatus(context.Background(), "orders", 5); !errors.Is(err, ErrNotFound) {
		t.Fatalf("task 5: %v", err)
	}
	if n := w.Metrics(); n == nil {
		t.Fatal("no metrics registry")
	}
	if mf, err := w.Metrics().Gather(); err != nil || len(mf) == 0 {
		t.Fatalf("gather: %v", err)
	}
}

func TestInvalidCreateLeavesNothing(t *testing.T) {
	fp := newFakePlugins()
	dir := t.TempDir()
	w := newWorker(t, fp, dir)
	ctx := context.Background()
	cfg := baseConfig()
	cfg["tasks.mx"] = "3"
	cfg["connector.class"] = "tbll"
	cfg["tbl.path"] = "bad"
	_, err := w.CreateConnector(ctx, "c", cfg, "")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a ValidationError", err)
	}
	msg := ve.Error()
	for _, want := range []string{`"tasks.mx"`, `did you mean "tasks.max"`, `no sink plugin named "tbll"`, `did you mean "tbl"`, "known sink plugins: tbl"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if len(w.Connectors(context.Background())) != 0 {
		t.Fatalf("connectors %v", w.Connectors(context.Background()))
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "connectors")); len(entries) != 0 {
		t.Fatalf("stored: %v", entries)
	}
	if n := fp.live.Load(); n != 0 {
		t.Fatalf("%d plugin processes left running", n)
	}
	// A plugin-side error (the sink's own validator).
	cfg = baseConfig()
	cfg["tbl.path"] = "bad"
	_, err = w.CreateConnector(ctx, "c", cfg, "")
	if !errors.As(err, &ve) || !strings.Contains(ve.Error(), "not writable") {
		t.Fatalf("plugin-side error: %v", err)
	}
	// A name that differs from the config's.
	cfg = baseConfig()
	cfg["name"] = "other"
	if _, err := w.CreateConnector(ctx, "c", cfg, ""); !errors.As(err, &ve) {
		t.Fatalf("name mismatch: %v", err)
	}
}

func TestValidate(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	cfg := baseConfig()
	delete(cfg, "connector.class")
	cfg["tbl.password"] = "s3cret"
	cfg["tbl.opt.compression"] = "zstd"
	cfg["tasks.max"] = "0"
	cfg["name"] = "v"
	infos, err := w.Validate(context.Background(), "com.example.TblSinkConnector", cfg)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ConfigInfo{}
	for _, c := range infos.Configs {
		byName[c.Value.Name] = c
	}
	if infos.Name != "com.example.TblSinkConnector" || infos.ErrorCount != 1 {
		t.Fatalf("name %q, %d errors: %+v", infos.Name, infos.ErrorCount, infos)
	}
	if e := byName["tasks.max"].Value.Errors; len(e) != 1 || !strings.Contains(e[0], "at least 1") {
		t.Fatalf("tasks.max errors %v", e)
	}
	if byName["tbl.password"].Value.Value != nil || byName["tbl.password"].Definition.Type != "PASSWORD" {
		t.Fatalf("secret echoed: %+v", byName["tbl.password"])
	}
	if v := byName["commit.interval.ms"].Value.Value; v == nil || *v != "20" {
		t.Fatalf("commit.interval.ms value %v", v)
	}
	if d := byName["checkpoint.max.pending"]; d.Value.Value == nil || *d.Value.Value != "3" || d.Definition.DefaultValue == nil {
		t.Fatalf("default shown: %+v", d)
	}
	for _, k := range []string{"gen.count", "tbl.path", "errors.tolerance", "process.sink.memory"} {
		if _, ok := byName[k]; !ok {
			t.Errorf("validate does not list %s", k)
		}
	}
	if len(infos.Groups) == 0 {
		t.Error("no groups")
	}
	// A source component asked by name.
	infos, _ = w.Validate(context.Background(), "gen", map[string]string{"name": "v", "connector.class": "tbl", "tbl.path": "/x"})
	if infos.ErrorCount != 0 {
		t.Fatalf("validate via the source: %+v", infos)
	}
	// Unknown plugin: an error entry, not an error.
	infos, err = w.Validate(context.Background(), "nope", map[string]string{"name": "v", "source": "gen"})
	if err != nil || infos.ErrorCount == 0 {
		t.Fatalf("unknown plugin: %v %+v", err, infos)
	}
}

// config/validate runs the components' probes, within a bounded time;
// create and update do not: they must not depend on other systems.
func TestValidateProbes(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	cfg := baseConfig()
	cfg["name"] = "p"
	cfg["tbl.path"] = "unreachable"
	infos, err := w.Validate(ctx, "tbl", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, c := range infos.Configs {
		if c.Value.Name == "tbl.path" {
			msgs = c.Value.Errors
		}
	}
	if infos.ErrorCount != 1 || len(msgs) != 1 || !strings.Contains(msgs[0], "timeout after 10s") {
		t.Fatalf("validate: %d errors, tbl.path %q; want the probe's", infos.ErrorCount, msgs)
	}
	if left := time.Duration(fp.probeLeft.Load()); left <= 0 || left > validateTimeout {
		t.Errorf("the probe's ctx had %v left, want a deadline within %v", left, validateTimeout)
	}
	before := fp.probes.Load()
	if _, err := w.CreateConnector(ctx, "p", cfg, ""); err != nil {
		t.Fatalf("create: %v", err)
	}
	if n := fp.probes.Load() - before; n != 0 {
		t.Errorf("create ran the probes %d times", n)
	}
}

func TestSecretsAreHiddenAndKept(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	cfg := baseConfig()
	cfg["tbl.password"] = "s3cret"
	cfg["gen.token"] = "tok"
	if _, err := w.CreateConnector(ctx, "c", cfg, StateStopped); err != nil {
		t.Fatal(err)
	}
	info, _ := w.Connector(context.Background(), "c")
	if info.Config["tbl.password"] != Hidden || info.Config["gen.token"] != Hidden || info.Config["tbl.path"] != "/x" {
		t.Fatalf("config %v", info.Config)
	}
	if len(info.Tasks) != 0 {
		t.Fatalf("a STOPPED connector lists tasks %v", info.Tasks)
	}
	// PUT the config back as shown, with one change: secrets are kept.
	cfg2 := info.Config
	cfg2["gen.count"] = "5"
	if _, created, err := w.PutConnectorConfig(ctx, "c", cfg2); err != nil || created {
		t.Fatalf("put: %v created=%v", err, created)
	}
	rec, _ := w.configs.Connector(ctx, "c")
	if rec.Config["tbl.password"] != "s3cret" || rec.Config["gen.token"] != "tok" || rec.Config["gen.count"] != "5" {
		t.Fatalf("stored %v", rec.Config)
	}
	if err := w.Resume(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	tasks, _ := w.Tasks(context.Background(), "c")
	if len(tasks) != 2 || tasks[0].Config["tbl.password"] != Hidden || tasks[1].Config["task.id"] != "1" {
		t.Fatalf("tasks %+v", tasks)
	}
	waitFor(t, "the sink to open", func() bool {
		fp.mu.Lock()
		defer fp.mu.Unlock()
		return len(fp.sinkCfgs) > 0
	})
	fp.mu.Lock()
	sinkCfg := fp.sinkCfgs[len(fp.sinkCfgs)-1]
	fp.mu.Unlock()
	if sinkCfg["tbl.password"] != "s3cret" || sinkCfg[runtime.KeyDataDir] == "" {
		t.Fatalf("the plugin did not get the secret or floe.data.dir: %v", sinkCfg)
	}
	// PATCH removing a key.
	if _, err := w.PatchConnectorConfig(ctx, "c", map[string]*string{"gen.token": nil}); err != nil {
		t.Fatal(err)
	}
	if info, _ := w.Connector(context.Background(), "c"); info.Config["gen.token"] != "" {
		t.Fatalf("patched %v", info.Config)
	}
}

func TestRestartBringsConnectorsBack(t *testing.T) {
	fp := newFakePlugins()
	dir := t.TempDir()
	w := newWorker(t, fp, dir)
	ctx := context.Background()
	cfg := baseConfig()
	cfg["gen.count"] = "0"
	for name, st := range map[string]State{"run": StateRunning, "pause": StatePaused, "stop": StateStopped} {
		if _, err := w.CreateConnector(ctx, name, cfg, st); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "run commits", func() bool {
		st, _ := w.ConnectorStatus(context.Background(), "run")
		return st.Floe != nil && st.Floe.Commits > 0
	})
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := fp.live.Load(); n != 0 {
		t.Fatalf("%d processes alive after Close", n)
	}
	w2 := newWorker(t, fp, dir)
	if got := strings.Join(w2.Connectors(context.Background()), ","); got != "pause,run,stop" {
		t.Fatalf("connectors %s", got)
	}
	want := map[string]State{"run": StateRunning, "pause": StatePaused, "stop": StateStopped}
	for name, state := range want {
		waitFor(t, name+" state", func() bool {
			st, _ := w2.ConnectorStatus(context.Background(), name)
			return st.Connector.State == state
		})
	}
	st, _ := w2.ConnectorStatus(context.Background(), "stop")
	if len(st.Tasks) != 0 {
		t.Fatalf("stopped connector tasks %+v", st.Tasks)
	}
}

func TestStoredConnectorWithMissingPluginFails(t *testing.T) {
	fp := newFakePlugins()
	dir := t.TempDir()
	w := newWorker(t, fp, dir)
	if _, err := w.CreateConnector(context.Background(), "c", baseConfig(), StateStopped); err != nil {
		t.Fatal(err)
	}
	_ = w.Close(context.Background())
	fp.hideSink = true
	w2 := newWorker(t, fp, dir)
	st, err := w2.ConnectorStatus(context.Background(), "c")
	if err != nil || st.Connector.State != StateFailed || !strings.Contains(st.Connector.Trace, `no sink plugin named "tbl"`) {
		t.Fatalf("status %+v %v", st, err)
	}
	fp.mu.Lock()
	fp.hideSink = false
	fp.mu.Unlock()
	if err := w2.Resume(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	// Resume does not clear a failure; a restart revalidates.
	if _, err := w2.RestartConnector(context.Background(), "c", true, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running", func() bool {
		st, _ := w2.ConnectorStatus(context.Background(), "c")
		return st.Connector.State == StateRunning
	})
}

func TestStopAlterOffsetsResume(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	if _, err := w.CreateConnector(ctx, "c", baseConfig(), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "end of input", endOfInput(w, "c"))
	err := w.AlterOffsets(ctx, "c", []Offset{{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": float64(0)}, Offset: map[string]any{"kafka_offset": float64(40)}}})
	if !errors.Is(err, ErrBadState) {
		t.Fatalf("alter while running: %v", err)
	}
	if err := w.ResetOffsets(ctx, "c"); !errors.Is(err, ErrBadState) {
		t.Fatalf("reset while running: %v", err)
	}
	if err := w.Stop(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	st, _ := w.ConnectorStatus(context.Background(), "c")
	if st.Connector.State != StateStopped || len(st.Tasks) != 0 {
		t.Fatalf("status %+v", st)
	}
	// Offsets of a stopped connector come from the sink's frontier.
	offs, err := w.Offsets(ctx, "c")
	if err != nil || len(offs) != 2 || offs[0].Offset["position"] != int64(100) {
		t.Fatalf("offsets %+v %v", offs, err)
	}
	if err := w.AlterOffsets(ctx, "c", []Offset{{Partition: map[string]any{"partition": "t/0"}, Offset: map[string]any{"position": float64(40)}}}); err != nil {
		t.Fatal(err)
	}
	offs, _ = w.Offsets(ctx, "c")
	if offs[0].Offset["position"] != int64(40) || offs[1].Offset["position"] != int64(100) {
		t.Fatalf("offsets after alter %+v", offs)
	}
	// Malformed input names the problem.
	var ve *ValidationError
	if err := w.AlterOffsets(ctx, "c", []Offset{{Partition: map[string]any{"x": 1}}}); !errors.As(err, &ve) {
		t.Fatalf("bad offsets: %v", err)
	}
	if err := w.Resume(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "re-read from 40", func() bool {
		fp.mu.Lock()
		defer fp.mu.Unlock()
		return fp.rows == 260
	})
	fp.mu.Lock()
	var reset *sdk.OffsetsReset
	if n := len(fp.resets); n > 0 {
		reset = fp.resets[n-1]
	}
	fp.mu.Unlock()
	if reset == nil || reset.Positions["t/0"] != 40 {
		t.Fatalf("the sink's Open carried offsets reset %+v; want t/0 at 40", reset)
	}
	waitFor(t, "override spent", func() bool {
		_, err := w.offsets.Override(ctx, "c")
		return errors.Is(err, store.ErrNotFound)
	})
	// Reset: everything starts over.
	if err := w.Stop(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := w.ResetOffsets(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if offs, _ := w.Offsets(ctx, "c"); len(offs) != 0 {
		t.Fatalf("offsets after reset %+v", offs)
	}
}

func TestPauseResumeRestartDelete(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	cfg := baseConfig()
	cfg["gen.count"] = "0"
	cfg["maintenance"] = "upkeep"
	if _, err := w.CreateConnector(ctx, "c", cfg, ""); err != nil {
		t.Fatal(err)
	}
	if err := w.Pause(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "paused", func() bool {
		st, _ := w.ConnectorStatus(context.Background(), "c")
		return st.Connector.State == StatePaused && len(st.Tasks) == 2 && st.Tasks[0].State == StatePaused
	})
	if rec, _ := w.configs.Connector(ctx, "c"); rec.Target != store.TargetPaused {
		t.Fatalf("stored target %s", rec.Target)
	}
	if err := w.Resume(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running", func() bool {
		st, _ := w.ConnectorStatus(context.Background(), "c")
		return st.Connector.State == StateRunning && st.Tasks[0].State == StateRunning
	})
	waitFor(t, "maintenance", func() bool {
		rep, err := w.Tables(ctx, "c")
		return err == nil && len(rep.Tables) == 1 && rep.Tables[0].Source == TablesFromMaintenance &&
			rep.Tables[0].DataFiles != nil && *rep.Tables[0].DataFiles == 7 && rep.Tables[0].DataBytes != nil && len(rep.Runs) == 1
	})
	if _, err := w.RestartConnector(ctx, "c", true, false); err != nil {
		t.Fatal(err)
	}
	if err := w.RestartTask(ctx, "c", 1); err != nil {
		t.Fatal(err)
	}
	if err := w.RestartTask(ctx, "c", 9); !errors.Is(err, ErrNotFound) {
		t.Fatalf("restart task 9: %v", err)
	}
	if err := w.DeleteConnector(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Connector(context.Background(), "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := w.DeleteConnector(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := w.configs.Connector(ctx, "c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("stored after delete: %v", err)
	}
	waitFor(t, "processes gone", func() bool { return fp.live.Load() == 0 })
}

func TestPluginsListing(t *testing.T) {
	w := newWorker(t, newFakePlugins(), t.TempDir())
	all := w.Plugins(context.Background(), false)
	conns := w.Plugins(context.Background(), true)
	if len(all) != 5 || len(conns) != 3 {
		t.Fatalf("plugins %+v / %+v", all, conns)
	}
	// A component with a Connect class alias is listed by it; others by
	// their floe name, which Floe always carries.
	classes := map[string]PluginInfo{}
	for _, p := range all {
		classes[p.Class] = p
	}
	if p, ok := classes["com.example.TblSinkConnector"]; !ok || p.Type != "sink" || p.Floe == nil || p.Floe.Name != "tbl" {
		t.Errorf("tbl sink not listed by its class name: %+v", all)
	}
	if p, ok := classes["hash"]; !ok || p.Floe == nil || p.Floe.Name != "hash" || p.Floe.Aliases == nil {
		t.Errorf("hash partitioner not listed by its name: %+v", all)
	}
	// As Connect resolves a plugin: the class, its simple name, that name
	// without "Connector", and floe's name all answer the definitions.
	for _, name := range []string{"com.example.TblSinkConnector", "TblSinkConnector", "TblSink", "tbl"} {
		defs, err := w.PluginConfig(context.Background(), name)
		if err != nil || len(defs) != 3 || defs[0].Name != "tbl.path" || !defs[0].Required || defs[1].Type != "PASSWORD" {
			t.Fatalf("PluginConfig(%q): defs %+v %v", name, defs, err)
		}
	}
	if _, err := w.PluginConfig(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if len(HostConfig()) < 20 {
		t.Fatal("host config too short")
	}
	if w.ServerInfo(context.Background()).Version == "" {
		t.Fatal("no version")
	}
}

func TestConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"plugin.path": "a, b", "data.dir": "/d", "config.dir": "/c"}`), "w.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 1 || c.Listeners[0] != DefaultListeners || c.WorkerID != "127.0.0.1:8083" ||
		strings.Join(c.PluginPath, "|") != "a|b" || c.DataDir != "/d" || c.ConfigDir != "/c" || c.LogLevel != "info" ||
		c.ShutdownTimeout != DefaultShutdownTimeout || c.PluginTLS != DefaultPluginTLS {
		t.Fatalf("%+v", c)
	}
	if c, err := ParseConfig([]byte(`{"plugin.transport.tls": "true"}`), "w.json"); err != nil || !c.PluginTLS {
		t.Fatalf("plugin.transport.tls=true: %+v %v", c, err)
	}
	if c.MemoryMaxBytes != DefaultMemoryMaxBytes || !c.PluginSharedMemory {
		t.Fatalf("memory and shared memory defaults: %+v", c)
	}
	for v, want := range map[string]int64{"1GiB": 1 << 30, "0": 0, "268435456": 256 << 20} {
		if c, err := ParseConfig([]byte(`{"memory.max.bytes": "`+v+`"}`), "w.json"); err != nil || c.MemoryMaxBytes != want {
			t.Errorf("memory.max.bytes=%s: %d %v, want %d", v, c.MemoryMaxBytes, err, want)
		}
	}
	c, _ = ParseConfig([]byte(`{}`), "w.json")
	wantDir, _ := filepath.Abs(DefaultDataDir)
	if c.DataDir != wantDir || c.PluginPath[0] != DefaultPluginPath {
		t.Fatalf("defaults %+v", c)
	}
	_, err = ParseConfig([]byte(`{"plugin.paht": "x"}`), "w.json")
	if err == nil || !strings.Contains(err.Error(), "w.json") || !strings.Contains(err.Error(), `"plugin.paht"`) || !strings.Contains(err.Error(), `did you mean "plugin.path"`) {
		t.Fatalf("unknown key: %v", err)
	}
	for _, bad := range []string{`{"listeners": "localhost"}`, `{"log.level": "loud"}`, `{"task.shutdown.graceful.timeout.ms": "-1"}`, `{"data.dir": 3}`, `{"plugin.transport.tls": "maybe"}`,
		`{"plugin.transport.shared.memory": "maybe"}`, `{"memory.max.bytes": "100MiB"}`, `{"memory.max.bytes": "lots"}`} {
		if _, err := ParseConfig([]byte(bad), "w.json"); err == nil || !strings.Contains(err.Error(), "w.json") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.json")
	_ = os.WriteFile(path, []byte(`{"worker.id": "me", "task.shutdown.graceful.timeout.ms": "5000"}`), 0o644)
	c, err = LoadConfig(path)
	if err != nil || c.WorkerID != "me" || c.ShutdownTimeout != 5*time.Second || c.File != path {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("missing file")
	}
	// The example worker config of the repository loads.
	if _, err := LoadConfig("../../configs/worker.json"); err != nil {
		t.Fatal(err)
	}
}

func TestEditDistance(t *testing.T) {
	if editDistance("tasks.mx", "tasks.max") != 1 || editDistance("", "abc") != 3 || editDistance("kitten", "sitting") != 3 {
		t.Fatal("edit distance")
	}
	if closest("zzzzzzzz", []string{"tasks.max"}) != "" {
		t.Fatal("far keys must not be suggested")
	}
}

func states(st ConnectorStatus) string {
	s := string(st.Connector.State)
	for _, t := range st.Tasks {
		s += " " + string(t.State)
	}
	return s
}

func running(w *Worker, name string, tasks int) func() bool {
	return func() bool {
		st, err := w.ConnectorStatus(context.Background(), name)
		return err == nil && states(st) == "RUNNING"+strings.Repeat(" RUNNING", tasks)
	}
}

// TestRestartConnectorIsAsynchronous: with includeTasks the answer shows
// what restarts as RESTARTING (KIP-745) and the restart happens after it;
// a plain restart restarts the runtime whole before it returns.
func TestRestartConnectorIsAsynchronous(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	cfg := baseConfig()
	cfg["gen.count"] = "0"
	if _, err := w.CreateConnector(ctx, "c", cfg, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running", running(w, "c", 2))

	// Nothing FAILED: onlyFailed restarts nothing.
	starts := fp.starts.Load()
	st, err := w.RestartConnector(ctx, "c", true, true)
	if err != nil || states(st) != "RUNNING RUNNING RUNNING" {
		t.Fatalf("restart?includeTasks&onlyFailed with nothing failed: %s %v", states(st), err)
	}
	if fp.starts.Load() != starts {
		t.Fatalf("restart?includeTasks&onlyFailed with nothing failed started processes")
	}

	// includeTasks: connector and every task RESTARTING, then RUNNING again.
	st, err = w.RestartConnector(ctx, "c", true, false)
	if err != nil || states(st) != "RESTARTING RESTARTING RESTARTING" {
		t.Fatalf("restart?includeTasks answered %s %v, want RESTARTING RESTARTING RESTARTING", states(st), err)
	}
	waitFor(t, "running after the restart", running(w, "c", 2))
	if fp.starts.Load() <= starts {
		t.Fatalf("restart?includeTasks started no process")
	}

	// Plain: the runtime restarts whole before the call returns.
	starts = fp.starts.Load()
	st, err = w.RestartConnector(ctx, "c", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if fp.starts.Load() <= starts {
		t.Fatalf("a plain restart of a healthy connector restarted nothing (status %s)", states(st))
	}
	waitFor(t, "running after the plain restart", running(w, "c", 2))
}

// TestRestartOnlyFailedTasks: includeTasks&onlyFailed restarts the FAILED
// task in place and shows only it RESTARTING.
func TestRestartOnlyFailedTasks(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	cfg := baseConfig()
	cfg["gen.count"] = "0"
	cfg["errors.retry.timeout"] = "0" // the restart here is manual
	fp.failTask.Store(1)
	if _, err := w.CreateConnector(ctx, "c", cfg, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "task 1 FAILED", func() bool {
		st, _ := w.ConnectorStatus(context.Background(), "c")
		return states(st) == "RUNNING RUNNING FAILED"
	})
	fp.failTask.Store(-1)
	starts := fp.starts.Load()
	st, err := w.RestartConnector(ctx, "c", true, true)
	if err != nil || states(st) != "RUNNING RUNNING RESTARTING" {
		t.Fatalf("restart?includeTasks&onlyFailed answered %s %v, want RUNNING RUNNING RESTARTING", states(st), err)
	}
	waitFor(t, "task 1 running again", running(w, "c", 2))
	if fp.starts.Load() != starts {
		t.Errorf("an in-place task restart started %d processes", fp.starts.Load()-starts)
	}
}

// TestOffsetsInKafkaShapeForKafkaSources: Connect's kafka_topic,
// kafka_partition and kafka_offset only for a source that reads Kafka.
func TestOffsetsInKafkaShapeForKafkaSources(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	cfg := baseConfig()
	cfg["source"] = "kafka"
	cfg["kafka.bootstrap.servers"] = "k:9092"
	if _, err := w.CreateConnector(ctx, "k", cfg, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "end of input", endOfInput(w, "k"))
	offs, err := w.Offsets(ctx, "k")
	if err != nil || len(offs) != 2 {
		t.Fatalf("offsets %+v %v", offs, err)
	}
	if offs[1].Partition["kafka_topic"] != "t" || offs[1].Partition["kafka_partition"] != int32(1) || offs[1].Offset["kafka_offset"] != int64(100) {
		t.Fatalf("offset entry of a kafka source %+v", offs[1])
	}
	if err := w.Stop(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// Either shape is understood when altering.
	if err := w.AlterOffsets(ctx, "k", []Offset{{Partition: map[string]any{"partition": "t/0"}, Offset: map[string]any{"position": float64(7)}}}); err != nil {
		t.Fatal(err)
	}
	if offs, _ := w.Offsets(ctx, "k"); offs[0].Offset["kafka_offset"] != int64(7) {
		t.Fatalf("offsets after alter %+v", offs)
	}
}

// TestRequestWaitingForAnotherOperationEndsWithItsCtx: a request queued
// behind another operation on the same connector (here a PUT whose
// validation hangs) returns its ctx's error when that ctx ends, instead
// of waiting for the other operation; the connector is left as it was.
// Before requests carried their ctx, each of them waited for the PUT.
func TestRequestWaitingForAnotherOperationEndsWithItsCtx(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	if _, err := w.CreateConnector(ctx, "c", baseConfig(), StateStopped); err != nil {
		t.Fatal(err)
	}
	fp.badIn, fp.badGate = make(chan struct{}), make(chan struct{})
	bad := baseConfig()
	bad["tbl.path"] = "bad"
	putErr := make(chan error, 1)
	go func() {
		_, _, err := w.PutConnectorConfig(ctx, "c", bad)
		putErr <- err
	}()
	<-fp.badIn // the PUT holds the connector's operation lock

	ops := map[string]func(context.Context) error{
		"resume":  func(ctx context.Context) error { return w.Resume(ctx, "c") },
		"delete":  func(ctx context.Context) error { return w.DeleteConnector(ctx, "c") },
		"restart": func(ctx context.Context) error { return w.RestartTask(ctx, "c", 0) },
		"reset offsets": func(ctx context.Context) error {
			return w.ResetOffsets(ctx, "c")
		},
		"patch": func(ctx context.Context) error {
			_, err := w.PatchConnectorConfig(ctx, "c", map[string]*string{"gen.count": nil})
			return err
		},
	}
	for name, op := range ops {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		errc := make(chan error, 1)
		go func() { errc <- op(rctx) }()
		select {
		case err := <-errc:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s whose ctx ended while another operation ran: %v, want context.DeadlineExceeded", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s still waits for the other operation 10 s after its ctx ended", name)
		}
		cancel()
	}
	close(fp.badGate)
	var ve *ValidationError
	if err := <-putErr; !errors.As(err, &ve) {
		t.Fatalf("the PUT that held the lock: %v, want its validation error", err)
	}
	st, err := w.ConnectorStatus(ctx, "c")
	if err != nil || st.Connector.State != StateStopped {
		t.Fatalf("after the cancelled requests: %+v %v, want the connector STOPPED as before", st, err)
	}
	if _, err := w.Topics(ctx, "c"); err != nil {
		t.Fatal(err)
	}
}

// A PUT of the config a running connector already has (a standalone
// restart reads its connector file after restoring the connector from
// the data dir) restarts nothing; a changed config restarts it.
func TestPutOfTheSameConfigRestartsNothing(t *testing.T) {
	fp := newFakePlugins()
	w := newWorker(t, fp, t.TempDir())
	ctx := context.Background()
	cfg := baseConfig()
	cfg["gen.count"] = "0"
	if _, err := w.CreateConnector(ctx, "c", cfg, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running", running(w, "c", 2))
	starts := fp.starts.Load()
	if _, _, err := w.PutConnectorConfig(ctx, "c", cfg); err != nil {
		t.Fatal(err)
	}
	if n := fp.starts.Load() - starts; n != 0 {
		t.Fatalf("a PUT of the same config started %d plugin processes, want none", n)
	}
	if st, err := w.ConnectorStatus(ctx, "c"); err != nil || states(st) != "RUNNING RUNNING RUNNING" {
		t.Fatalf("after the PUT: %s %v", states(st), err)
	}
	cfg["commit.interval.ms"] = "30"
	if _, _, err := w.PutConnectorConfig(ctx, "c", cfg); err != nil {
		t.Fatal(err)
	}
	if fp.starts.Load() <= starts {
		t.Fatal("a changed config restarted nothing")
	}
	waitFor(t, "running after the change", running(w, "c", 2))
}

// TestPluginTransport: plugin.transport.tls reaches every plugin process
// the worker starts, and its absence starts them without TLS.
func TestPluginTransport(t *testing.T) {
	for _, tls := range []bool{false, true} {
		fp := newFakePlugins()
		w, err := New(context.Background(), Config{DataDir: t.TempDir(), WorkerID: "w1", PluginTLS: tls}, Deps{
			Plugins: fp,
			Tuning:  runtime.Tuning{ReadPoll: 10 * time.Millisecond, CloseTimeout: time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		cfg := baseConfig()
		cfg["gen.count"] = "0"
		if _, err := w.CreateConnector(context.Background(), "c", cfg, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "running", running(w, "c", 2))
		starts, withTLS := fp.starts.Load(), fp.tlsStarts.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = w.Close(ctx)
		cancel()
		if starts == 0 {
			t.Fatalf("tls=%v: no process started", tls)
		}
		if want := map[bool]int64{false: 0, true: starts}[tls]; withTLS != want {
			t.Errorf("plugin.transport.tls=%v: %d of %d starts asked for TLS, want %d", tls, withTLS, starts, want)
		}
	}
}

// TestMemoryBudget: memory.max.bytes, less the host's part, is shared
// among the connectors the worker runs; each sink learns its process's
// part as floe.memory.bytes.
func TestMemoryBudget(t *testing.T) {
	// The worker sets this process's GOMEMLIMIT to the host's part.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	fp := newFakePlugins()
	w, err := New(context.Background(), Config{DataDir: t.TempDir(), WorkerID: "w1", MemoryMaxBytes: 1 << 30}, Deps{
		Plugins: fp,
		Tuning:  runtime.Tuning{ReadPoll: 10 * time.Millisecond, CloseTimeout: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Close(ctx)
	}()
	sinkShare := func(i int) int64 {
		fp.mu.Lock()
		defer fp.mu.Unlock()
		if len(fp.sinkCfgs) <= i {
			return -1
		}
		n, _ := strconv.ParseInt(fp.sinkCfgs[i][sdk.KeyMemoryBytes], 10, 64)
		return n
	}
	for i, name := range []string{"a", "b"} {
		cfg := baseConfig()
		cfg["gen.count"] = "0"
		if _, err := w.CreateConnector(context.Background(), name, cfg, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+" running", running(w, name, 2))
		waitFor(t, name+"'s sink open", func() bool { return sinkShare(i) >= 0 })
	}
	first, second := sinkShare(0), sinkShare(1)
	perConnector := (1<<30 - hostMemory(1<<30))
	if first <= 0 || first >= int64(perConnector) {
		t.Fatalf("the first connector's sink got %d of the budget's %d for connectors", first, perConnector)
	}
	// A little under half: each plugin's binary pages come off a
	// connector's share before it is divided (runtime's binaryPages).
	if second < first*40/100 || second > first*50/100 {
		t.Errorf("with two connectors the second's sink got %d, the first's (alone) %d: want a little under half", second, first)
	}
}
