package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pluginsBuilt records that testPlugins ran (so TestMain does not build
// the plugin only to remove it).
var pluginsBuilt bool

// testPlugins builds testdata/clitest once into a plugin folder and
// returns the folder.
var testPlugins = sync.OnceValues(func() (string, error) {
	pluginsBuilt = true
	dir, err := os.MkdirTemp("", "floe-cli-plugins-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "floe-plugin-clitest"), "./testdata/clitest").CombinedOutput()
	if err != nil {
		return "", &buildError{string(out), err}
	}
	return dir, nil
})

// TestMain removes the test plugin's folder after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := testPlugins(); err == nil && pluginsBuilt {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func pluginDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a plugin binary; skipped with -short")
	}
	dir, err := testPlugins()
	if err != nil {
		t.Fatalf("build the test plugin: %v", err)
	}
	return dir
}

func TestPluginsList(t *testing.T) {
	dir := pluginDir(t)
	r := runApp(t, nil, "plugins", "--plugin-path", dir)
	r.wants(t, 0, []string{"KIND", "BINARY", "source", "test-source (org.example.TestSource)", "0.0.1", "maintenance", "test-maintenance", "1.2.3",
		filepath.Join(dir, "floe-plugin-clitest"), "floe plugins describe"}, nil)
	if strings.Index(r.stdout, "test-source") > strings.Index(r.stdout, "test-maintenance") {
		t.Errorf("not in pipeline order:\n%s", r.stdout)
	}

	r = runApp(t, nil, "plugins", "list", "--json", "--plugin-path", dir)
	r.wants(t, 0, nil, nil)
	var list []PluginListing
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(list) != 4 || list[0].Kind != "source" || list[0].Binary == "" || list[3].Name != "test-maintenance" {
		t.Errorf("list = %+v", list)
	}

	// Problems are reported, the rest still listed.
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "floe-plugin-broken"), []byte("#!/bin/sh\necho nope >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runApp(t, nil, "plugins", "--plugin-path", dir+","+broken)
	r.wants(t, 0, []string{"test-source"}, []string{"plugin problem", "floe-plugin-broken", "skipped"})
	if n := strings.Count(r.stderr, "floe-plugin-broken"); n != 1 {
		t.Errorf("the broken plugin is reported %d times, want once:\n%s", n, r.stderr)
	}

	runApp(t, nil, "plugins", "--plugin-path", t.TempDir()).wants(t, 1, nil, []string{"no plugins found", "make build", "--plugin-path"})
	runApp(t, nil, "plugins", "frobnicate").wants(t, 2, nil, []string{`unknown subcommand "frobnicate"`})
	runApp(t, nil, "plugins", "describe", "x", "--kind", "gadget", "--plugin-path", dir).wants(t, 2, nil, []string{"--kind"})
}

func TestPluginsDescribe(t *testing.T) {
	dir := pluginDir(t)
	r := runApp(t, nil, "plugins", "describe", "test-source", "--plugin-path", dir)
	r.wants(t, 0, []string{"source test-source 0.0.1", "also known as org.example.TestSource", "declares keys",
		"test.topic  (STRING; required)", "topic to read",
		`test.batch  (INT; default "500")`, "records per batch",
		"test.secret  (PASSWORD; optional; secret)",
		"test.client.*  (STRING; optional; any key with this prefix)"}, nil)

	r = runApp(t, nil, "plugins", "describe", "org.example.TestSource", "--json", "--plugin-path", dir)
	var desc []PluginDescription
	if err := json.Unmarshal([]byte(r.stdout), &desc); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(desc) != 1 || len(desc[0].Keys) != 4 || desc[0].Keys[1].Default == nil || *desc[0].Keys[1].Default != "500" || !desc[0].Keys[2].Secret {
		t.Errorf("describe --json = %+v", desc)
	}

	runApp(t, nil, "plugins", "describe", "test-sourc", "--plugin-path", dir).
		wants(t, 1, nil, []string{`no plugin component named "test-sourc"`, `did you mean "test-source"`, "floe plugins"})
	runApp(t, nil, "plugins", "describe", "test-source", "--kind", "sink", "--plugin-path", dir).wants(t, 1, nil, []string{"no plugin component"})
	runApp(t, nil, "plugins", "describe", "host").wants(t, 0, []string{"tasks.max", "commit.interval.ms", "errors.tolerance"}, nil)
	runApp(t, nil, "plugins", "describe").wants(t, 2, nil, []string{"missing the component name"})
}

// validateSetup writes a worker config over the test plugin and a
// connector file.
func validateSetup(t *testing.T, connector string) (workerFile, connFile string) {
	t.Helper()
	dir := pluginDir(t)
	tmp := t.TempDir()
	workerFile = filepath.Join(tmp, "worker.json")
	data, _ := json.Marshal(map[string]string{"plugin.path": dir, "data.dir": filepath.Join(tmp, "data")})
	if err := os.WriteFile(workerFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	connFile = filepath.Join(tmp, "c.json")
	if err := os.WriteFile(connFile, []byte(connector), 0o644); err != nil {
		t.Fatal(err)
	}
	return workerFile, connFile
}

func TestValidate(t *testing.T) {
	wf, cf := validateSetup(t, `{"name": "c", "config": {"connector.class": "test-sink", "source": "test-source",
		"partitioner": "test-partitioner", "test.table": "t", "test.topic": "x", "test.sink.password": "pw",
		"test.client.url": "http://u:s3cr3t@h/"}}`)
	r := runApp(t, nil, "validate", wf, cf)
	r.wants(t, 0, []string{"connector c is valid", `✓ test.table = "t"`, "✓ test.sink.password = [hidden]", `test.client.url = "http://u:[hidden]@h/"`}, nil)
	if strings.Contains(r.stdout, `"pw"`) || strings.Contains(r.stdout, "s3cr3t") {
		t.Errorf("secret printed: %s", r.stdout)
	}

	wf, cf = validateSetup(t, `{"name": "c", "config": {"connector.class": "test-sink", "source": "test-source",
		"partitioner": "test-partitioner", "test.batch": "0", "test.tabel": "t", "tasks.max": "many"}}`)
	r = runApp(t, nil, "validate", wf, cf)
	r.wants(t, 1, []string{"error(s)", "✗ test.batch", "✗ test.table", "missing required", "✗ test.tabel", "unknown configuration",
		`did you mean "test.table"`, "✗ tasks.max", "✗ test.topic"}, []string{"has", "config error(s)", "fix the keys"})

	r = runApp(t, nil, "validate", wf, cf, "--json")
	var infos struct {
		ErrorCount int `json:"error_count"`
		Configs    []struct {
			Value struct {
				Name   string   `json:"name"`
				Errors []string `json:"errors"`
			} `json:"value"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &infos); err != nil || infos.ErrorCount < 4 {
		t.Errorf("--json: %v %+v\n%s", err, infos, r.stdout)
	}
	runApp(t, nil, "validate", wf).wants(t, 2, nil, []string{"missing the worker config and the connector file"})
}

func TestMaintain(t *testing.T) {
	wf, cf := validateSetup(t, `{"name": "orders", "config": {"connector.class": "test-sink", "source": "test-source",
		"maintenance": "test-maintenance", "test.next": "50"}}`)
	r := runApp(t, nil, "maintain", cf, "--once", "--worker", wf)
	r.wants(t, 0, []string{"cycle 1", "1 run(s)", "demo.orders rewrite-data-files (data-file-count 120 >= 50): ok", "files 120 → 1",
		"120.0 MiB → 118.0 MiB", "connector orders"}, nil)
	if !strings.Contains(r.stdout, filepath.Join(filepath.Dir(wf), "data")) {
		t.Errorf("the plugin did not get the worker's data dir: %s", r.stdout)
	}

	r = runApp(t, nil, "maintain", cf, "--once", "--dry-run", "--force", "rewrite-data-files", "--json", "--worker", wf)
	r.wants(t, 0, []string{`"trigger":"forced"`, "dry run"}, nil)
	var rep CycleReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Cycle != 1 || len(rep.Runs) != 1 || rep.NextMs != 50 {
		t.Errorf("--json: %v %+v", err, rep)
	}

	// Looping: cycles until the signal.
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	r = runAppCtx(t, ctx, nil, "maintain", cf, "--worker", wf)
	r.wants(t, 0, []string{"cycle 1", "cycle 2"}, nil)

	_, failing := validateSetup(t, `{"name": "orders", "config": {"connector.class": "s", "source": "x", "maintenance": "test-maintenance", "test.fail": "run"}}`)
	runApp(t, nil, "maintain", failing, "--once", "--worker", wf).
		wants(t, 1, []string{"FAILED: commit conflict"}, []string{"1 maintenance failure(s) for connector orders"})
	_, failing = validateSetup(t, `{"name": "orders", "config": {"connector.class": "s", "source": "x", "maintenance": "test-maintenance", "test.fail": "cycle"}}`)
	runApp(t, nil, "maintain", failing, "--once", "--worker", wf).
		wants(t, 1, []string{"nothing was due"}, []string{"cycle 1 failed", "catalog unreachable"})

	_, none := validateSetup(t, `{"name": "orders", "config": {"source": "x"}}`)
	runApp(t, nil, "maintain", none, "--once", "--worker", wf).wants(t, 1, nil, []string{"names no maintenance plugin", `"maintenance": "iceberg-maintenance"`})
	_, unknown := validateSetup(t, `{"name": "orders", "config": {"connector.class": "s", "source": "x", "maintenance": "nope"}}`)
	runApp(t, nil, "maintain", unknown, "--once", "--worker", wf).wants(t, 1, nil, []string{"start maintenance plugin nope", "unknown maintenance plugin"})
	_, badLimits := validateSetup(t, `{"name": "orders", "config": {"connector.class": "s", "source": "x", "maintenance": "test-maintenance", "tasks.max": "lots"}}`)
	runApp(t, nil, "maintain", badLimits, "--once", "--worker", wf).wants(t, 1, nil, []string{"tasks.max"})
}

// TestStandaloneRealWorker runs the real worker over the test plugin: the
// connector validates, starts, and fails in its source's Open, and
// --exit-when-done reports the task's trace.
func TestStandaloneRealWorker(t *testing.T) {
	dir := pluginDir(t)
	tmp := t.TempDir()
	workerFile := filepath.Join(tmp, "worker.json")
	data, _ := json.Marshal(map[string]string{"listeners": "http://127.0.0.1:0", "plugin.path": dir,
		"data.dir": filepath.Join(tmp, "data"), "config.dir": filepath.Join(tmp, "connectors")})
	if err := os.WriteFile(workerFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	conn := filepath.Join(tmp, "c.json")
	if err := os.WriteFile(conn, []byte(`{"name": "c", "config": {"connector.class": "test-sink", "source": "test-source",
		"partitioner": "test-partitioner", "test.table": "t", "test.topic": "x", "plugin.restart.max.attempts": "1", "plugin.restart.backoff.ms": "10"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := runAppCtx(t, ctx, nil, "standalone", workerFile, conn, "--exit-when-done")
	r.wants(t, 1, nil, []string{"connector c FAILED", "test-sink writes nothing"})

	bad := filepath.Join(tmp, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"name": "bad", "config": {"connector.class": "test-sink", "source": "test-source", "partitioner": "test-partitioner"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runAppCtx(t, ctx, nil, "standalone", workerFile, bad).wants(t, 1, nil, []string{"bad.json", "connector bad is not valid", "test.table", "test.topic"})
}
