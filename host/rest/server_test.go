package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floehq/floe/host/worker"
)

// fixture is a server over a fake worker.
type fixture struct {
	t       *testing.T
	w       *fakeWorker
	loggers *Loggers
	logs    *bytes.Buffer
	h       http.Handler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	logs := &bytes.Buffer{}
	loggers := NewLoggers(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: LevelTrace}), slog.LevelInfo)
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_records_in_total", Help: "records read"})
	reg.MustRegister(c)
	c.Add(42)
	f := &fixture{t: t, w: newFakeWorker(), loggers: loggers, logs: logs}
	f.h = New(Options{Worker: f.w, Metrics: reg, Loggers: loggers, Logger: loggers.Logger("floe.rest")})
	return f
}

// do sends a request; body is a string (sent as is) or a value (JSON).
func (f *fixture) do(method, path string, body any) *httptest.ResponseRecorder {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// want checks the status and decodes the body into out (when not nil).
func (f *fixture) want(rec *httptest.ResponseRecorder, code int, out any) {
	f.t.Helper()
	if rec.Code != code {
		f.t.Fatalf("status %d, want %d; body %s", rec.Code, code, rec.Body)
	}
	if out == nil {
		return
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		f.t.Fatalf("decode %s: %v", rec.Body, err)
	}
}

// wantError checks Connect's error body: the code and a message holding
// every part.
func (f *fixture) wantError(rec *httptest.ResponseRecorder, code int, parts ...string) {
	f.t.Helper()
	var body map[string]any
	f.want(rec, code, &body)
	if len(body) != 2 || body["error_code"] != float64(code) {
		f.t.Fatalf("error body %s, want {error_code: %d, message}", rec.Body, code)
	}
	msg, _ := body["message"].(string)
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			f.t.Errorf("error message %q does not contain %q", msg, p)
		}
	}
}

// create makes connector name through the API.
func (f *fixture) create(name string, config map[string]string) {
	f.t.Helper()
	f.want(f.do("POST", "/connectors", map[string]any{"name": name, "config": config}), http.StatusCreated, nil)
}

func ordersConfig() map[string]string {
	return map[string]string{"connector.class": "iceberg", "tasks.max": "1", "source": "datagen",
		"catalog.password": "hunter2", "iceberg.catalog.uri": "postgres://floe:s3cret@127.0.0.1/catalog",
		"kafka.sasl.password": "kpw"}
}

func TestServerInfo(t *testing.T) {
	f := newFixture(t)
	var got worker.ServerInfo
	rec := f.do("GET", "/", nil)
	f.want(rec, http.StatusOK, &got)
	if got != (worker.ServerInfo{Version: ConnectVersion, Commit: "abc123", KafkaClusterID: "standalone"}) {
		t.Fatalf("GET / = %+v, want Connect's version %s", got, ConnectVersion)
	}
	if v := rec.Header().Get(VersionHeader); v != "0.1.0" {
		t.Errorf("GET / %s = %q, want floe's version 0.1.0", VersionHeader, v)
	}
	var raw map[string]any
	f.want(f.do("GET", "/", nil), http.StatusOK, &raw)
	for _, k := range []string{"version", "commit", "kafka_cluster_id"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("GET / lacks %q: %v", k, raw)
		}
	}
}

func TestHealth(t *testing.T) {
	f := newFixture(t)
	f.w.ready = errors.New("loading connectors")
	var h Health
	f.want(f.do("GET", "/health", nil), http.StatusServiceUnavailable, &h)
	if h.Status != "starting" || !strings.Contains(h.Message, "loading connectors") {
		t.Fatalf("starting health = %+v", h)
	}
	f.w.ready = nil
	f.want(f.do("GET", "/health", nil), http.StatusOK, &h)
	if h.Status != "healthy" || h.Message == "" {
		t.Fatalf("healthy health = %+v", h)
	}
}

func TestCreateConnector(t *testing.T) {
	t.Run("created", func(t *testing.T) {
		f := newFixture(t)
		rec := f.do("POST", "/connectors", map[string]any{"name": "orders", "config": ordersConfig()})
		var info worker.ConnectorInfo
		f.want(rec, http.StatusCreated, &info)
		if loc := rec.Header().Get("Location"); loc != "http://example.com/connectors/orders" {
			t.Errorf("Location = %q", loc)
		}
		if info.Name != "orders" || info.Type != "sink" || len(info.Tasks) != 1 || info.Config["name"] != "orders" {
			t.Errorf("info = %+v", info)
		}
		if got := f.w.connectors["orders"].state; got != worker.StateRunning {
			t.Errorf("initial state %s, want RUNNING", got)
		}
		if info.Config["catalog.password"] != hidden || info.Config["kafka.sasl.password"] != hidden {
			t.Errorf("secrets echoed: %v", info.Config)
		}
		if got := info.Config["iceberg.catalog.uri"]; got != "postgres://floe:[hidden]@127.0.0.1/catalog" {
			t.Errorf("URL password echoed: %q", got)
		}
		if f.w.connectors["orders"].config["catalog.password"] != "hunter2" {
			t.Errorf("worker did not get the real secret")
		}
		f.wantError(f.do("POST", "/connectors", map[string]any{"name": "orders", "config": ordersConfig()}),
			http.StatusConflict, "orders", "already exists")
	})
	t.Run("initial state", func(t *testing.T) {
		f := newFixture(t)
		f.want(f.do("POST", "/connectors", `{"name":"p","config":{"connector.class":"iceberg"},"initial_state":"paused"}`), http.StatusCreated, nil)
		if got := f.w.connectors["p"].state; got != worker.StatePaused {
			t.Errorf("state %s, want PAUSED", got)
		}
		f.want(f.do("POST", "/connectors", `{"name":"s","config":{"connector.class":"iceberg"},"initial_state":"STOPPED"}`), http.StatusCreated, nil)
		if got := f.w.connectors["s"].state; got != worker.StateStopped {
			t.Errorf("state %s, want STOPPED", got)
		}
	})
	t.Run("numbers are taken as text", func(t *testing.T) {
		f := newFixture(t)
		var info worker.ConnectorInfo
		f.want(f.do("POST", "/connectors", `{"name":"n","config":{"connector.class":"iceberg","tasks.max":2,"x":true}}`), http.StatusCreated, &info)
		if info.Config["tasks.max"] != "2" || info.Config["x"] != "true" {
			t.Errorf("config = %v", info.Config)
		}
	})
	bad := []struct {
		name, body string
		code       int
		parts      []string
	}{
		{"malformed JSON", "{\n  \"name\": \"x\",\n  \"config\": {\"a\": \"b\",}\n}", 400, []string{"malformed JSON", "line 3", "column 23"}},
		{"truncated JSON", `{"name": "x", "config": {`, 400, []string{"ends early", "line 1"}},
		{"trailing data", `{"name": "x", "config": {}} {}`, 400, []string{"unexpected data", "column 29"}},
		{"empty body", "", 400, []string{"request body is empty"}},
		{"wrong type", `{"name": 5, "config": {}}`, 400, []string{`"name" must be a string`}},
		{"no name", `{"config": {"connector.class": "iceberg"}}`, 400, []string{"name is missing"}},
		{"blank name", `{"name": "  ", "config": {}}`, 400, []string{"name is missing"}},
		{"control characters", `{"name": "a\u0007b", "config": {}}`, 400, []string{"control characters"}},
		{"no config", `{"name": "x"}`, 400, []string{`has no "config"`}},
		{"name mismatch", `{"name": "x", "config": {"name": "y"}}`, 400, []string{"Connector name configuration (y) doesn't match connector name in the URL (x)"}},
		{"nested value", `{"name": "x", "config": {"a": {"b": "c"}}}`, 400, []string{`config key "a" must be a string, got an object`}},
		{"null value", `{"name": "x", "config": {"a": null}}`, 400, []string{`config key "a" is null`}},
		{"bad initial state", `{"name": "x", "config": {}, "initial_state": "ASLEEP"}`, 400, []string{"RUNNING, PAUSED, STOPPED"}},
		{"invalid config", `{"name": "x", "config": {"connector.class": "iceberg", "tasks.max": "many"}}`, 400,
			[]string{"contains the following 1 error(s)", `tasks.max: invalid int value "many"`, "/connector-plugins/iceberg/config/validate"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.wantError(f.do("POST", "/connectors", tc.body), tc.code, tc.parts...)
		})
	}
	t.Run("rebalancing", func(t *testing.T) {
		f := newFixture(t)
		f.w.err = fmt.Errorf("create: %w", worker.ErrRebalancing)
		f.wantError(f.do("POST", "/connectors", map[string]any{"name": "x", "config": map[string]string{}}), http.StatusConflict, "rebalance")
	})
	t.Run("internal error", func(t *testing.T) {
		f := newFixture(t)
		f.w.err = errBoom
		f.wantError(f.do("POST", "/connectors", map[string]any{"name": "x", "config": map[string]string{}}), http.StatusInternalServerError, "boom")
	})
	t.Run("trailing slash", func(t *testing.T) {
		f := newFixture(t)
		f.want(f.do("POST", "/connectors/", map[string]any{"name": "x", "config": map[string]string{}}), http.StatusCreated, nil)
		var names []string
		f.want(f.do("GET", "/connectors/", nil), http.StatusOK, &names)
		if !reflect.DeepEqual(names, []string{"x"}) {
			t.Errorf("names = %v", names)
		}
	})
}

func TestListConnectors(t *testing.T) {
	f := newFixture(t)
	var names []string
	rec := f.do("GET", "/connectors", nil)
	f.want(rec, http.StatusOK, &names)
	if strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("empty list = %s, want []", rec.Body)
	}
	f.create("a", ordersConfig())
	f.create("b", map[string]string{"connector.class": "iceberg"})
	f.want(f.do("GET", "/connectors", nil), http.StatusOK, &names)
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("names = %v", names)
	}

	var exp map[string]map[string]json.RawMessage
	f.want(f.do("GET", "/connectors?expand=status", nil), http.StatusOK, &exp)
	if len(exp) != 2 || exp["a"]["status"] == nil || exp["a"]["info"] != nil {
		t.Fatalf("expand=status = %v", exp)
	}
	var st worker.ConnectorStatus
	if err := json.Unmarshal(exp["a"]["status"], &st); err != nil || st.Name != "a" || st.Connector.State != worker.StateRunning {
		t.Errorf("status = %+v (%v)", st, err)
	}

	f.want(f.do("GET", "/connectors?expand=info", nil), http.StatusOK, &exp)
	if exp["a"]["info"] == nil || exp["a"]["status"] != nil {
		t.Fatalf("expand=info = %v", exp)
	}
	var info worker.ConnectorInfo
	if err := json.Unmarshal(exp["a"]["info"], &info); err != nil || info.Config["catalog.password"] != hidden {
		t.Errorf("info = %+v (%v)", info, err)
	}

	for _, q := range []string{"expand=status&expand=info", "expand=info,status"} {
		f.want(f.do("GET", "/connectors?"+q, nil), http.StatusOK, &exp)
		if exp["b"]["info"] == nil || exp["b"]["status"] == nil {
			t.Errorf("%s = %v", q, exp)
		}
	}
	f.want(f.do("GET", "/connectors?expand=bogus", nil), http.StatusOK, &exp)
	if len(exp) != 2 || len(exp["a"]) != 0 {
		t.Errorf("unknown expansion = %v, want names with empty objects", exp)
	}
}

func TestConnector(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())

	var info worker.ConnectorInfo
	f.want(f.do("GET", "/connectors/orders", nil), http.StatusOK, &info)
	if info.Name != "orders" || info.Config["catalog.password"] != hidden || len(info.Tasks) != 1 {
		t.Errorf("info = %+v", info)
	}
	f.wantError(f.do("GET", "/connectors/nope", nil), http.StatusNotFound, "nope", "not found")

	var st worker.ConnectorStatus
	f.want(f.do("GET", "/connectors/orders/status", nil), http.StatusOK, &st)
	if st.Name != "orders" || st.Type != "sink" || len(st.Tasks) != 1 || st.Floe != nil {
		t.Errorf("status = %+v, want Connect's fields only", st)
	}
	f.want(f.do("GET", "/connectors/orders/status?floe=true", nil), http.StatusOK, &st)
	if st.Floe == nil || st.Floe.Commits != 2 {
		t.Errorf("status?floe=true = %+v, want floe's progress", st)
	}
	f.wantError(f.do("GET", "/connectors/nope/status", nil), http.StatusNotFound, "nope")

	f.want(f.do("DELETE", "/connectors/orders", nil), http.StatusNoContent, nil)
	f.wantError(f.do("GET", "/connectors/orders", nil), http.StatusNotFound, "orders")
	f.wantError(f.do("DELETE", "/connectors/orders", nil), http.StatusNotFound, "orders")
}

func TestConnectorNameWithSlash(t *testing.T) {
	f := newFixture(t)
	f.create("a/b", map[string]string{"connector.class": "iceberg"})
	var info worker.ConnectorInfo
	f.want(f.do("GET", "/connectors/a%2Fb", nil), http.StatusOK, &info)
	if info.Name != "a/b" {
		t.Errorf("name = %q", info.Name)
	}
}

func TestConfig(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())

	var cfg map[string]string
	f.want(f.do("GET", "/connectors/orders/config", nil), http.StatusOK, &cfg)
	if cfg["connector.class"] != "iceberg" || cfg["name"] != "orders" || cfg["catalog.password"] != hidden {
		t.Fatalf("config = %v", cfg)
	}
	f.wantError(f.do("GET", "/connectors/nope/config", nil), http.StatusNotFound, "nope")

	t.Run("PUT updates, keeping hidden secrets", func(t *testing.T) {
		cfg["tasks.max"] = "2"
		var info worker.ConnectorInfo
		rec := f.do("PUT", "/connectors/orders/config", cfg)
		f.want(rec, http.StatusOK, &info)
		if rec.Header().Get("Location") != "" {
			t.Errorf("an update has a Location header")
		}
		stored := f.w.connectors["orders"].config
		if stored["tasks.max"] != "2" || stored["catalog.password"] != "hunter2" ||
			stored["iceberg.catalog.uri"] != "postgres://floe:s3cret@127.0.0.1/catalog" {
			t.Errorf("stored config = %v", stored)
		}
	})
	t.Run("PUT replaces a secret", func(t *testing.T) {
		cfg["catalog.password"] = "new"
		f.want(f.do("PUT", "/connectors/orders/config", cfg), http.StatusOK, nil)
		if got := f.w.connectors["orders"].config["catalog.password"]; got != "new" {
			t.Errorf("password = %q", got)
		}
	})
	t.Run("PUT creates", func(t *testing.T) {
		var info worker.ConnectorInfo
		rec := f.do("PUT", "/connectors/fresh/config", map[string]string{"connector.class": "iceberg"})
		f.want(rec, http.StatusCreated, &info)
		if rec.Header().Get("Location") != "http://example.com/connectors/fresh" || info.Config["name"] != "fresh" {
			t.Errorf("Location %q, info %+v", rec.Header().Get("Location"), info)
		}
	})
	t.Run("PUT errors", func(t *testing.T) {
		f.wantError(f.do("PUT", "/connectors/orders/config", `{"name": "other"}`), http.StatusBadRequest,
			"Connector name configuration (other) doesn't match connector name in the URL (orders)")
		f.wantError(f.do("PUT", "/connectors/orders/config", `[1, 2]`), http.StatusBadRequest, "must be an object")
		f.wantError(f.do("PUT", "/connectors/orders/config", `{"tasks.max": "x"}`), http.StatusBadRequest, "tasks.max")
	})
	t.Run("PATCH", func(t *testing.T) {
		var info worker.ConnectorInfo
		f.want(f.do("PATCH", "/connectors/orders/config", `{"tasks.max": "1", "source": null, "new.key": "v"}`), http.StatusOK, &info)
		stored := f.w.connectors["orders"].config
		if _, ok := stored["source"]; ok || stored["tasks.max"] != "1" || stored["new.key"] != "v" || stored["connector.class"] != "iceberg" {
			t.Errorf("patched config = %v", stored)
		}
		if info.Config["new.key"] != "v" || info.Config["catalog.password"] != hidden {
			t.Errorf("patch answer = %v", info.Config)
		}
		f.want(f.do("PATCH", "/connectors/orders/config", `{"catalog.password": "[hidden]"}`), http.StatusOK, nil)
		if got := f.w.connectors["orders"].config["catalog.password"]; got != "new" {
			t.Errorf("a hidden value sent back replaced the secret: %q", got)
		}
		f.wantError(f.do("PATCH", "/connectors/nope/config", `{"a": "b"}`), http.StatusNotFound, "nope")
		f.wantError(f.do("PATCH", "/connectors/orders/config", `{"name": "x"}`), http.StatusBadRequest, "doesn't match")
		f.wantError(f.do("PATCH", "/connectors/orders/config", `{"name": null}`), http.StatusBadRequest, "cannot be removed")
		f.wantError(f.do("PATCH", "/connectors/orders/config", `{"a": `), http.StatusBadRequest, "malformed JSON")
	})
}

func TestRestart(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())

	rec := f.do("POST", "/connectors/orders/restart", nil)
	f.want(rec, http.StatusNoContent, nil)
	if rec.Body.Len() != 0 {
		t.Errorf("204 with a body: %s", rec.Body)
	}
	f.want(f.do("POST", "/connectors/orders/restart?includeTasks=false&onlyFailed=false", nil), http.StatusNoContent, nil)

	var st worker.ConnectorStatus
	f.want(f.do("POST", "/connectors/orders/restart?includeTasks=true", nil), http.StatusAccepted, &st)
	if st.Connector.State != worker.StateRestarting || st.Name != "orders" {
		t.Errorf("restart status = %+v", st)
	}
	f.want(f.do("POST", "/connectors/orders/restart?onlyFailed=true", nil), http.StatusAccepted, &st)
	f.want(f.do("POST", "/connectors/orders/restart?includeTasks=true&onlyFailed=true", nil), http.StatusAccepted, &st)
	want := []string{"restart orders tasks=false failed=false", "restart orders tasks=false failed=false",
		"restart orders tasks=true failed=false", "restart orders tasks=false failed=true", "restart orders tasks=true failed=true"}
	if got := f.w.calls[len(f.w.calls)-5:]; !reflect.DeepEqual(got, want) {
		t.Errorf("calls = %q", got)
	}
	f.wantError(f.do("POST", "/connectors/orders/restart?includeTasks=maybe", nil), http.StatusBadRequest, "includeTasks")
	f.wantError(f.do("POST", "/connectors/nope/restart", nil), http.StatusNotFound, "nope")
	f.w.err = worker.ErrRebalancing
	f.wantError(f.do("POST", "/connectors/orders/restart", nil), http.StatusConflict, "rebalance")
}

func TestPauseResumeStop(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())
	for _, tc := range []struct {
		op   string
		want worker.State
		code int
	}{{"pause", worker.StatePaused, http.StatusAccepted}, {"resume", worker.StateRunning, http.StatusAccepted}, {"stop", worker.StateStopped, http.StatusNoContent}} {
		rec := f.do("PUT", "/connectors/orders/"+tc.op, nil)
		f.want(rec, tc.code, nil)
		if got := f.w.connectors["orders"].state; got != tc.want {
			t.Errorf("%s: state %s, want %s", tc.op, got, tc.want)
		}
		f.wantError(f.do("PUT", "/connectors/nope/"+tc.op, nil), http.StatusNotFound, "nope")
		f.wantError(f.do("POST", "/connectors/orders/"+tc.op, nil), http.StatusMethodNotAllowed, "PUT")
	}
	f.w.err = worker.ErrRebalancing
	f.wantError(f.do("PUT", "/connectors/orders/pause", nil), http.StatusConflict)
}

func TestTasks(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())

	var tasks []worker.TaskInfo
	f.want(f.do("GET", "/connectors/orders/tasks", nil), http.StatusOK, &tasks)
	if len(tasks) != 1 || tasks[0].ID != (worker.TaskID{Connector: "orders", Task: 0}) || tasks[0].Config["catalog.password"] != hidden {
		t.Errorf("tasks = %+v", tasks)
	}
	f.wantError(f.do("GET", "/connectors/nope/tasks", nil), http.StatusNotFound, "nope")

	var ts worker.TaskState
	f.want(f.do("GET", "/connectors/orders/tasks/0/status", nil), http.StatusOK, &ts)
	if ts.ID != 0 || ts.State != worker.StateRunning || ts.WorkerID == "" {
		t.Errorf("task status = %+v", ts)
	}
	f.wantError(f.do("GET", "/connectors/orders/tasks/7/status", nil), http.StatusNotFound, "orders-7")
	f.wantError(f.do("GET", "/connectors/orders/tasks/x/status", nil), http.StatusNotFound, `task "x"`, "GET /connectors/orders/tasks")
	f.wantError(f.do("GET", "/connectors/orders/tasks/-1/status", nil), http.StatusNotFound)

	f.want(f.do("POST", "/connectors/orders/tasks/0/restart", nil), http.StatusNoContent, nil)
	f.wantError(f.do("POST", "/connectors/orders/tasks/3/restart", nil), http.StatusNotFound)
	f.wantError(f.do("POST", "/connectors/nope/tasks/0/restart", nil), http.StatusNotFound)
	f.wantError(f.do("POST", "/connectors/orders/tasks/zz/restart", nil), http.StatusNotFound)
	f.w.err = worker.ErrRebalancing
	f.wantError(f.do("POST", "/connectors/orders/tasks/0/restart", nil), http.StatusConflict)
}

func TestOffsets(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())

	rec := f.do("GET", "/connectors/orders/offsets", nil)
	var offs Offsets
	f.want(rec, http.StatusOK, &offs)
	if strings.TrimSpace(rec.Body.String()) != `{"offsets":[]}` {
		t.Errorf("empty offsets = %s", rec.Body)
	}
	body := `{"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 2}, "offset": {"kafka_offset": 100}}]}`
	f.wantError(f.do("PATCH", "/connectors/orders/offsets", body), http.StatusBadRequest,
		"must be in the STOPPED state", "/connectors/orders/stop")
	f.wantError(f.do("DELETE", "/connectors/orders/offsets", nil), http.StatusBadRequest, "STOPPED")

	f.want(f.do("PUT", "/connectors/orders/stop", nil), http.StatusNoContent, nil)
	var msg Message
	f.want(f.do("PATCH", "/connectors/orders/offsets", body), http.StatusOK, &msg)
	if msg.Message != "The offsets for this connector have been altered successfully" {
		t.Errorf("alter message = %q", msg.Message)
	}
	f.want(f.do("GET", "/connectors/orders/offsets", nil), http.StatusOK, &offs)
	if len(offs.Offsets) != 1 || offs.Offsets[0].Partition["kafka_topic"] != "orders" || offs.Offsets[0].Offset["kafka_offset"] != float64(100) {
		t.Errorf("offsets = %+v", offs)
	}
	f.wantError(f.do("PATCH", "/connectors/orders/offsets", `{"offsets": []}`), http.StatusBadRequest, "need to be provided")
	f.wantError(f.do("PATCH", "/connectors/orders/offsets", `{"offsets": [{"offset": {"kafka_offset": 1}}]}`), http.StatusBadRequest, `offsets[0] has no "partition"`)
	f.wantError(f.do("PATCH", "/connectors/orders/offsets", `{"offsets": [}`), http.StatusBadRequest, "line 1, column 14")

	f.want(f.do("DELETE", "/connectors/orders/offsets", nil), http.StatusOK, &msg)
	if msg.Message != "The offsets for this connector have been reset successfully" {
		t.Errorf("reset message = %q", msg.Message)
	}
	f.wantError(f.do("GET", "/connectors/nope/offsets", nil), http.StatusNotFound)
	f.wantError(f.do("DELETE", "/connectors/nope/offsets", nil), http.StatusNotFound)
	f.wantError(f.do("PATCH", "/connectors/nope/offsets", body), http.StatusNotFound)
}

func TestTopics(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())
	f.w.connectors["orders"].topics = []string{"orders", "returns"}

	rec := f.do("GET", "/connectors/orders/topics", nil)
	f.want(rec, http.StatusOK, nil)
	if strings.TrimSpace(rec.Body.String()) != `{"orders":{"topics":["orders","returns"]}}` {
		t.Errorf("topics = %s", rec.Body)
	}
	f.want(f.do("PUT", "/connectors/orders/topics/reset", nil), http.StatusAccepted, nil)
	rec = f.do("GET", "/connectors/orders/topics", nil)
	if strings.TrimSpace(rec.Body.String()) != `{"orders":{"topics":[]}}` {
		t.Errorf("topics after reset = %s", rec.Body)
	}
	f.wantError(f.do("GET", "/connectors/nope/topics", nil), http.StatusNotFound)
	f.wantError(f.do("PUT", "/connectors/nope/topics/reset", nil), http.StatusNotFound)
}

func TestTables(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())
	var rep map[string][]map[string]any
	f.want(f.do("GET", "/connectors/orders/tables", nil), http.StatusOK, &rep)
	if len(rep["tables"]) != 1 || rep["tables"][0]["table"] != "demo.orders" || rep["tables"][0]["small_files"] != float64(3) {
		t.Errorf("tables = %v", rep)
	}
	if runs, ok := rep["maintenance_runs"]; !ok || runs == nil {
		t.Errorf("maintenance_runs missing or null: %v", rep)
	}
	f.wantError(f.do("GET", "/connectors/nope/tables", nil), http.StatusNotFound)
}

func TestPlugins(t *testing.T) {
	f := newFixture(t)
	var plugins []worker.PluginInfo
	f.want(f.do("GET", "/connector-plugins", nil), http.StatusOK, &plugins)
	if len(plugins) != 2 {
		t.Errorf("connector plugins = %+v", plugins)
	}
	f.want(f.do("GET", "/connector-plugins?connectorsOnly=false", nil), http.StatusOK, &plugins)
	if len(plugins) != 2 {
		t.Errorf("connectorsOnly=false = %+v, want the 2 connectors only (Connect's PluginInfo refuses a partitioner type)", plugins)
	}
	// Connect's listing: the class name users put in connector.class, and
	// exactly PluginInfo's fields (Connect's class refuses any other).
	rec := f.do("GET", "/connector-plugins", nil)
	var raw []map[string]any
	f.want(rec, http.StatusOK, &raw)
	if len(raw) != 2 || raw[0]["class"] != "org.apache.iceberg.connect.IcebergSinkConnector" || raw[1]["class"] != "datagen" {
		t.Errorf("classes = %v, want the iceberg sink's Connect class, then datagen's floe name", raw)
	}
	for _, p := range raw {
		if len(p) != 3 || p["type"] == nil || p["version"] == nil {
			t.Errorf("plugin %v has other fields than Connect's class, type and version", p)
		}
	}
	f.want(f.do("GET", "/connector-plugins?connectorsOnly=false&floe=true", nil), http.StatusOK, &plugins)
	if len(plugins) != 3 || plugins[2].Class != "hash" || plugins[2].Type != "partitioner" || plugins[2].Floe == nil || plugins[2].Floe.Name != "hash" {
		t.Errorf("all plugins = %+v", plugins)
	}
	if p := plugins[0]; p.Floe == nil || p.Floe.Name != "iceberg" || len(p.Floe.Aliases) != 1 {
		t.Errorf("floe=true: iceberg sink = %+v, want floe's name iceberg and its alias", p)
	}
	f.want(f.do("GET", "/connector-plugins/", nil), http.StatusOK, &plugins)
	f.wantError(f.do("GET", "/connector-plugins?connectorsOnly=perhaps", nil), http.StatusBadRequest, "connectorsOnly")

	var defs []map[string]any
	f.want(f.do("GET", "/connector-plugins/iceberg/config", nil), http.StatusOK, &defs)
	if len(defs) != 2 || defs[0]["name"] != "tasks.max" || defs[0]["default_value"] != "1" || defs[1]["default_value"] != nil {
		t.Errorf("config defs = %v", defs)
	}
	for _, k := range []string{"name", "type", "required", "default_value", "importance", "documentation", "group", "width", "display_name", "dependents", "order"} {
		if _, ok := defs[0][k]; !ok {
			t.Errorf("config def lacks %q", k)
		}
	}
	if deps, ok := defs[0]["dependents"].([]any); !ok || len(deps) != 0 {
		t.Errorf("dependents = %v, want []", defs[0]["dependents"])
	}
	f.wantError(f.do("GET", "/connector-plugins/nope/config", nil), http.StatusNotFound, "nope")

	// The Connect class and its simple name reach the worker as they
	// are (dots and all), and answer the sink's definitions.
	for _, name := range []string{"org.apache.iceberg.connect.IcebergSinkConnector", "IcebergSinkConnector"} {
		var got []worker.ConfigDef
		f.want(f.do("GET", "/connector-plugins/"+name+"/config", nil), http.StatusOK, &got)
		if len(got) != 2 || got[0].Name != "tasks.max" {
			t.Errorf("GET /connector-plugins/%s/config = %+v, want the iceberg sink's definitions", name, got)
		}
	}
}

func TestValidate(t *testing.T) {
	f := newFixture(t)
	var infos worker.ConfigInfos
	f.want(f.do("PUT", "/connector-plugins/iceberg/config/validate",
		`{"connector.class": "iceberg", "tasks.max": "lots", "catalog.password": "pw", "uri": "http://u:p@h/"}`), http.StatusOK, &infos)
	if infos.ErrorCount != 1 || infos.Name != "iceberg" {
		t.Fatalf("infos = %+v", infos)
	}
	for _, c := range infos.Configs {
		switch c.Value.Name {
		case "tasks.max":
			if len(c.Value.Errors) != 1 {
				t.Errorf("tasks.max errors = %v", c.Value.Errors)
			}
		case "catalog.password":
			if c.Value.Value != nil {
				t.Errorf("password echoed: %q", *c.Value.Value)
			}
		case "uri":
			if c.Value.Value == nil || *c.Value.Value != "http://u:[hidden]@h/" {
				t.Errorf("uri = %v", c.Value.Value)
			}
		}
	}
	var raw map[string]any
	f.want(f.do("PUT", "/connector-plugins/iceberg/config/validate", `{"tasks.max": "1"}`), http.StatusOK, &raw)
	if raw["error_count"] != float64(0) || raw["groups"] == nil {
		t.Errorf("valid answer = %v", raw)
	}
	cfgs, _ := raw["configs"].([]any)
	first, _ := cfgs[0].(map[string]any)
	value, _ := first["value"].(map[string]any)
	if errs, ok := value["errors"].([]any); !ok || len(errs) != 0 {
		t.Errorf("value.errors = %v, want []", value["errors"])
	}
	if got := f.w.calls[len(f.w.calls)-1]; got != "validate iceberg iceberg" {
		t.Errorf("connector.class not filled in: %q", got)
	}

	f.want(f.do("PUT", "/connector-plugins/iceberg/config/validate",
		`{"connector.class": "org.apache.iceberg.connect.IcebergSinkConnector"}`), http.StatusOK, nil)
	f.wantError(f.do("PUT", "/connector-plugins/iceberg/config/validate", `{"connector.class": "datagen"}`),
		http.StatusBadRequest, "Included connector type datagen does not match request type iceberg")
	// Any of a plugin's names matches any other (the listing's class is
	// the Connect class, floe's name is under floe); two plugins do not.
	f.want(f.do("PUT", "/connector-plugins/IcebergSinkConnector/config/validate", `{"connector.class": "iceberg"}`), http.StatusOK, nil)
	f.wantError(f.do("PUT", "/connector-plugins/org.apache.iceberg.connect.IcebergSinkConnector/config/validate", `{"connector.class": "datagen"}`),
		http.StatusBadRequest, "Included connector type datagen does not match")
	f.wantError(f.do("PUT", "/connector-plugins/iceberg/config/validate", `{"tasks.max": 1,}`), http.StatusBadRequest, "line 1, column 17")
	f.wantError(f.do("PUT", "/connector-plugins/nope/config/validate", `{}`), http.StatusNotFound, "nope")
	f.wantError(f.do("POST", "/connector-plugins/iceberg/config/validate", `{}`), http.StatusMethodNotAllowed)
}

func TestLoggers(t *testing.T) {
	f := newFixture(t)
	f.loggers.Logger("floe.worker")
	f.loggers.Logger("floe.worker.connector")

	var all map[string]LoggerLevel
	f.want(f.do("GET", "/admin/loggers", nil), http.StatusOK, &all)
	if all["root"].Level != "INFO" || all["floe.worker"].Level != "INFO" || all["floe.rest"].Level != "INFO" || all["root"].LastModified != nil {
		t.Fatalf("loggers = %+v", all)
	}
	rec := f.do("GET", "/admin/loggers/floe.worker", nil)
	f.want(rec, http.StatusOK, nil)
	if strings.TrimSpace(rec.Body.String()) != `{"level":"INFO","last_modified":null}` {
		t.Errorf("logger = %s", rec.Body)
	}
	f.wantError(f.do("GET", "/admin/loggers/nope", nil), http.StatusNotFound, "Logger nope not found", "floe.worker")

	var affected []string
	f.want(f.do("PUT", "/admin/loggers/floe.worker", `{"level": "debug"}`), http.StatusOK, &affected)
	if !reflect.DeepEqual(affected, []string{"floe.worker", "floe.worker.connector"}) {
		t.Errorf("affected = %v", affected)
	}
	var lv LoggerLevel
	f.want(f.do("GET", "/admin/loggers/floe.worker.connector", nil), http.StatusOK, &lv)
	if lv.Level != "DEBUG" || lv.LastModified == nil {
		t.Errorf("child level = %+v", lv)
	}
	f.want(f.do("PUT", "/admin/loggers", `{"level": "WARN"}`), http.StatusOK, &affected)
	if len(affected) != 4 {
		t.Errorf("root affected = %v", affected)
	}
	f.wantError(f.do("PUT", "/admin/loggers/floe", `{}`), http.StatusBadRequest, "'level'")
	f.wantError(f.do("PUT", "/admin/loggers/floe", `{"level": "LOUD"}`), http.StatusNotFound, "invalid log level 'LOUD'")
	f.wantError(f.do("PUT", "/admin/loggers/floe", `{"level":`), http.StatusBadRequest, "malformed JSON")
	f.wantError(f.do("DELETE", "/admin/loggers/floe", nil), http.StatusMethodNotAllowed)
}

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	rec := f.do("GET", "/metrics", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "floe_records_in_total 42") {
		t.Fatalf("metrics: %d %s", rec.Code, rec.Body)
	}
	h := New(Options{Worker: newFakeWorker()})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("metrics without a registry: %d", rec.Code)
	}
}

func TestRouting(t *testing.T) {
	f := newFixture(t)
	f.wantError(f.do("GET", "/nope", nil), http.StatusNotFound, "no endpoint /nope")
	f.wantError(f.do("GET", "/connectors/a/b/c", nil), http.StatusNotFound)
	rec := f.do("DELETE", "/connectors", nil)
	f.wantError(rec, http.StatusMethodNotAllowed, "DELETE /connectors")
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow = %q", allow)
	}
	f.wantError(f.do("POST", "/connectors/x/config", `{}`), http.StatusMethodNotAllowed)
	f.wantError(f.do("GET", "/connectors/x/restart", nil), http.StatusMethodNotAllowed)
	f.wantError(f.do("PUT", "/health", nil), http.StatusMethodNotAllowed)
}

func TestRequestLogging(t *testing.T) {
	f := newFixture(t)
	f.loggers.SetLevel("floe.rest", slog.LevelDebug)
	f.create("orders", ordersConfig())
	logs := f.logs.String()
	if !strings.Contains(logs, `"msg":"REST request"`) || !strings.Contains(logs, `"status":201`) || !strings.Contains(logs, `"logger":"floe.rest"`) {
		t.Errorf("request log missing: %s", logs)
	}
	if strings.Contains(logs, "hunter2") || strings.Contains(logs, "s3cret") {
		t.Errorf("a secret reached the log: %s", logs)
	}
	f.logs.Reset()
	f.loggers.SetLevel("floe.rest", slog.LevelInfo)
	f.do("GET", "/connectors", nil)
	if f.logs.Len() != 0 {
		t.Errorf("request logged at info: %s", f.logs)
	}
}

// panicky panics in ServerInfo.
type panicky struct{ *fakeWorker }

func (panicky) ServerInfo(context.Context) worker.ServerInfo { panic("kaput") }

func TestPanic(t *testing.T) {
	h := New(Options{Worker: panicky{newFakeWorker()}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"error_code":500`) {
		t.Errorf("panic answer: %d %s", rec.Code, rec.Body)
	}
}

func TestListenServe(t *testing.T) {
	ls, err := Listen([]string{"http://127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, New(Options{Worker: newFakeWorker()}), ls, nil) }()
	resp, err := http.Get(URL(ls[0]) + "/")
	if err != nil {
		t.Fatal(err)
	}
	var info worker.ServerInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || info.Version != ConnectVersion {
		t.Errorf("GET / over TCP: %+v %v", info, err)
	}
	_ = resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx ended")
	}

	for _, tc := range []struct{ in, want string }{
		{"https://127.0.0.1:0", "listeners.https.ssl.certificate.location"},
		{"ftp://127.0.0.1:0", "not supported"},
		{"127.0.0.1:8083", "not a URL"},
		{"http://256.1.1.1:1", "listener"},
	} {
		if _, err := Listen([]string{tc.in}, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Listen(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := Listen(nil, nil); err == nil || !strings.Contains(err.Error(), "listeners") {
		t.Errorf("Listen(nil) = %v", err)
	}
}
