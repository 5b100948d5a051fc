package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// pyStep is one call connect_client.py made: its answer as the client
// returned it, or the HTTP status and text of the error it raised.
type pyStep struct {
	Step   string          `json:"step"`
	Call   string          `json:"call"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Status int             `json:"status"`
	Error  string          `json:"error"`
	// Seconds is how long a wait step polled.
	Seconds float64 `json:"seconds"`
}

// TestRESTConnectPy drives a real `floe standalone` with kafka-connect-py
// 1.0.0 (PyPI), a Kafka Connect client nobody here wrote, through
// e2e/readers/connect_client.py: every call of its connector API (list,
// create, get, config, update, status, tasks, pause, resume, stop,
// restart, task restart, topics, plugins, validate, delete) must succeed
// where Connect's would and return what Connect's would, as the client
// parses it. A status code the client does not expect, a body it cannot
// decode or a state that never comes fails the named step.
func TestRESTConnectPy(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Readers, harness.ConnectPy,
		harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 5*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{})

	name := "pyclient-orders"
	config := map[string]string{
		"connector.class":    "iceberg",
		"source":             "datagen",
		"datagen.rate":       "100",
		"tasks.max":          "2",
		"commit.interval.ms": "500",
		"iceberg.tables":     "pyclient.orders",
	}
	cfgFile := filepath.Join(t.TempDir(), "config.json")
	b, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	script := repoFile(t, env, "e2e/readers/connect_client.py")
	cmd := exec.CommandContext(ctx, env.Python, script, "--url", f.URL, "--name", name,
		"--config", cfgFile, "--plugin", "iceberg", "--timeout", "90")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("connect_client.py: %v\nstderr:\n%s", err, stderr.String())
	}
	var out struct{ Steps []pyStep }
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("connect_client.py's JSON: %v\n%s", err, stdout.String())
	}
	steps := map[string]pyStep{}
	for _, s := range out.Steps {
		steps[s.Step] = s
	}
	// result decodes a step's answer into v (nil: only check it ran); a
	// missing or failed step fails the test.
	result := func(step string, v any) bool {
		t.Helper()
		s, ok := steps[step]
		switch {
		case !ok:
			t.Errorf("step %s: not run (the script stopped early?)", step)
			return false
		case !s.OK:
			t.Errorf("step %s (%s): failed: HTTP %d: %s; last answer %s", step, s.Call, s.Status, s.Error, s.Result)
			return false
		case v == nil:
			return true
		}
		if err := json.Unmarshal(s.Result, v); err != nil {
			t.Errorf("step %s (%s): answer %s: %v", step, s.Call, s.Result, err)
			return false
		}
		return true
	}
	nullResult := func(step string) {
		t.Helper()
		if result(step, nil) && string(steps[step].Result) != "null" {
			t.Errorf("step %s (%s) returned %s; the client returns None for Connect's bodiless answer", step, steps[step].Call, steps[step].Result)
		}
	}
	t.Logf("connect_client.py made %d calls", len(out.Steps))

	var info struct{ Version, Commit string }
	if result("info", &info) && !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(info.Version) {
		t.Errorf("get_cluster_info version %q is not a Kafka X.Y.Z version", info.Version)
	}
	var names []string
	if result("list-before", &names) && len(names) != 0 {
		t.Errorf("list_connectors before create = %v, want []", names)
	}
	var created harness.ConnectorInfo
	if result("create", &created) && (created.Name != name || created.Config["iceberg.tables"] != "pyclient.orders") {
		t.Errorf("create_connector = %+v, want name %s with its config", created, name)
	}
	for _, step := range []string{"list", "list-pattern", "list-running"} {
		if result(step, &names) && !slices.Equal(names, []string{name}) {
			t.Errorf("step %s (%s) = %v, want [%s]", step, steps[step].Call, names, name)
		}
	}
	if result("list-pattern-none", &names) && len(names) != 0 {
		t.Errorf("list_connectors(pattern=^no-such-prefix) = %v, want []", names)
	}
	var expanded map[string]harness.ConnectorExpansion
	if result("list-status", &expanded) {
		if e, ok := expanded[name]; !ok || e.Status == nil || e.Status.Connector.State != "RUNNING" {
			t.Errorf("list_connectors(expand=status) = %s, want %s RUNNING", steps["list-status"].Result, name)
		}
	}
	if result("list-info", &expanded) {
		if e, ok := expanded[name]; !ok || e.Info == nil || e.Info.Config["source"] != "datagen" {
			t.Errorf("list_connectors(expand=info) = %s, want %s's config", steps["list-info"].Result, name)
		}
	}
	var got harness.ConnectorInfo
	if result("get", &got) && (got.Name != name || got.Type != "sink" || len(got.Tasks) != 2) {
		t.Errorf("get_connector = %+v, want %s, type sink, 2 tasks", got, name)
	}
	var cfg map[string]string
	if result("config", &cfg) {
		for k, v := range config {
			if cfg[k] != v {
				t.Errorf("get_connector_config[%s] = %q, want %q", k, cfg[k], v)
			}
		}
	}
	var st harness.ConnectorStatus
	if result("status", &st) && (st.Name != name || !st.Running() || len(st.Tasks) != 2) {
		t.Errorf("get_connector_status = %+v, want %s RUNNING with 2 tasks", st, name)
	}
	var tasks []harness.TaskInfo
	if result("tasks", &tasks) {
		if len(tasks) != 2 || tasks[0].ID.Connector != name || tasks[0].ID.Task != 0 || tasks[1].ID.Task != 1 {
			t.Errorf("list_connector_tasks = %+v, want tasks 0 and 1 of %s", tasks, name)
		}
	}
	var ts harness.TaskState
	if result("task-status", &ts) && (ts.ID != 0 || ts.State != "RUNNING" || ts.WorkerID == "") {
		t.Errorf("get_connector_task_status(0) = %+v, want task 0 RUNNING on a worker", ts)
	}
	if result("update", &got) && got.Config["datagen.rate"] != "101" {
		t.Errorf("update_connector = %+v, want datagen.rate 101", got)
	}
	if result("config-updated", &cfg) && cfg["datagen.rate"] != "101" {
		t.Errorf("get_connector_config after the update: datagen.rate = %q, want 101", cfg["datagen.rate"])
	}
	for _, step := range []string{"pause", "resume", "restart", "restart-task", "stop", "resume-stopped", "delete"} {
		nullResult(step)
	}
	if result("list-paused", &names) && !slices.Equal(names, []string{name}) {
		t.Errorf("list_connectors(state=paused) = %v, want [%s]", names, name)
	}
	// With includeTasks Connect answers 202 with the status, which the
	// client returns.
	if result("restart-tasks", &st) && (st.Name != name || len(st.Tasks) != 2) {
		t.Errorf("restart_connector(include_tasks=True) = %s, want %s's status with 2 tasks", steps["restart-tasks"].Result, name)
	}
	for _, step := range []string{"running", "running-updated", "paused", "resumed", "restarted", "restarted-tasks", "restarted-task", "stopped", "resumed-stopped"} {
		if result(step, &st) {
			t.Logf("step %s: %s after %.1f s", step, st.Connector.State, steps[step].Seconds)
		}
	}
	if result("stopped", &st) && len(st.Tasks) != 0 {
		t.Errorf("status of the STOPPED connector lists tasks %+v, want none (Connect's)", st.Tasks)
	}
	var topics map[string]struct {
		Topics []string `json:"topics"`
	}
	if result("topics", &topics) {
		if _, ok := topics[name]; !ok {
			t.Errorf("list_connector_topics = %s, want an object keyed by %s", steps["topics"].Result, name)
		}
	}
	var plugins []harness.PluginInfo
	if result("plugins", &plugins) && !hasPlugin(plugins, icebergClass, "sink") {
		t.Errorf("list_connector_plugins = %+v, want %s (sink)", plugins, icebergClass)
	}
	// errorKeys lists the keys a validate answer finds fault with.
	errorKeys := func(ci harness.ConfigInfos) []string {
		var out []string
		for _, c := range ci.Configs {
			if len(c.Value.Errors) > 0 {
				out = append(out, c.Value.Name)
			}
		}
		return out
	}
	var valid harness.ConfigInfos
	if result("validate", &valid) && (valid.ErrorCount != 0 || len(errorKeys(valid)) != 0) {
		t.Errorf("validate_connector_config of the running config: %d errors, on %v", valid.ErrorCount, errorKeys(valid))
	}
	valid = harness.ConfigInfos{}
	if result("validate-bad", &valid) && (valid.ErrorCount != 1 || !slices.Equal(errorKeys(valid), []string{"tasks.max"})) {
		t.Errorf("validate_connector_config with tasks.max=many: %d errors, on %v; want one, on tasks.max", valid.ErrorCount, errorKeys(valid))
	}
	if result("list-after", &names) && len(names) != 0 {
		t.Errorf("list_connectors after delete = %v, want []", names)
	}
	if s, ok := steps["get-deleted"]; !ok || s.OK || s.Status != 404 {
		t.Errorf("get_connector after delete = %+v, want HTTP 404", s)
	}
	if len(out.Steps) != len(steps) {
		t.Errorf("connect_client.py repeats step names (%d calls, %d names)", len(out.Steps), len(steps))
	}
}
