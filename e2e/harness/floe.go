package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Timeouts of a floe process's life, unless Options say otherwise.
const (
	// DefaultStartTimeout bounds the wait for GET /health.
	DefaultStartTimeout = 2 * time.Minute
	// DefaultStopTimeout bounds the wait for exit after SIGTERM: floe's
	// own graceful timeout (task.shutdown.graceful.timeout.ms, 60 s) plus
	// a margin.
	DefaultStopTimeout = 90 * time.Second
	// PluginOrphanTimeout bounds how long plugin processes may outlive a
	// host killed with SIGKILL: the SDK polls its parent every second and
	// then closes its tasks (at most a few seconds).
	PluginOrphanTimeout = 15 * time.Second
	// logTailLines is how much of the log a failing test prints.
	logTailLines = 60
)

// Options configures [StartFloe].
type Options struct {
	// Connectors are written to connector files in the run folder and
	// passed on the command line, in order.
	Connectors []Connector
	// ConnectorFiles are passed on the command line as they are, after
	// Connectors.
	ConnectorFiles []string
	// Args are extra command-line arguments (--exit-when-done).
	Args []string
	// Worker adds or overrides worker config keys; a key set to "" is
	// left out of the file.
	Worker map[string]string
	// WatchConfigDir sets config.dir to the run folder's connectors/
	// ([Floe.ConfigDir]), the watched folder.
	WatchConfigDir bool
	// Env adds KEY=value pairs to floe's environment (and so to its
	// plugins').
	Env []string
	// StartTimeout bounds the wait for GET /health (DefaultStartTimeout).
	StartTimeout time.Duration
	// StopTimeout bounds the wait for exit after SIGTERM
	// (DefaultStopTimeout).
	StopTimeout time.Duration
	// Distributed runs `floe distributed <worker.json>` (a cluster
	// worker) instead of standalone; Connectors and ConnectorFiles must
	// be empty (create connectors through the REST API).
	Distributed bool
	// NoWait returns as soon as the process started, without waiting for
	// GET /health: for runs that may end before it answers
	// (--exit-when-done). Use [Floe.Wait].
	NoWait bool
}

// Floe is one `floe standalone` (or `floe distributed`) run: a worker config, a data dir and the
// process. Restart keeps the folders, the port and the connector files.
// Its methods may be called from the test's goroutine only, except the
// REST client's.
type Floe struct {
	t    testing.TB
	env  Env
	opts Options
	// Dir is the run folder: worker.json, connector files, data/,
	// connectors/ (watched when WatchConfigDir), floe.log.
	Dir string
	// DataDir is the worker's data.dir: catalog.db and warehouse/ of the
	// embedded catalog, floe's state.
	DataDir string
	// ConfigDir is the watched folder (when Options.WatchConfigDir).
	ConfigDir string
	// WorkerFile is the worker config's path.
	WorkerFile string
	// LogFile receives floe's stdout and stderr (appended over restarts).
	LogFile string
	// URL is the REST listener.
	URL string
	// API calls the REST API.
	API *Client

	args   []string
	marker string
	logOff int64 // where the current process's output starts in LogFile

	mu   sync.Mutex
	proc *process
}

// process is one started floe OS process.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned
	err  error         // Wait's error, set before done closes
	log  *os.File
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the process's exit code, -1 when a signal ended it.
func (p *process) exitCode() int {
	if p.err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// StartFloe starts `floe standalone <worker.json> [connector files…]` in a
// fresh run folder and, unless opts.NoWait, waits for GET /health. The
// process and every plugin process it started are killed when the test
// ends, whatever happened; the run folder is deleted if the test passed
// and kept (with its path and the log's tail printed) if it failed. It
// fails the test if floe cannot start or exits before it is healthy.
func StartFloe(t testing.TB, env Env, opts Options) *Floe {
	t.Helper()
	if !executable(env.FloeBin()) {
		t.Fatalf("harness: %s is missing or not executable: run make build (or set FLOE_BIN_DIR)", env.FloeBin())
	}
	dir, err := os.MkdirTemp("", "floe-e2e-"+safeName(t.Name())+"-")
	if err != nil {
		t.Fatalf("harness: run folder: %v", err)
	}
	f := &Floe{
		t: t, env: env, opts: opts,
		Dir:        dir,
		DataDir:    filepath.Join(dir, "data"),
		WorkerFile: filepath.Join(dir, "worker.json"),
		LogFile:    filepath.Join(dir, "floe.log"),
		marker:     randomHex(8),
	}
	t.Cleanup(f.cleanup)
	port, err := freePort()
	if err != nil {
		t.Fatalf("harness: pick a REST port: %v", err)
	}
	f.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	f.API = NewClient(f.URL)
	worker := map[string]string{
		"listeners":   f.URL,
		"plugin.path": env.PluginDir(),
		"data.dir":    f.DataDir,
	}
	// FLOE_E2E_LOG_LEVEL (DEBUG, …) raises every worker's log level, to
	// investigate a failure from its run folder's floe.log.
	if l := os.Getenv("FLOE_E2E_LOG_LEVEL"); l != "" {
		worker["log.level"] = l
	}
	if opts.WatchConfigDir {
		f.ConfigDir = filepath.Join(dir, "connectors")
		worker["config.dir"] = f.ConfigDir
		if err := os.MkdirAll(f.ConfigDir, 0o755); err != nil {
			t.Fatalf("harness: %v", err)
		}
	}
	for k, v := range opts.Worker {
		if v == "" {
			delete(worker, k)
		} else {
			worker[k] = v
		}
	}
	writeJSON(t, f.WorkerFile, worker)
	f.args = []string{"standalone", f.WorkerFile}
	if opts.Distributed {
		if len(opts.Connectors)+len(opts.ConnectorFiles) > 0 {
			t.Fatalf("harness: a distributed worker takes no connector files; create connectors through the REST API")
		}
		f.args[0] = "distributed"
	}
	for i, c := range opts.Connectors {
		path := filepath.Join(dir, fmt.Sprintf("connector-%d-%s.json", i, safeName(c.Name)))
		writeJSON(t, path, c)
		f.args = append(f.args, path)
	}
	f.args = append(f.args, opts.ConnectorFiles...)
	f.args = append(f.args, opts.Args...)
	f.start()
	return f
}

// start starts the process (again) and waits for health unless NoWait.
func (f *Floe) start() {
	t := f.t
	t.Helper()
	logf, err := os.OpenFile(f.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("harness: log file: %v", err)
	}
	if st, err := logf.Stat(); err == nil {
		f.logOff = st.Size()
	}
	_, _ = fmt.Fprintf(logf, "==== harness: %s %s (%s)\n", f.env.FloeBin(), strings.Join(f.args, " "), time.Now().Format(time.RFC3339))
	cmd := exec.Command(f.env.FloeBin(), f.args...)
	cmd.Dir = f.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), runMarkerEnv+"="+f.marker)
	if len(f.args) > 0 && f.args[0] == "distributed" {
		// A cluster's worker serves its runtime profiles on a free
		// port, so DumpStacks can read its goroutines without stopping
		// it (the distributed soak's stalls).
		cmd.Env = append(cmd.Env, "FLOE_DEBUG_PPROF=127.0.0.1:0")
	}
	cmd.Env = append(cmd.Env, f.opts.Env...)
	// If the test binary dies (a go test timeout), floe goes with it; its
	// plugins follow (they watch their parent).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("harness: start %s: %v", f.env.FloeBin(), err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), log: logf}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	f.mu.Lock()
	f.proc = p
	f.mu.Unlock()
	t.Logf("harness: started floe (pid %d) on %s; run folder %s", cmd.Process.Pid, f.URL, f.Dir)
	if f.opts.NoWait {
		return
	}
	timeout := f.opts.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last error
	for {
		hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
		last = f.API.Health(hctx)
		hcancel()
		if last == nil {
			return
		}
		select {
		case <-p.done:
			f.failf("harness: floe exited with code %d before GET /health answered 200", p.exitCode())
		case <-ctx.Done():
			f.failf("harness: floe did not become healthy within %s: last GET /health: %v", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PID is the floe process's pid (0 before a start).
func (f *Floe) PID() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.proc == nil {
		return 0
	}
	return f.proc.cmd.Process.Pid
}

// Running reports whether the floe process runs.
func (f *Floe) Running() bool {
	f.mu.Lock()
	p := f.proc
	f.mu.Unlock()
	return p != nil && !p.exited()
}

// Wait waits for the floe process to exit by itself and returns its exit
// code (-1 when a signal ended it). It fails the test if ctx ends first.
func (f *Floe) Wait(ctx context.Context) int {
	f.t.Helper()
	p := f.current()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-p.done:
			return p.exitCode()
		case <-tick.C:
			f.t.Logf("harness: waiting for floe (pid %d) to exit: %s so far", p.cmd.Process.Pid, time.Since(start).Round(time.Second))
		case <-ctx.Done():
			f.failf("harness: floe (pid %d) did not exit: %v", p.cmd.Process.Pid, ctx.Err())
		}
	}
}

// Stop sends SIGTERM and expects floe to exit 0 within the stop timeout,
// and its plugin processes to be gone; it fails the test otherwise.
func (f *Floe) Stop() {
	f.t.Helper()
	if code := f.Signal(syscall.SIGTERM); code != 0 {
		f.failf("harness: floe exited with code %d after SIGTERM, want 0", code)
	}
}

// Signal sends sig to floe and waits up to the stop timeout for it to
// exit; it returns the exit code. It fails the test if floe does not
// exit, or if plugin processes outlive it by more than a few seconds.
func (f *Floe) Signal(sig syscall.Signal) int {
	f.t.Helper()
	p := f.current()
	if p.exited() {
		f.failf("harness: floe already exited (code %d) before %v", p.exitCode(), sig)
	}
	plugins := f.Plugins()
	start := time.Now()
	_ = p.cmd.Process.Signal(sig)
	timeout := f.opts.StopTimeout
	if timeout == 0 {
		timeout = DefaultStopTimeout
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		f.failf("harness: floe (pid %d) did not exit within %s of %v", p.cmd.Process.Pid, timeout, sig)
	}
	f.t.Logf("harness: floe exited with code %d %s after %v", p.exitCode(), time.Since(start).Round(time.Millisecond), sig)
	if left := waitGone(append(plugins, f.Plugins()...), 5*time.Second); len(left) > 0 {
		killProcs(left)
		f.failf("harness: plugin processes still ran 5 s after floe exited: %v", left)
	}
	return p.exitCode()
}

// Kill sends SIGKILL to the floe process (not to its plugins), waits for
// it, then checks that its plugin processes end by themselves within
// [PluginOrphanTimeout] (they watch their parent); survivors fail the
// test and are killed. It returns how long the last plugin took to go.
func (f *Floe) Kill() time.Duration {
	f.t.Helper()
	p := f.current()
	plugins := f.Plugins()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	start := time.Now()
	left := waitGone(plugins, PluginOrphanTimeout)
	took := time.Since(start)
	if len(left) > 0 {
		killProcs(left)
		f.failf("harness: after SIGKILL of the floe host, its plugin processes still ran %s later (orphans): %v", PluginOrphanTimeout, left)
	}
	f.t.Logf("harness: killed floe (pid %d); its %d plugin processes exited within %s", p.cmd.Process.Pid, len(plugins), took.Round(time.Millisecond))
	return took
}

// DumpStacks sends SIGQUIT to floe's plugin processes, then to floe
// itself: Go prints every goroutine's stack and exits, into floe's log
// (a plugin's through the host). For a stalled test, before its cleanup
// stops the processes: the stacks say where they waited.
func (f *Floe) DumpStacks() {
	if !f.Running() {
		return
	}
	// floe's own goroutines first, while its plugins still run: SIGQUIT
	// of the plugins changes what floe waits for within the second
	// before floe's own dump.
	f.appendGoroutines()
	for _, p := range f.Plugins() {
		_ = syscall.Kill(p.PID, syscall.SIGQUIT)
	}
	time.Sleep(time.Second)
	p := f.current()
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	f.t.Logf("harness: goroutine stacks of floe (pid %d) and its plugins are in %s", p.cmd.Process.Pid, f.LogFile)
}

// Plugins lists floe's plugin processes now: the marked processes other
// than floe itself (plugins are started by floe, so they carry its
// environment).
func (f *Floe) Plugins() []Proc {
	pid := f.PID()
	var out []Proc
	for _, p := range markedProcs(f.marker) {
		if p.PID != pid {
			out = append(out, p)
		}
	}
	return out
}

// KillPlugin sends SIGKILL to floe's child plugin processes running
// binary (floe-plugin-<binary>; a component name such as "datagen" or
// "iceberg" works when it is the binary's suffix) and returns them. It
// fails the test when none runs.
func (f *Floe) KillPlugin(binary string) []Proc {
	f.t.Helper()
	name := binary
	if !strings.HasPrefix(name, "floe-plugin-") {
		name = "floe-plugin-" + name
	}
	pid := f.PID()
	var killed []Proc
	for _, p := range f.Plugins() {
		if p.PPID == pid && p.Name == name {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err == nil {
				killed = append(killed, p)
			}
		}
	}
	if len(killed) == 0 {
		f.failf("harness: no plugin process %s is a child of floe (pid %d); running: %v", name, pid, f.Plugins())
	}
	f.t.Logf("harness: killed plugin processes %v", killed)
	return killed
}

// Restart stops floe (SIGTERM, expecting exit 0) if it runs, and starts
// it again with the same folders, port and arguments; it waits for
// health unless Options.NoWait.
func (f *Floe) Restart() {
	f.t.Helper()
	if f.Running() {
		f.Stop()
	}
	f.start()
}

// WaitFor calls cond every interval (200 ms) until it reports done, and
// fails the test when ctx ends first, when cond returns an error, or when
// floe exits. state is a short description of where things are, logged
// every 15 s and in the failure.
func (f *Floe) WaitFor(ctx context.Context, what string, cond func(ctx context.Context) (done bool, state string, err error)) {
	f.t.Helper()
	p := f.current()
	start := time.Now()
	lastLog := start
	state := "(not checked yet)"
	for {
		done, s, err := cond(ctx)
		if s != "" {
			state = s
		}
		if err != nil {
			f.failf("harness: waiting for %s: %v (state: %s)", what, err, state)
		}
		if done {
			f.t.Logf("harness: %s after %s (%s)", what, time.Since(start).Round(time.Millisecond), state)
			return
		}
		if time.Since(lastLog) >= 15*time.Second {
			f.t.Logf("harness: still waiting for %s after %s: %s", what, time.Since(start).Round(time.Second), state)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			f.failf("harness: gave up waiting for %s after %s: %v; last state: %s", what, time.Since(start).Round(time.Second), ctx.Err(), state)
		case <-p.done:
			f.failf("harness: floe exited with code %d while waiting for %s; last state: %s", p.exitCode(), what, state)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WaitStatus waits until the connector's status satisfies ok, and returns
// it. A FAILED connector or task fails the test at once unless
// allowFailed.
func (f *Floe) WaitStatus(ctx context.Context, connector, what string, allowFailed bool, ok func(ConnectorStatus) bool) ConnectorStatus {
	f.t.Helper()
	var st ConnectorStatus
	f.WaitFor(ctx, what, func(ctx context.Context) (bool, string, error) {
		s, err := f.API.Status(ctx, connector)
		if err != nil {
			return false, err.Error(), nil
		}
		st = s
		if failed := s.Failed(); failed != "" && !allowFailed && !ok(s) {
			return false, s.Summary(), fmt.Errorf("connector failed:\n%s", failed)
		}
		return ok(s), s.Summary(), nil
	})
	return st
}

// Log returns the output of the current (or last) floe process.
func (f *Floe) Log() string {
	b, err := os.ReadFile(f.LogFile)
	if err != nil || int64(len(b)) < f.logOff {
		return ""
	}
	return string(b[f.logOff:])
}

// LogContains reports whether the current process's output matches re.
func (f *Floe) LogContains(re string) bool {
	return regexp.MustCompile(re).MatchString(f.Log())
}

func (f *Floe) current() *process {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.proc == nil {
		f.t.Fatalf("harness: floe was not started")
	}
	return f.proc
}

// failf prints the log's tail and fails the test now.
func (f *Floe) failf(format string, args ...any) {
	f.t.Helper()
	f.t.Fatalf(format+"\n%s", append(args, f.tail())...)
}

func (f *Floe) tail() string {
	lines := strings.Split(strings.TrimRight(f.Log(), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return fmt.Sprintf("--- last %d lines of %s:\n%s\n---", len(lines), f.LogFile, strings.Join(lines, "\n"))
}

// cleanup kills what still runs and checks that nothing of this run is
// left; keeps the run folder of a failed test.
func (f *Floe) cleanup() {
	f.mu.Lock()
	p := f.proc
	f.mu.Unlock()
	if p != nil && !p.exited() {
		plugins := f.Plugins()
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		if left := waitGone(plugins, PluginOrphanTimeout); len(left) > 0 {
			killProcs(left)
			f.t.Errorf("harness: cleanup: plugin processes outlived their killed floe host by %s: %v", PluginOrphanTimeout, left)
		}
	}
	if left := markedProcs(f.marker); len(left) > 0 {
		killProcs(left)
		f.t.Errorf("harness: cleanup: processes of this run were still running, killed: %v", left)
	}
	if crashes := crashLines(f.LogFile); len(crashes) > 0 {
		f.t.Errorf("harness: floe's log (host and plugins) shows a crash:\n%s", strings.Join(crashes, "\n"))
	}
	if f.t.Failed() || os.Getenv("FLOE_E2E_KEEP") == "1" {
		f.t.Logf("harness: kept the run folder %s (log %s)\n%s", f.Dir, f.LogFile, f.tail())
		return
	}
	_ = os.RemoveAll(f.Dir)
}

// crashMarks are what a Go panic, a fatal runtime error or the race
// detector print; in floe's log (plugin stderr included) each is a bug
// even when floe recovered by restarting the plugin.
var crashMarks = regexp.MustCompile(`panic: |fatal error: |WARNING: DATA RACE|panicked`)

// crashLines returns the log's lines (at most 20) that show a crash.
func crashLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if crashMarks.MatchString(line) && len(out) < 20 {
			out = append(out, line)
		}
	}
	return out
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// writeJSON writes v as indented JSON, failing t on error.
func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("harness: encode %s: %v", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatalf("harness: %v", err)
	}
}

// WriteConnectorFile writes c as a Connect-shaped connector file.
func WriteConnectorFile(t testing.TB, path string, c Connector) {
	t.Helper()
	writeJSON(t, path, c)
}

// LoadConnectorFile reads a Connect-shaped connector file such as
// configs/demo-datagen.json.
func LoadConnectorFile(t testing.TB, path string) Connector {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	var c Connector
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("harness: connector file %s: %v", path, err)
	}
	return c
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// UniqueName returns prefix, an underscore and random hex: a topic,
// table, namespace or connector name no other run uses (letters, digits
// and underscores only when prefix is, so it is a plain SQL identifier).
func UniqueName(prefix string) string { return prefix + "_" + randomHex(5) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Context returns a context ending after d, or a minute before the test's
// deadline (go test -timeout) if that comes first, canceled when the test
// ends.
func Context(t testing.TB, d time.Duration) context.Context {
	deadline := time.Now().Add(d)
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := tt.Deadline(); ok && dl.Add(-time.Minute).Before(deadline) {
			deadline = dl.Add(-time.Minute)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// profilesURL matches the line a worker logs when it serves its runtime
// profiles (FLOE_DEBUG_PPROF).
var profilesURL = regexp.MustCompile(`msg="serving the runtime profiles" .*?url=(http://[^ ]+)`)

// appendGoroutines appends the running floe's goroutine stacks, read from
// its runtime profiles, to its log.
func (f *Floe) appendGoroutines() {
	m := profilesURL.FindAllStringSubmatch(f.Log(), -1)
	if len(m) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m[len(m)-1][1]+"goroutine?debug=2", nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Logf("harness: read floe's goroutines: %v", err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	lf, err := os.OpenFile(f.LogFile, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer func() { _ = lf.Close() }()
	_, _ = fmt.Fprintf(lf, "==== harness: floe's goroutines before its plugins were stopped (%s)\n%s\n", time.Now().UTC().Format(time.RFC3339), body)
}
