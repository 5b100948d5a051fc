package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestStandaloneRESTLikeConnect drives a real `floe standalone` through
// Kafka Connect's REST API, the way Connect's tools and scripts do, and
// checks status codes, document shapes and behaviour: create, read,
// replace, patch and delete connectors; status; pause, resume, stop and
// the restarts; tasks; offsets (read after a commit, changed only when
// STOPPED); plugins and their configs; validation with per-key errors;
// error bodies; /metrics. No answer may contain a secret's value.
func TestStandaloneRESTLikeConnect(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 8*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{})
	api := f.API

	secret := harness.UniqueName("e2e-secret-value")
	var mu sync.Mutex
	var leaks []string
	api.Observe = func(method, path string, r *harness.Response) {
		if strings.Contains(string(r.Body), secret) {
			mu.Lock()
			leaks = append(leaks, method+" "+path)
			mu.Unlock()
		}
	}
	t.Cleanup(func() {
		if len(leaks) > 0 {
			t.Errorf("the secret value of iceberg.catalog.jdbc.password was returned by: %v", leaks)
		}
	})

	name := "rest-orders"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":               "iceberg",
		"source":                        "datagen",
		"datagen.rate":                  "400",
		"tasks.max":                     "2",
		"commit.interval.ms":            "1000",
		"iceberg.tables":                "rest.orders",
		"iceberg.catalog.jdbc.password": secret,
	}}

	t.Run("server info and health", func(t *testing.T) {
		var info map[string]any
		mustDecode(t, mustDo(t, api, ctx, "GET", "/", nil, http.StatusOK), &info)
		for _, k := range []string{"version", "commit", "kafka_cluster_id"} {
			if _, ok := info[k]; !ok {
				t.Errorf("GET / lacks %q: %v", k, info)
			}
		}
		if v, _ := info["version"].(string); v == "" {
			t.Errorf("GET / has an empty version: %v", info)
		}
		var h map[string]any
		mustDecode(t, mustDo(t, api, ctx, "GET", "/health", nil, http.StatusOK), &h)
		if h["status"] != "healthy" || h["message"] == "" {
			t.Errorf("GET /health = %v, want status healthy and a message", h)
		}
	})

	t.Run("no connectors yet", func(t *testing.T) {
		r := mustDo(t, api, ctx, "GET", "/connectors", nil, http.StatusOK)
		if got := strings.TrimSpace(string(r.Body)); got != "[]" {
			t.Errorf("GET /connectors on a new worker = %s, want []", got)
		}
	})

	t.Run("create", func(t *testing.T) {
		r := mustDo(t, api, ctx, "POST", "/connectors", conn, http.StatusCreated)
		if loc := r.Header.Get("Location"); !strings.HasSuffix(loc, "/connectors/"+name) {
			t.Errorf("POST /connectors: Location %q, want …/connectors/%s", loc, name)
		}
		var info harness.ConnectorInfo
		mustDecode(t, r, &info)
		checkInfo(t, info, name, 2)
		if got := info.Config["iceberg.catalog.jdbc.password"]; got == "" {
			t.Errorf("POST answer's config lacks the secret key (it should be there, masked)")
		}
	})

	t.Run("create again conflicts", func(t *testing.T) {
		_, err := api.CreateConnector(ctx, conn)
		expectError(t, err, http.StatusConflict, name)
	})

	t.Run("create with a bad body", func(t *testing.T) {
		r, err := api.Do(ctx, "POST", "/connectors", `{"name": "x", "config": {`)
		if err != nil {
			t.Fatal(err)
		}
		expectErrorResponse(t, "POST /connectors with truncated JSON", r, http.StatusBadRequest, "")
		r, _ = api.Do(ctx, "POST", "/connectors", map[string]any{"config": conn.Config})
		expectErrorResponse(t, "POST /connectors without a name", r, http.StatusBadRequest, "name")
		names, err := api.Connectors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{name}) {
			t.Errorf("after failed creates, GET /connectors = %v, want [%s]", names, name)
		}
	})

	t.Run("status", func(t *testing.T) {
		st := f.WaitStatus(ctx, name, "connector and 2 tasks RUNNING", false, func(s harness.ConnectorStatus) bool {
			return s.Running() && len(s.Tasks) == 2
		})
		if st.Name != name || st.Type != "sink" || st.Connector.WorkerID == "" {
			t.Errorf("status: name %q type %q worker_id %q, want %s, sink, non-empty", st.Name, st.Type, st.Connector.WorkerID, name)
		}
		for i, task := range st.Tasks {
			if task.ID != i || task.WorkerID != st.Connector.WorkerID {
				t.Errorf("status task %d: %+v, want id %d on worker %s", i, task, i, st.Connector.WorkerID)
			}
		}
	})

	t.Run("expand status and info", func(t *testing.T) {
		exp, err := api.ConnectorsExpanded(ctx, "status", "info")
		if err != nil {
			t.Fatal(err)
		}
		e, ok := exp[name]
		if !ok || e.Status == nil || e.Info == nil {
			t.Fatalf("GET /connectors?expand=status&expand=info = %+v, want %s with status and info", exp, name)
		}
		if e.Status.Connector.State != "RUNNING" || e.Info.Name != name {
			t.Errorf("expanded: state %s, info name %s", e.Status.Connector.State, e.Info.Name)
		}
	})

	t.Run("get connector and config", func(t *testing.T) {
		info, err := api.Connector(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		checkInfo(t, info, name, 2)
		cfg, err := api.Config(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range conn.Config {
			if k == "iceberg.catalog.jdbc.password" {
				continue
			}
			if cfg[k] != v {
				t.Errorf("GET config: %s = %q, want %q", k, cfg[k], v)
			}
		}
		if cfg["name"] != name {
			t.Errorf("GET config: name = %q, want %q (Connect keeps the name in the config)", cfg["name"], name)
		}
	})

	t.Run("tasks", func(t *testing.T) {
		tasks, err := api.Tasks(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) != 2 {
			t.Fatalf("GET tasks: %d tasks, want 2: %+v", len(tasks), tasks)
		}
		for i, task := range tasks {
			if task.ID != (harness.TaskID{Connector: name, Task: i}) || task.Config["connector.class"] != "iceberg" {
				t.Errorf("GET tasks[%d] = %+v", i, task)
			}
		}
		ts, err := api.TaskStatus(ctx, name, 1)
		if err != nil {
			t.Fatal(err)
		}
		if ts.ID != 1 || ts.State != "RUNNING" || ts.WorkerID == "" {
			t.Errorf("GET tasks/1/status = %+v, want id 1 RUNNING with a worker", ts)
		}
		_, err = api.TaskStatus(ctx, name, 7)
		expectError(t, err, http.StatusNotFound, "")
		r, _ := api.Do(ctx, "GET", "/connectors/"+name+"/tasks/x/status", nil)
		expectErrorResponse(t, "GET tasks/x/status", r, http.StatusNotFound, "")
	})

	t.Run("offsets after a commit", func(t *testing.T) {
		st := f.WaitStatus(ctx, name, "a commit", false, func(s harness.ConnectorStatus) bool {
			return s.Floe != nil && s.Floe.Commits >= 2
		})
		offs, err := api.Offsets(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		checkDatagenOffsets(t, offs, 2)
		total := int64(0)
		for _, o := range offs.Offsets {
			total += offsetValue(t, o)
		}
		if total <= 0 {
			t.Errorf("offsets after %d commits sum to %d, want > 0: %+v", st.Floe.Commits, total, offs)
		}
		later, err := api.Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if later.Floe != nil && total > later.Floe.RecordsIn {
			t.Errorf("offsets sum to %d, more than the %d records read", total, later.Floe.RecordsIn)
		}
		err = api.AlterOffsets(ctx, name, offs)
		expectError(t, err, http.StatusBadRequest, "STOPPED")
	})

	t.Run("put config", func(t *testing.T) {
		changed := maps.Clone(conn.Config)
		changed["datagen.rate"] = "300"
		changed["iceberg.catalog.jdbc.password"] = "[hidden]" // what a GET gave: keeps the secret
		info, created, err := api.PutConfig(ctx, name, changed)
		if err != nil {
			t.Fatal(err)
		}
		if created || info.Config["datagen.rate"] != "300" {
			t.Errorf("PUT config of an existing connector: created=%v rate=%q, want 200 and 300", created, info.Config["datagen.rate"])
		}
		other := harness.UniqueName("rest-put")
		cfg := maps.Clone(conn.Config)
		cfg["iceberg.tables"] = "rest.put"
		_, created, err = api.PutConfig(ctx, other, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !created {
			t.Errorf("PUT config of a new connector answered 200, want 201 Created")
		}
		if err := api.DeleteConnector(ctx, other); err != nil {
			t.Fatal(err)
		}
		cfg["name"] = "another-name"
		_, _, err = api.PutConfig(ctx, other, cfg)
		expectError(t, err, http.StatusBadRequest, "")
	})

	t.Run("patch config", func(t *testing.T) {
		card := "500"
		info, err := api.PatchConfig(ctx, name, map[string]*string{"datagen.key.cardinality": &card})
		if err != nil {
			t.Fatal(err)
		}
		if info.Config["datagen.key.cardinality"] != "500" || info.Config["datagen.rate"] != "300" {
			t.Errorf("PATCH merged config = %v, want cardinality 500 and the rest kept", info.Config)
		}
		info, err = api.PatchConfig(ctx, name, map[string]*string{"datagen.key.cardinality": nil})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := info.Config["datagen.key.cardinality"]; ok {
			t.Errorf("PATCH with null did not remove the key: %v", info.Config)
		}
		f.WaitStatus(ctx, name, "RUNNING after the config changes", false, harness.ConnectorStatus.Running)
	})

	t.Run("pause and resume", func(t *testing.T) {
		if err := api.Pause(ctx, name); err != nil {
			t.Fatal(err)
		}
		f.WaitStatus(ctx, name, "PAUSED", false, func(s harness.ConnectorStatus) bool {
			return s.Connector.State == "PAUSED" && allTasks(s, "PAUSED")
		})
		// A read already under way when the pause came may still finish;
		// after a second nothing more may be read.
		time.Sleep(time.Second)
		before := recordsIn(t, api, ctx, name)
		time.Sleep(2 * time.Second)
		if after := recordsIn(t, api, ctx, name); after != before {
			t.Errorf("a PAUSED connector read %d records between 1 s and 3 s after its pause (datagen.rate 300)", after-before)
		}
		if err := api.Resume(ctx, name); err != nil {
			t.Fatal(err)
		}
		f.WaitStatus(ctx, name, "RUNNING and reading after resume", false, func(s harness.ConnectorStatus) bool {
			return s.Running() && s.Floe != nil && s.Floe.RecordsIn > before
		})
	})

	t.Run("restart", func(t *testing.T) {
		code, st, err := api.Restart(ctx, name, false, false)
		if err != nil || code != http.StatusNoContent || st != nil {
			t.Errorf("POST restart: %d %v %v, want 204 without a body", code, st, err)
		}
		f.WaitStatus(ctx, name, "RUNNING", false, harness.ConnectorStatus.Running)

		code, st, err = api.Restart(ctx, name, true, true)
		if err != nil || code != http.StatusAccepted || st == nil {
			t.Fatalf("POST restart?includeTasks=true&onlyFailed=true: %d %v %v, want 202 with the status", code, st, err)
		}
		if restarting(*st) {
			t.Errorf("restart?includeTasks&onlyFailed with nothing FAILED marked instances RESTARTING: %s", st.Summary())
		}

		if err := api.RestartTask(ctx, name, 0); err != nil {
			t.Errorf("POST tasks/0/restart: %v, want 204", err)
		}
		expectError(t, api.RestartTask(ctx, name, 9), http.StatusNotFound, "")
		f.WaitStatus(ctx, name, "RUNNING after the task restart", false, harness.ConnectorStatus.Running)
	})

	t.Run("restart with includeTasks answers RESTARTING", func(t *testing.T) {
		code, st, err := api.Restart(ctx, name, true, false)
		if err != nil || code != http.StatusAccepted || st == nil {
			t.Fatalf("POST restart?includeTasks=true: %d %v %v, want 202 with the status", code, st, err)
		}
		// KIP-745: the answer shows the connector and the tasks that will
		// restart as RESTARTING.
		if st.Connector.State != "RESTARTING" || !allTasks(*st, "RESTARTING") {
			t.Errorf("POST restart?includeTasks=true answered %s; Connect (KIP-745) marks the connector and every task RESTARTING", st.Summary())
		}
		f.WaitStatus(ctx, name, "RUNNING after restart", false, harness.ConnectorStatus.Running)
	})

	t.Run("stop, offsets, resume", func(t *testing.T) {
		if err := api.StopConnector(ctx, name); err != nil {
			t.Fatal(err)
		}
		st := f.WaitStatus(ctx, name, "STOPPED", false, func(s harness.ConnectorStatus) bool { return s.Connector.State == "STOPPED" })
		if len(st.Tasks) != 0 {
			t.Errorf("a STOPPED connector lists tasks: %s (Connect: none)", st.Summary())
		}
		offs, err := api.Offsets(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		checkDatagenOffsets(t, offs, 2)
		moved := harness.Offsets{Offsets: []harness.Offset{{Partition: offs.Offsets[0].Partition, Offset: map[string]any{"position": 5}}}}
		if err := api.AlterOffsets(ctx, name, moved); err != nil {
			t.Fatalf("PATCH offsets of a STOPPED connector: %v", err)
		}
		after, err := api.Offsets(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		checkDatagenOffsets(t, after, 2)
		if got := offsetValue(t, after.Offsets[0]); got != 5 {
			t.Errorf("after PATCH offsets to 5, GET offsets says %d for %v", got, after.Offsets[0].Partition)
		}
		if err := api.Resume(ctx, name); err != nil {
			t.Fatal(err)
		}
		f.WaitStatus(ctx, name, "RUNNING after stop and resume", false, harness.ConnectorStatus.Running)
	})

	t.Run("topics", func(t *testing.T) {
		topics, err := api.Topics(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(topics) == 0 {
			t.Errorf("GET topics of a running connector is empty")
		}
		mustDo(t, api, ctx, "PUT", "/connectors/"+name+"/topics/reset", nil, http.StatusAccepted)
	})

	t.Run("connector plugins", func(t *testing.T) {
		plugins, err := api.Plugins(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if !hasPlugin(plugins, icebergClass, "sink") || !hasPlugin(plugins, "datagen", "source") {
			t.Errorf("GET /connector-plugins = %+v, want the iceberg sink and the datagen source", plugins)
		}
		for _, p := range plugins {
			if p.Type != "source" && p.Type != "sink" {
				t.Errorf("GET /connector-plugins lists %s of type %s; connectorsOnly (the default) keeps sources and sinks", p.Class, p.Type)
			}
		}
		all, err := api.Plugins(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if !hasPlugin(all, "hash", "partitioner") || len(all) <= len(plugins) {
			t.Errorf("GET /connector-plugins?connectorsOnly=false = %+v, want the partitioners too", all)
		}
		defs, err := api.PluginConfig(ctx, "iceberg")
		if err != nil {
			t.Fatal(err)
		}
		if !hasDef(defs, "iceberg.tables") || !hasDef(defs, "iceberg.catalog.uri") {
			t.Errorf("GET /connector-plugins/iceberg/config lacks iceberg.tables or iceberg.catalog.uri (%d keys)", len(defs))
		}
		defs, err = api.PluginConfig(ctx, "datagen")
		if err != nil {
			t.Fatal(err)
		}
		if !hasDef(defs, "datagen.rate") {
			t.Errorf("GET /connector-plugins/datagen/config lacks datagen.rate")
		}
		_, err = api.PluginConfig(ctx, "no-such-plugin")
		expectError(t, err, http.StatusNotFound, "")
	})

	t.Run("validate reports each key", func(t *testing.T) {
		bad := map[string]string{
			"name":                          "invalid",
			"connector.class":               "iceberg",
			"source":                        "datagen",
			"iceberg.tabels":                "rest.typo", // mistyped key
			"datagen.rate":                  "fast",      // bad value
			"iceberg.tables":                "rest.valid",
			"iceberg.catalog.jdbc.password": secret,
		}
		infos, err := api.Validate(ctx, "iceberg", bad)
		if err != nil {
			t.Fatal(err)
		}
		errs := infos.Errors()
		if !containsAll(errs["iceberg.tabels"], "iceberg.tables") {
			t.Errorf("validate: mistyped iceberg.tabels: errors %q, want one suggesting iceberg.tables", errs["iceberg.tabels"])
		}
		if len(errs["datagen.rate"]) == 0 {
			t.Errorf("validate: datagen.rate=fast has no error")
		}
		if v, ok := infos.Value("iceberg.catalog.jdbc.password"); ok && v != nil && *v != "[hidden]" {
			t.Errorf("validate echoes the secret's value: %q", *v)
		}
		checkErrorCount(t, infos)

		noSource := maps.Clone(bad)
		delete(noSource, "iceberg.tabels")
		delete(noSource, "datagen.rate")
		noSource["source"] = "no-such-source"
		infos, err = api.Validate(ctx, "iceberg", noSource)
		if err != nil {
			t.Fatal(err)
		}
		if errs := infos.Errors(); !containsAll(errs["source"], "no-such-source") {
			t.Errorf("validate: unknown source plugin: errors on source %q (all: %v), want one naming no-such-source", errs["source"], errs)
		}
		checkErrorCount(t, infos)

		kafka := map[string]string{"name": "k", "connector.class": "iceberg", "source": "kafka", "topics": "t", "iceberg.tables": "a.b"}
		infos, err = api.Validate(ctx, "iceberg", kafka)
		if err != nil {
			t.Fatal(err)
		}
		if errs := infos.Errors(); len(errs["kafka.bootstrap.servers"]) == 0 {
			t.Errorf("validate: a kafka source without kafka.bootstrap.servers: no error on that key (errors: %v)", errs)
		}
	})

	t.Run("error bodies", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"GET", "/connectors/no-such-connector"},
			{"GET", "/connectors/no-such-connector/status"},
			{"GET", "/connectors/no-such-connector/offsets"},
			{"DELETE", "/connectors/no-such-connector"},
			{"PUT", "/connectors/no-such-connector/pause"},
			{"GET", "/no/such/path"},
		} {
			r, err := api.Do(ctx, c.method, c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			expectErrorResponse(t, c.method+" "+c.path, r, http.StatusNotFound, "")
		}
		r, err := api.Do(ctx, "DELETE", "/connector-plugins", nil)
		if err != nil {
			t.Fatal(err)
		}
		expectErrorResponse(t, "DELETE /connector-plugins", r, http.StatusMethodNotAllowed, "")
		if r.Header.Get("Allow") == "" {
			t.Errorf("405 without an Allow header")
		}
	})

	t.Run("metrics", func(t *testing.T) {
		f.WaitStatus(ctx, name, "a commit after the restarts", false, func(s harness.ConnectorStatus) bool {
			return s.Floe != nil && s.Floe.Commits >= 1
		})
		m, err := api.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		label := `connector="` + name + `"`
		for _, metric := range []string{"floe_records_in_total", "floe_records_out_total", "floe_commits_total", "floe_files_written_total"} {
			v, ok := m.Sum(metric, label)
			if !ok || v <= 0 {
				t.Errorf("/metrics: %s{%s} = %v (found %v), want > 0", metric, label, v, ok)
			}
		}
	})

	t.Run("admin loggers", func(t *testing.T) {
		var loggers map[string]any
		mustDecode(t, mustDo(t, api, ctx, "GET", "/admin/loggers", nil, http.StatusOK), &loggers)
		if len(loggers) == 0 {
			t.Errorf("GET /admin/loggers lists no logger")
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := api.DeleteConnector(ctx, name); err != nil {
			t.Fatal(err)
		}
		_, err := api.Connector(ctx, name)
		expectError(t, err, http.StatusNotFound, "")
		names, err := api.Connectors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 0 {
			t.Errorf("after DELETE, GET /connectors = %v", names)
		}
		if n := len(f.Plugins()); n != 0 {
			time.Sleep(3 * time.Second)
			if left := f.Plugins(); len(left) != 0 {
				t.Errorf("plugin processes still run 3 s after the only connector was deleted: %v", left)
			}
		}
	})

	f.Stop()
}

func mustDo(t *testing.T, api *harness.Client, ctx context.Context, method, path string, body any, want int) *harness.Response {
	t.Helper()
	r, err := api.Do(ctx, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

func mustDecode(t *testing.T, r *harness.Response, v any) {
	t.Helper()
	if err := r.Decode(v); err != nil {
		t.Fatal(err)
	}
}

// expectError checks that err is an answer with status whose body is
// Connect's error document, its message containing substr.
func expectError(t *testing.T, err error, status int, substr string) {
	t.Helper()
	var ae *harness.APIError
	if !errors.As(err, &ae) {
		t.Errorf("got %v, want an HTTP %d answer", err, status)
		return
	}
	expectErrorResponse(t, ae.Method+" "+ae.Path, &harness.Response{Status: ae.Status, Body: ae.Body}, status, substr)
}

func expectErrorResponse(t *testing.T, what string, r *harness.Response, status int, substr string) {
	t.Helper()
	if r == nil {
		t.Errorf("%s: no answer", what)
		return
	}
	if r.Status != status {
		t.Errorf("%s: HTTP %d, want %d: %s", what, r.Status, status, r.Body)
		return
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &raw); err != nil || len(raw) != 2 || raw["error_code"] == nil || raw["message"] == nil {
		t.Errorf("%s: body %s is not Connect's {\"error_code\", \"message\"}", what, r.Body)
		return
	}
	var body harness.ErrorBody
	_ = json.Unmarshal(r.Body, &body)
	if body.ErrorCode != status || body.Message == "" {
		t.Errorf("%s: error body %s, want error_code %d and a message", what, r.Body, status)
	}
	if substr != "" && !strings.Contains(strings.ToLower(body.Message), strings.ToLower(substr)) {
		t.Errorf("%s: message %q does not mention %q", what, body.Message, substr)
	}
}

func checkInfo(t *testing.T, info harness.ConnectorInfo, name string, tasks int) {
	t.Helper()
	if info.Name != name || info.Type != "sink" || info.Config["name"] != name {
		t.Errorf("connector info: name %q type %q config name %q, want %s, sink, %s", info.Name, info.Type, info.Config["name"], name, name)
	}
	if len(info.Tasks) != tasks {
		t.Errorf("connector info lists %d tasks, want %d: %+v", len(info.Tasks), tasks, info.Tasks)
	}
	for i, task := range info.Tasks {
		if task != (harness.TaskID{Connector: name, Task: i}) {
			t.Errorf("connector info task %d = %+v", i, task)
		}
	}
}

// checkDatagenOffsets checks the offsets document of a connector whose
// source is not Kafka (datagen): partitions {partition}, offsets
// {position}. A Kafka source's come in Connect's sink shape instead
// ({kafka_topic, kafka_partition}, {kafka_offset}); offsetValue reads both.
func checkDatagenOffsets(t *testing.T, offs harness.Offsets, n int) {
	t.Helper()
	if len(offs.Offsets) != n {
		t.Fatalf("offsets: %d entries, want %d: %+v", len(offs.Offsets), n, offs)
	}
	for _, o := range offs.Offsets {
		pk := slices.Sorted(maps.Keys(o.Partition))
		ok := slices.Sorted(maps.Keys(o.Offset))
		if !slices.Equal(pk, []string{"partition"}) || !slices.Equal(ok, []string{"position"}) {
			t.Errorf("offsets entry %v: partition keys %v and offset keys %v, want a non-Kafka source's shape [partition] and [position]", o, pk, ok)
		}
	}
}

// offsetValue reads an offsets entry's position: kafka_offset (a Kafka
// source) or position (any other source).
func offsetValue(t *testing.T, o harness.Offset) int64 {
	t.Helper()
	key := "kafka_offset"
	if _, ok := o.Offset[key]; !ok {
		key = "position"
	}
	switch v := o.Offset[key].(type) {
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			t.Fatalf("offset %v: %v", o, err)
		}
		return n
	case float64:
		return int64(v)
	}
	t.Fatalf("offset %v: neither kafka_offset nor position is a number", o)
	return 0
}

func allTasks(s harness.ConnectorStatus, state string) bool {
	for _, t := range s.Tasks {
		if t.State != state {
			return false
		}
	}
	return len(s.Tasks) > 0
}

func restarting(s harness.ConnectorStatus) bool {
	if s.Connector.State == "RESTARTING" {
		return true
	}
	for _, t := range s.Tasks {
		if t.State == "RESTARTING" {
			return true
		}
	}
	return false
}

func recordsIn(t *testing.T, api *harness.Client, ctx context.Context, name string) int64 {
	t.Helper()
	st, err := api.Status(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Floe == nil {
		return 0
	}
	return st.Floe.RecordsIn
}

// icebergClass is the Apache Iceberg sink's Connect class, the iceberg
// sink's class in GET /connector-plugins.
const icebergClass = "org.apache.iceberg.connect.IcebergSinkConnector"

func hasPlugin(ps []harness.PluginInfo, class, typ string) bool {
	for _, p := range ps {
		if p.Class == class && p.Type == typ {
			return true
		}
	}
	return false
}

func hasDef(defs []harness.ConfigDef, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

func containsAll(msgs []string, substr string) bool {
	for _, m := range msgs {
		if strings.Contains(m, substr) {
			return true
		}
	}
	return false
}

// checkErrorCount checks that error_count is the number of error
// messages listed.
func checkErrorCount(t *testing.T, infos harness.ConfigInfos) {
	t.Helper()
	n := 0
	for _, msgs := range infos.Errors() {
		n += len(msgs)
	}
	if infos.ErrorCount != n {
		t.Errorf("validate: error_count %d, but %d error messages are listed", infos.ErrorCount, n)
	}
}
