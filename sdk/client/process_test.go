package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

func start(t *testing.T, opts client.StartOptions) *client.Process {
	t.Helper()
	if opts.Path == "" {
		opts.Path = testPlugin
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p, err := client.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// fakeHost is a SourceHost that answers from fixed positions.
type fakeHost struct {
	mu        sync.Mutex
	positions map[string]int64
	admitted  []int64
	reject    bool
}

func (h *fakeHost) StartPositions(context.Context, []string) (map[string]int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.positions, nil
}
func (h *fakeHost) PartitionsRevoked(context.Context, map[string]int64) error { return nil }
func (h *fakeHost) AdmitSchema(_ context.Context, s client.Schema) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.admitted = append(h.admitted, s.ID)
	if h.reject {
		return sdk.RejectSchema("column payload: binary cannot become int")
	}
	return nil
}
func (h *fakeHost) DeadLetter(context.Context, []sdk.DeadLetter) error { return nil }

func openCounter(t *testing.T, p *client.Process, h client.SourceHost, config map[string]string) *client.SourceTask {
	t.Helper()
	task, err := p.OpenSource(t.Context(), client.SourceOpen{
		Component: "counter", Connector: "orders", Task: 0, Tasks: 1, Config: config, Host: h,
	})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestStartDescribeRead(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	sum := sha256Of(t, testPlugin)
	p := start(t, client.StartOptions{Checksum: sum, Logger: logger})
	ctx := context.Background()

	comps, err := p.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 1 || comps[0].Name != "counter" || comps[0].Kind != sdk.KindSource || comps[0].Version != "1.0.0" {
		t.Fatalf("Describe = %+v", comps)
	}
	var token sdk.Field
	for _, f := range comps[0].Fields {
		if f.Name == "token" {
			token = f
		}
	}
	if token.Type != sdk.TypePassword || !token.Secret {
		t.Errorf("token field = %+v, want a secret PASSWORD", token)
	}
	errs, err := p.Validate(ctx, sdk.KindSource, "counter", map[string]string{"batch.records": "many"})
	if err != nil || len(errs) != 1 || errs[0].Key != "batch.records" {
		t.Errorf("Validate = %v, %v; want one error on batch.records", errs, err)
	}

	h := &fakeHost{positions: map[string]int64{"p0": 100}}
	task := openCounter(t, p, h, map[string]string{"batch.records": "10"})
	res, err := task.Read(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Batches) != 3 {
		t.Fatalf("Read returned %d batches, want 3", len(res.Batches))
	}
	next := int64(100)
	for _, b := range res.Batches {
		if b.From != next || b.Next != next+10 || b.NumRecords != 10 || b.SchemaID != 7 {
			t.Errorf("batch %+v does not continue at %d", b, next)
		}
		next = b.Next
		rec, err := b.Decode(nil)
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() != 10 || rec.Schema().Field(1).Name != sdk.ColumnOffset {
			t.Errorf("decoded %d rows, schema %s", rec.NumRows(), rec.Schema())
		}
		rec.Release()
	}
	if len(h.admitted) != 1 || h.admitted[0] != 7 {
		t.Errorf("AdmitSchema calls = %v, want [7]", h.admitted)
	}
	if err := task.Commit(ctx, map[string]int64{"p0": next}); err != nil {
		t.Error(err)
	}
	if err := task.Close(ctx); err != nil {
		t.Error(err)
	}
	p.Kill()
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("Exited not closed after Kill")
	}
	if r := p.ExitReason(); !strings.Contains(r, "killed by floe") {
		t.Errorf("ExitReason = %q, want it to say floe killed it", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), `"msg":"counter opened"`) || !strings.Contains(logs.String(), `"connector":"orders"`) {
		t.Errorf("the plugin's log line did not reach the host logger with its attributes:\n%s", logs.String())
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "floe-plugin-notexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "floe-plugin-chatty")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hello there\nsleep 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts client.StartOptions
		want []string
	}{
		{"missing", client.StartOptions{Path: filepath.Join(dir, "floe-plugin-nope")}, []string{"floe-plugin-nope", "no such file"}},
		{"not executable", client.StartOptions{Path: notExec}, []string{"not executable", "chmod +x " + notExec}},
		{"exits at start", client.StartOptions{Path: testPlugin, Env: []string{"TESTPLUGIN_EXIT_AT_START=1"}},
			[]string{testPlugin, "exited before the handshake", "exit status 3", "configuration file missing"}},
		{"checksum", client.StartOptions{Path: testPlugin, Checksum: make([]byte, 32)},
			[]string{testPlugin, "changed since it was scanned", "restart floe or re-scan"}},
		{"not a plugin", client.StartOptions{Path: script}, []string{script, `printed "hello there"`, "sdk.Serve"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, err := client.Start(ctx, tc.opts)
			if err == nil {
				p.Kill()
				t.Fatal("Start succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEnvAndNice(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	p := start(t, client.StartOptions{Env: []string{"FLOE_TEST_MARK=42"}, Nice: 5})
	env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(env, []byte("FLOE_TEST_MARK=42")) {
		t.Error("Env did not reach the plugin process")
	}
	// Every thread, not only the main one: the Go runtime runs the
	// plugin's work on threads it started before the handshake. A task
	// makes the plugin start more threads after the niceness was set.
	task := openCounter(t, p, &fakeHost{}, nil)
	if _, err := task.Read(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	dir := "/proc/" + strconv.Itoa(p.Pid()) + "/task"
	tids, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tids) < 2 {
		t.Fatalf("%d threads; want the Go runtime's several", len(tids))
	}
	for _, tid := range tids {
		stat, err := os.ReadFile(dir + "/" + tid.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		// Fields after the command name: state is 3rd, nice is 19th.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if nice := fields[16]; nice != "5" {
			t.Errorf("thread %s: niceness = %s, want 5", tid.Name(), nice)
		}
	}
}

func TestPluginFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("panic is an error, the process lives", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		task := openCounter(t, p, &fakeHost{}, map[string]string{"fail": "panic"})
		_, err := task.Read(ctx, 1)
		if err == nil || !strings.Contains(err.Error(), "panicked") || !strings.Contains(err.Error(), "deliberate panic") {
			t.Fatalf("Read error = %v, want the panic", err)
		}
		if _, err := p.Describe(ctx); err != nil {
			t.Fatalf("process did not survive the panic: %v", err)
		}
	})
	t.Run("error keeps its message", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		task := openCounter(t, p, &fakeHost{}, map[string]string{"fail": "error"})
		_, err := task.Read(ctx, 1)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Message != "counter: deliberate failure at offset 0" {
			t.Fatalf("Read error = %#v", err)
		}
		if want := `plugin floe-plugin-clienttest: source "counter" task 0 of connector "orders": read: counter: deliberate failure at offset 0`; err.Error() != want {
			t.Errorf("error text\n got %s\nwant %s", err, want)
		}
	})
	t.Run("transient and permanent marks cross", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		for mode, want := range map[string]error{"transient": sdk.ErrTransient, "permanent": sdk.ErrPermanent} {
			task := openCounter(t, p, &fakeHost{}, map[string]string{"fail": mode})
			start := time.Now()
			_, err := task.Read(ctx, 1)
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Exited || !errors.Is(err, want) {
				t.Fatalf("%s: Read error = %v, want %v, the process alive", mode, err, want)
			}
			other := sdk.ErrPermanent
			if mode == "permanent" {
				other = sdk.ErrTransient
			}
			if errors.Is(err, other) || errors.Is(err, sdk.ErrSchemaRejected) {
				t.Errorf("%s: error %v is also %v", mode, err, other)
			}
			if took := time.Since(start); took > 400*time.Millisecond {
				t.Errorf("%s: took %v: a marked error waited for a process exit", mode, took)
			}
		}
	})
	t.Run("exit during a call", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		task := openCounter(t, p, &fakeHost{}, map[string]string{"fail": "exit"})
		_, err := task.Read(ctx, 1)
		var ce *client.Error
		if !errors.As(err, &ce) || !ce.Exited {
			t.Fatalf("Read error = %v, want one saying the process exited", err)
		}
		if !strings.Contains(err.Error(), "exit status 2") || !strings.Contains(err.Error(), "counter: giving up") {
			t.Errorf("error %q lacks the exit status and last line", err)
		}
		select {
		case <-p.Exited():
		case <-time.After(5 * time.Second):
			t.Fatal("Exited not closed")
		}
		if r := p.ExitReason(); !strings.Contains(r, "exit status 2") {
			t.Errorf("ExitReason = %q", r)
		}
	})
	t.Run("panic in a goroutine", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		task := openCounter(t, p, &fakeHost{}, map[string]string{"fail": "gopanic"})
		_, err := task.Read(ctx, 1)
		var ce *client.Error
		if !errors.As(err, &ce) || !ce.Exited {
			t.Fatalf("Read error = %v, want one saying the process exited", err)
		}
		<-p.Exited()
		r := p.ExitReason()
		for _, want := range []string{"exit status 2", "panic: counter: goroutine panic", "main.deepPanic"} {
			if !strings.Contains(r, want) {
				t.Errorf("ExitReason lacks %q:\n%s", want, r)
			}
		}
	})
	t.Run("invalid config names the key", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		_, err := p.OpenSource(ctx, client.SourceOpen{Component: "counter", Connector: "c", Tasks: 1,
			Config: map[string]string{"batch.records": "0", "fail": "sometimes"}, Host: &fakeHost{}})
		var ce *client.Error
		if !errors.As(err, &ce) || len(ce.ConfigErrors) != 2 {
			t.Fatalf("OpenSource error = %v, want two config errors", err)
		}
		if ce.ConfigErrors[0].Key != "batch.records" || ce.ConfigErrors[1].Key != "fail" {
			t.Errorf("ConfigErrors = %+v", ce.ConfigErrors)
		}
		if !strings.Contains(err.Error(), "batch.records: must be at least 1") {
			t.Errorf("error %q does not explain batch.records", err)
		}
	})
	t.Run("rejected schema", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		task := openCounter(t, p, &fakeHost{reject: true}, nil)
		_, err := task.Read(ctx, 1)
		if !errors.Is(err, sdk.ErrSchemaRejected) || !strings.Contains(err.Error(), "binary cannot become int") {
			t.Fatalf("Read error = %v, want ErrSchemaRejected with the host's reason", err)
		}
	})
	t.Run("unknown kind", func(t *testing.T) {
		p := start(t, client.StartOptions{})
		_, err := p.OpenSink(ctx, client.SinkOpen{Component: "iceberg", Connector: "c", Writers: 1})
		if err == nil || !strings.Contains(err.Error(), `declares no sink component "iceberg"`) {
			t.Fatalf("OpenSink error = %v", err)
		}
	})
}

func sha256Of(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return h.Sum(nil)
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A plugin run by hand says what it is instead of waiting for a handshake.
func TestPluginRunByHand(t *testing.T) {
	cmd := exec.Command(testPlugin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
	for _, want := range []string{"floe-plugin-clienttest is a floe plugin", "plugin.path", "counter 1.0.0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A plugin whose host died (kill -9) exits instead of living on with what
// its tasks hold.
func TestPluginExitsWithItsHost(t *testing.T) {
	checkExitsWithHost(t, testPlugin, 10*time.Second)
}

// A plugin not built on sdk.Serve, which does not watch its parent, still
// dies with its host: floe starts plugins with a parent-death signal.
func TestForeignPluginExitsWithItsHost(t *testing.T) {
	checkExitsWithHost(t, foreignPlugin, 5*time.Second)
}

// checkExitsWithHost starts the plugin at path from a host process, kills
// the host with SIGKILL, and waits up to within for the plugin to be gone.
func checkExitsWithHost(t *testing.T, path string, within time.Duration) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("checks /proc")
	}
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), "FLOE_TEST_HOST_PLUGIN="+path)
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		_ = host.Process.Kill()
		t.Fatalf("the test host did not report the plugin's pid: %v", err)
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	deadline := time.Now().Add(within)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return // gone (or a zombie waiting for init to reap it)
		}
		if time.Now().After(deadline) {
			if proc, err := os.FindProcess(pid); err == nil {
				_ = proc.Kill()
			}
			t.Fatalf("plugin %d still runs %v after its host was killed", pid, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A SIGTERM while the host runs (a service manager signalling the whole
// group, say) leaves the plugin serving: the host's shutdown still needs
// it, and the host ends it itself.
func TestPluginIgnoresSIGTERMWhileItsHostRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sends a signal")
	}
	p := start(t, client.StartOptions{})
	proc, err := os.FindProcess(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Describe(ctx); err != nil {
		t.Fatalf("after a SIGTERM with its host running, the plugin no longer answers: %v", err)
	}
}

// TestExitLineLabelled: go-plugin's line about a plugin process that was
// killed reaches the host's slog logger once labelled, with the binary
// apart from the component, as `floe`'s crash tests read it.
func TestExitLineLabelled(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p := start(t, client.StartOptions{Logger: logger, Labels: []any{"connector", "orders", "plugin", "counter"}})
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the killed plugin process did not show as exited")
	}
	want := fmt.Sprintf(` id=%d error="signal: killed"`, p.Pid())
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		out := logs.String()
		mu.Unlock()
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "plugin process exited") && strings.Contains(line, " connector=orders plugin=counter binary=") && strings.Contains(line, want) {
				if strings.Count(line, " plugin=") != 1 {
					t.Errorf("plugin= twice: %s", line)
				}
				t.Log(line)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line `plugin process exited … plugin=counter binary=…%s`:\n%s", want, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTransport starts the plugin with and without TLS: either way the
// calls work both ways (a Read makes the source call the host's
// SourceHost back through the broker), the plugin listens in a directory
// of its own that only this user may enter, and that directory is gone
// once the process is.
func TestTransport(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			p := start(t, client.StartOptions{Checksum: sha256Of(t, testPlugin), TLS: tls})
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.Pid()))
			if err != nil {
				t.Skipf("no /proc: %v", err)
			}
			if got := bytes.Contains(env, []byte("PLUGIN_CLIENT_CERT=")); got != tls {
				t.Errorf("the plugin got a client certificate: %v, want %v", got, tls)
			}
			dirs, _ := filepath.Glob(filepath.Join(tmp, "floe-plugin-*"))
			if len(dirs) != 1 {
				t.Fatalf("socket directories in TMPDIR: %v, want one", dirs)
			}
			fi, err := os.Stat(dirs[0])
			if err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("socket directory %s: %v %v, want mode 0700", dirs[0], fi.Mode(), err)
			}
			socks, _ := os.ReadDir(dirs[0])
			if len(socks) != 1 || socks[0].Type()&os.ModeSocket == 0 {
				t.Errorf("socket directory holds %v, want the plugin's socket", socks)
			}
			h := &fakeHost{positions: map[string]int64{"p0": 0}}
			task := openCounter(t, p, h, map[string]string{"batch.records": "10"})
			res, err := task.Read(t.Context(), 2)
			if err != nil || len(res.Batches) != 2 || res.Batches[1].Next != 20 {
				t.Fatalf("Read: %+v, %v", res, err)
			}
			if len(h.admitted) != 1 {
				t.Errorf("the source did not reach the host's SourceHost: AdmitSchema calls %v", h.admitted)
			}
			_ = task.Close(t.Context())
			p.Kill()
			if _, err := os.Stat(dirs[0]); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket directory %s still there after Kill: %v", dirs[0], err)
			}
		})
	}
}
