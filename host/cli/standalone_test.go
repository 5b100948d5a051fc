package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/host/rest"
	"github.com/floehq/floe/host/store"
	"github.com/floehq/floe/host/worker"
)

// standaloneDir is a temporary worker setup: worker.json listening on a
// free port, a data dir and a watched config dir.
type standaloneDir struct {
	dir, workerFile, configDir string
}

func newStandaloneDir(t *testing.T, extra string) standaloneDir {
	t.Helper()
	dir := t.TempDir()
	d := standaloneDir{dir: dir, workerFile: filepath.Join(dir, "worker.json"), configDir: filepath.Join(dir, "connectors")}
	body := fmt.Sprintf(`{"listeners": "http://127.0.0.1:0", "plugin.path": %q, "data.dir": %q, "config.dir": %q%s}`,
		filepath.Join(dir, "plugins"), filepath.Join(dir, "data"), d.configDir, extra)
	d.write(t, "worker.json", body)
	return d
}

func (d standaloneDir) write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(d.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fakeApp(w *fakeWorker) *App {
	return &App{newWorker: func(ctx context.Context, wc worker.Config, logs *rest.Loggers) (runningWorker, error) {
		return w, nil
	}}
}

func TestStandaloneExitWhenDone(t *testing.T) {
	d := newStandaloneDir(t, "")
	file := d.write(t, "orders.json", `{"name": "orders", "config": {"connector.class": "iceberg", "tasks.max": "1", "fake.records": "5000"}}`)
	d.write(t, "connectors/clicks.json", `{"connector.class": "iceberg", "fake.records": "3000"}`)
	w := newFakeWorker()
	r := runApp(t, fakeApp(w), "standalone", d.workerFile, file, "--exit-when-done", "--progress")
	r.wants(t, 0, []string{"records", "commits", "files", "checkpoint", "elapsed"}, []string{"REST API listening", "connector started from file", "worker stopped"})
	if !w.isClosed() {
		t.Error("the worker was not closed")
	}
	if w.config("orders")["name"] != "orders" || w.config("clicks") == nil {
		t.Errorf("connectors: %v", w.Connectors(context.Background()))
	}
	if !strings.Contains(r.stdout, "5,000 records") && !strings.Contains(r.stdout, "8,000 records") {
		t.Errorf("final progress line lacks the record total: %s", r.stdout)
	}
}

func TestStandaloneExistingConnectorGetsFileConfig(t *testing.T) {
	d := newStandaloneDir(t, "")
	file := d.write(t, "orders.json", `{"name": "orders", "config": {"tasks.max": "2", "fake.records": "1"}}`)
	w := newFakeWorker()
	w.connectors["orders"] = &fakeConnector{config: map[string]string{"tasks.max": "1"}, state: worker.StateRunning}
	runApp(t, fakeApp(w), "standalone", d.workerFile, file, "--exit-when-done").wants(t, 0, nil, nil)
	if got := w.config("orders")["tasks.max"]; got != "2" {
		t.Errorf("tasks.max = %q, want the file's 2", got)
	}
}

func TestStandaloneTaskFailure(t *testing.T) {
	d := newStandaloneDir(t, "")
	file := d.write(t, "bad.json", `{"name": "bad", "config": {"fake.fail": "java.lang.Nope: table demo.orders: boom"}}`)
	w := newFakeWorker()
	r := runApp(t, fakeApp(w), "standalone", d.workerFile, file, "--exit-when-done")
	r.wants(t, 1, nil, []string{"connector bad task 0 FAILED", "table demo.orders: boom"})
	if !w.isClosed() {
		t.Error("the worker was not closed after a failure")
	}
}

func TestStandaloneNoConnectors(t *testing.T) {
	d := newStandaloneDir(t, "")
	runApp(t, fakeApp(newFakeWorker()), "standalone", d.workerFile, "--exit-when-done").
		wants(t, 1, nil, []string{"no connectors to wait for"})
}

func TestStandaloneErrors(t *testing.T) {
	d := newStandaloneDir(t, "")
	app := fakeApp(newFakeWorker())
	malformed := d.write(t, "m.json", "{\n  \"name\": \"m\",\n  \"config\": {\"a\": \"b\",}\n}")
	runApp(t, app, "standalone", d.workerFile, malformed).wants(t, 1, nil, []string{"m.json", "line 3, column 23"})
	invalid := d.write(t, "i.json", `{"name": "i", "config": {"tasks.max": "x"}}`)
	runApp(t, app, "standalone", d.workerFile, invalid).wants(t, 1, nil, []string{"i.json", "connector i is not valid", `tasks.max: invalid int value "x"`})
	runApp(t, app, "standalone", filepath.Join(d.dir, "nope.json")).wants(t, 1, nil, []string{"nope.json", "give the path of a worker config"})
	badWorker := d.write(t, "bw.json", "{\n \"data.dir\": 5\n}")
	runApp(t, app, "standalone", badWorker).wants(t, 1, nil, []string{"bw.json", `"data.dir" is 5, not a string`})
	noData := d.write(t, "nd.json", `{"listeners": "http://127.0.0.1:0"}`)
	runApp(t, app, "standalone", noData, "x.json").wants(t, 1, nil, []string{"x.json"})
	unknown := d.write(t, "uk.json", `{"data.dirr": "x"}`)
	runApp(t, app, "standalone", unknown).wants(t, 1, nil, []string{"uk.json", `unknown key "data.dirr"`, `did you mean "data.dir"`})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	busy := d.write(t, "busy.json", fmt.Sprintf(`{"listeners": "http://%s", "data.dir": %q}`, l.Addr(), d.dir))
	started := false
	app = &App{newWorker: func(context.Context, worker.Config, *rest.Loggers) (runningWorker, error) {
		started = true
		return newFakeWorker(), nil
	}}
	runApp(t, app, "standalone", busy).wants(t, 1, nil, []string{"listener", "change \"listeners\""})
	if started {
		t.Error("the worker (and its stored connectors) started although the REST port was busy")
	}
}

// A second standalone on a data dir in use fails at once, naming the dir
// and the pid holding it, and starts nothing.
func TestStandaloneDataDirInUse(t *testing.T) {
	d := newStandaloneDir(t, "")
	lock, err := store.LockDataDir(filepath.Join(d.dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Unlock() }()
	started := false
	app := &App{newWorker: func(context.Context, worker.Config, *rest.Loggers) (runningWorker, error) {
		started = true
		return newFakeWorker(), nil
	}}
	runApp(t, app, "standalone", d.workerFile).wants(t, 1, nil, []string{"data dir", fmt.Sprintf("pid %d", os.Getpid()), "its own data.dir"})
	if started {
		t.Error("the worker started on a data dir in use")
	}
}

var urlRE = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)`)

func TestStandaloneServesUntilSignal(t *testing.T) {
	d := newStandaloneDir(t, "")
	w := newFakeWorker()
	app := fakeApp(w)
	var out, errOut syncBuffer
	app.Stdout, app.Stderr = &out, &errOut
	app.Getenv = func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- app.Run(ctx, []string{"standalone", d.workerFile, "--log-level", "debug"}) }()

	var base string
	deadline := time.Now().Add(10 * time.Second)
	for base == "" && time.Now().Before(deadline) {
		if m := urlRE.FindStringSubmatch(errOut.String()); m != nil {
			base = m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	if base == "" {
		cancel()
		t.Fatalf("no REST URL logged: %s", errOut.String())
	}
	// A file dropped into the watched folder becomes a connector the REST
	// API lists.
	d.write(t, "connectors/dropped.json", `{"name": "dropped", "config": {"connector.class": "iceberg"}}`)
	var names []string
	for time.Now().Before(deadline) {
		names = getJSONList(t, base+"/connectors")
		if len(names) == 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(names) != 1 || names[0] != "dropped" {
		t.Errorf("GET /connectors = %v", names)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %v %v", resp, err)
	}
	if resp != nil {
		_ = resp.Body.Close()
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after the signal; stderr: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("standalone did not stop after the signal")
	}
	if !w.isClosed() {
		t.Error("worker not closed")
	}
	if !strings.Contains(errOut.String(), "REST request") {
		t.Errorf("no debug request log: %s", errOut.String())
	}
}

func getJSONList(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	var out []string
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s: %s: %v", url, body, err)
	}
	return out
}

func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &progressLine{start: start}
	p.render(totals{records: 0}, start, false)
	line := p.render(totals{records: 1_000_000, commits: 3, files: 12, checkpoint: 4}, start.Add(2*time.Second), false)
	for _, s := range []string{"500,000 rec/s", "1,000,000 records", "3 commits", "12 files", "checkpoint 4", "0:02 elapsed"} {
		if !strings.Contains(line, s) {
			t.Errorf("line %q lacks %q", line, s)
		}
	}
	if final := p.render(totals{records: 1_000_000}, start.Add(4*time.Second), true); !strings.Contains(final, "250,000 rec/s average") {
		t.Errorf("final line %q", final)
	}
	if got := clock(3725 * time.Second); got != "1:02:05" {
		t.Errorf("clock = %q", got)
	}

	var buf syncBuffer
	w := newFakeWorker()
	w.connectors["c"] = &fakeConnector{config: map[string]string{}, state: worker.StateRunning}
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	live := &liveLine{out: &buf}
	var logBuf syncBuffer
	lw := live.logWriter(&logBuf)
	go func() {
		time.Sleep(700 * time.Millisecond)
		if _, err := lw.Write([]byte("a log line\n")); err != nil {
			t.Error(err)
		}
	}()
	showProgress(ctx, &buf, live, w, time.Now())
	out := buf.String()
	if strings.Count(out, "\r") < 4 || !strings.Contains(out, "\x1b[K") || !strings.HasSuffix(out, "\n") || !strings.Contains(out, "\r\x1b[K\r") {
		t.Errorf("terminal progress = %q", out)
	}
	if logBuf.String() != "a log line\n" {
		t.Errorf("log = %q", logBuf.String())
	}
}

// TestServerInfoShowsCommit runs the real worker: GET / answers the
// version and commit set at build time (the Makefile's -X flags).
func TestServerInfoShowsCommit(t *testing.T) {
	oldV, oldC := Version, Commit
	Version, Commit = "1.2.3", "abc1234"
	t.Cleanup(func() { Version, Commit = oldV, oldC })
	runApp(t, nil, "version").wants(t, 0, []string{"floe 1.2.3 (commit abc1234)"}, nil)

	d := newStandaloneDir(t, "")
	app := &App{}
	var out, errOut syncBuffer
	app.Stdout, app.Stderr = &out, &errOut
	app.Getenv = func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- app.Run(ctx, []string{"standalone", d.workerFile}) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("standalone did not stop")
		}
	}()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(errOut.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("no REST URL logged: %s", errOut.String())
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var info map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	// version is the Connect API's (clients parse it as Kafka's); floe's
	// own is in the X-Floe-Version header.
	if info["version"] != rest.ConnectVersion || info["commit"] != "abc1234" || resp.Header.Get(rest.VersionHeader) != "1.2.3" {
		t.Errorf("GET / = %v with %s %q, want version %s, commit abc1234 and floe's 1.2.3 in the header",
			info, rest.VersionHeader, resp.Header.Get(rest.VersionHeader), rest.ConnectVersion)
	}
}

// While the worker loads its stored connectors the REST API already
// answers, with 503, a JSON body and Retry-After, and only after the
// worker is up does it answer from the worker.
func TestStandaloneAnswers503WhileStarting(t *testing.T) {
	d := newStandaloneDir(t, "")
	w := newFakeWorker()
	w.connectors["stored"] = &fakeConnector{config: map[string]string{"connector.class": "iceberg"}, state: worker.StateRunning}
	release := make(chan struct{})
	app := &App{newWorker: func(context.Context, worker.Config, *rest.Loggers) (runningWorker, error) {
		<-release // the stored connectors are loading
		return w, nil
	}}
	var out, errOut syncBuffer
	app.Stdout, app.Stderr = &out, &errOut
	app.Getenv = func(string) string { return "" }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- app.Run(ctx, []string{"standalone", d.workerFile}) }()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("standalone did not stop")
		}
	}()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := urlRE.FindStringSubmatch(errOut.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("no REST URL logged: %s", errOut.String())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(method, path string) (int, http.Header, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{"name": "early", "config": {"connector.class": "iceberg"}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		var doc map[string]any
		_ = json.Unmarshal(body, &doc)
		return resp.StatusCode, resp.Header, doc
	}

	code, h, doc := get("GET", "/health")
	if code != http.StatusServiceUnavailable || doc["status"] != "starting" || h.Get("Retry-After") == "" {
		t.Errorf("GET /health while starting = %d %v (Retry-After %q), want 503 starting", code, doc, h.Get("Retry-After"))
	}
	for _, p := range [][2]string{{"GET", "/connectors"}, {"GET", "/connectors/stored/status"}, {"POST", "/connectors"}, {"PUT", "/connectors/stored/pause"}} {
		code, h, doc := get(p[0], p[1])
		if code != http.StatusServiceUnavailable || doc["error_code"] != float64(503) || !strings.Contains(fmt.Sprint(doc["message"]), "starting up") || h.Get("Retry-After") == "" {
			t.Errorf("%s %s while starting = %d %v (Retry-After %q), want Connect's 503 error", p[0], p[1], code, doc, h.Get("Retry-After"))
		}
	}

	close(release)
	released = true
	var names []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := client.Get(base + "/connectors")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &names); err != nil {
				t.Fatalf("GET /connectors: %s: %v", body, err)
			}
			break
		}
	}
	if len(names) != 1 || names[0] != "stored" {
		t.Errorf("GET /connectors once started = %v, want [stored] (a POST while starting must not reach the worker)", names)
	}
	if code, _, doc := get("GET", "/health"); code != http.StatusOK || doc["status"] != "healthy" {
		t.Errorf("GET /health once started = %d %v", code, doc)
	}
}
