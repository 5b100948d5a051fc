package standalone

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/host/worker"
)

// fakeTarget records what the folder asks of the worker. It refuses
// configs whose tasks.max is "bad", as a worker's validation would.
type fakeTarget struct {
	mu         sync.Mutex
	connectors map[string]map[string]string
	states     map[string]worker.State
	calls      []string
}

func newFakeTarget() *fakeTarget {
	return &fakeTarget{connectors: map[string]map[string]string{}, states: map[string]worker.State{}}
}

func (f *fakeTarget) CreateConnector(ctx context.Context, name string, config map[string]string, initial worker.State) (worker.ConnectorInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create "+name)
	if _, ok := f.connectors[name]; ok {
		return worker.ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, worker.ErrExists)
	}
	if config["tasks.max"] == "bad" {
		return worker.ConnectorInfo{}, &worker.ValidationError{}
	}
	f.connectors[name] = maps.Clone(config)
	f.states[name] = initial
	return worker.ConnectorInfo{Name: name}, nil
}

func (f *fakeTarget) PutConnectorConfig(ctx context.Context, name string, config map[string]string) (worker.ConnectorInfo, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "put "+name)
	if config["tasks.max"] == "bad" {
		return worker.ConnectorInfo{}, false, fmt.Errorf("tasks.max: invalid int value \"bad\"")
	}
	_, ok := f.connectors[name]
	f.connectors[name] = maps.Clone(config)
	return worker.ConnectorInfo{Name: name}, !ok, nil
}

func (f *fakeTarget) DeleteConnector(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete "+name)
	if _, ok := f.connectors[name]; !ok {
		return fmt.Errorf("connector %s: %w", name, worker.ErrNotFound)
	}
	delete(f.connectors, name)
	return nil
}

func (f *fakeTarget) config(name string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.connectors[name])
}

func (f *fakeTarget) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// folder runs Watch on a temporary folder.
type folder struct {
	t      *testing.T
	dir    string
	target *fakeTarget
	events chan string
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func startFolder(t *testing.T, target *fakeTarget, prepare func(dir string)) *folder {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "connectors")
	if prepare != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		prepare(dir)
	}
	f := &folder{t: t, dir: dir, target: target, events: make(chan string, 100), logs: &syncBuffer{}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() {
		f.done <- Watch(ctx, dir, target, Options{
			Debounce: 50 * time.Millisecond,
			Logger:   slog.New(slog.NewTextHandler(f.logs, nil)),
			Applied: func(file string, err error) {
				msg := filepath.Base(file) + " ok"
				if err != nil {
					msg = filepath.Base(file) + " error: " + err.Error()
				}
				f.events <- msg
			},
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-f.done:
			if err != nil {
				t.Errorf("Watch = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Watch did not return")
		}
	})
	return f
}

// wait returns the next handled-file event.
func (f *folder) wait() string {
	f.t.Helper()
	select {
	case e := <-f.events:
		return e
	case <-time.After(5 * time.Second):
		f.t.Fatal("no file event within 5 s")
	}
	return ""
}

// quiet checks no further event comes.
func (f *folder) quiet() {
	f.t.Helper()
	select {
	case e := <-f.events:
		f.t.Fatalf("unexpected event %q", e)
	case <-time.After(200 * time.Millisecond):
	}
}

func (f *folder) write(name, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func connectorJSON(name, tasks string) string {
	return fmt.Sprintf(`{"name": %q, "config": {"connector.class": "iceberg", "tasks.max": %q}}`, name, tasks)
}

func waitWatching(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(dir); err == nil {
			time.Sleep(50 * time.Millisecond) // let fsnotify attach
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("folder not created")
}

func TestWatchLifecycle(t *testing.T) {
	target := newFakeTarget()
	f := startFolder(t, target, nil)
	waitWatching(t, f.dir)

	f.write("orders.json", connectorJSON("orders", "1"))
	if e := f.wait(); e != "orders.json ok" {
		t.Fatalf("event %q", e)
	}
	if got := target.takeCalls(); len(got) != 1 || got[0] != "create orders" {
		t.Fatalf("calls %q", got)
	}

	f.write("orders.json", connectorJSON("orders", "2"))
	f.wait()
	if got := target.config("orders")["tasks.max"]; got != "2" {
		t.Errorf("tasks.max after edit = %q", got)
	}
	if got := target.takeCalls(); len(got) != 1 || got[0] != "put orders" {
		t.Errorf("calls %q", got)
	}

	// A broken edit keeps the previous config and names the file and line.
	f.write("orders.json", "{\n  \"name\": \"orders\",\n  \"config\": {\"tasks.max\": \"3\",}\n}")
	if e := f.wait(); !strings.Contains(e, "orders.json") || !strings.Contains(e, "line 3, column 31") {
		t.Errorf("event %q", e)
	}
	if got := target.config("orders")["tasks.max"]; got != "2" {
		t.Errorf("tasks.max after a broken edit = %q, want 2 (the previous config)", got)
	}
	if !strings.Contains(f.logs.String(), "keeps its previous config") {
		t.Errorf("logs: %s", f.logs)
	}
	// A config the worker refuses: logged, previous config kept.
	f.write("orders.json", connectorJSON("orders", "bad"))
	if e := f.wait(); !strings.Contains(e, "invalid int") {
		t.Errorf("event %q", e)
	}
	// Going back to the config the connector has does nothing, nor does
	// touching the file.
	target.takeCalls()
	f.write("orders.json", connectorJSON("orders", "2"))
	f.wait()
	f.write("orders.json", connectorJSON("orders", "2"))
	f.wait()
	if got := target.takeCalls(); len(got) != 0 {
		t.Errorf("calls after re-writing the applied config: %q", got)
	}

	if err := os.Remove(filepath.Join(f.dir, "orders.json")); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if got := target.takeCalls(); len(got) != 1 || got[0] != "delete orders" {
		t.Errorf("calls after removal %q", got)
	}
}

func TestWatchDebounce(t *testing.T) {
	target := newFakeTarget()
	f := startFolder(t, target, nil)
	waitWatching(t, f.dir)
	for i := range 10 {
		f.write("c.json", connectorJSON("c", fmt.Sprint(i)))
		time.Sleep(5 * time.Millisecond)
	}
	f.wait()
	f.quiet()
	if got := target.takeCalls(); len(got) != 1 {
		t.Errorf("10 quick writes made %d calls: %q", len(got), got)
	}
	if got := target.config("c")["tasks.max"]; got != "9" {
		t.Errorf("tasks.max = %q, want the last write", got)
	}
}

func TestWatchEditorRename(t *testing.T) {
	target := newFakeTarget()
	f := startFolder(t, target, nil)
	waitWatching(t, f.dir)
	f.write("c.json", connectorJSON("c", "1"))
	f.wait()
	// Save as an editor does: write a temporary file, rename it over.
	tmp := filepath.Join(f.dir, ".c.json.swp")
	if err := os.WriteFile(tmp, []byte(connectorJSON("c", "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, "c.json")); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if got := target.config("c")["tasks.max"]; got != "2" {
		t.Errorf("tasks.max = %q", got)
	}
	// Moving it away deletes the connector.
	if err := os.Rename(filepath.Join(f.dir, "c.json"), filepath.Join(f.dir, "c.json.off")); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if target.config("c") != nil {
		t.Errorf("connector c still exists after its file moved away")
	}
}

func TestWatchStartupAndConflicts(t *testing.T) {
	target := newFakeTarget()
	// A connector that exists already (from the command line) is taken
	// over by its file.
	target.connectors["cli"] = map[string]string{"name": "cli", "tasks.max": "1"}
	f := startFolder(t, target, func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"name": "a", "config": {"connector.class": "iceberg"}, "initial_state": "PAUSED"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cli.json"), []byte(connectorJSON("cli", "2")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a connector"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	got := map[string]bool{f.wait(): true, f.wait(): true}
	if !got["a.json ok"] || !got["cli.json ok"] {
		t.Fatalf("startup events %v", got)
	}
	if target.states["a"] != worker.StatePaused {
		t.Errorf("a's state %s, want PAUSED", target.states["a"])
	}
	if target.config("cli")["tasks.max"] != "2" {
		t.Errorf("cli not taken over: %v", target.config("cli"))
	}
	f.write("b.json", `{"name": "a", "config": {}}`)
	if e := f.wait(); !strings.Contains(e, "already defined by") || !strings.Contains(e, "a.json") {
		t.Errorf("duplicate name event %q", e)
	}
	// Renaming the connector inside its file replaces it.
	f.write("a.json", `{"name": "a2", "config": {"connector.class": "iceberg"}}`)
	f.wait()
	if target.config("a") != nil || target.config("a2") == nil {
		t.Errorf("rename: a=%v a2=%v", target.config("a"), target.config("a2"))
	}
}
