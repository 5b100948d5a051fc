package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// Crash tests: floe's processes killing themselves at crash points
// (sdk.CrashPoint), and a private Kafka broker a test may stop and start ([StartBroker]).

// SetEnv replaces Options.Env for the next start of floe ([Floe.Restart]):
// a crash test arms a crash point for one run and starts the next without
// it. The running process keeps the environment it started with.
func (f *Floe) SetEnv(env ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opts.Env = append([]string(nil), env...)
}

// CrashEnv returns the environment that arms crash point spec (name or
// name:N, see sdk.CrashPoint) in floe and its plugins, recording the crash
// in file, which must not exist yet: the point fires once per file, even
// though floe restarts a crashed plugin with the same environment.
func CrashEnv(spec, file string) []string {
	return []string{sdk.CrashPointEnv + "=" + spec, sdk.CrashPointFileEnv + "=" + file}
}

// Crash is what a process that died at a crash point wrote in its crash
// file: "<point> <N> <pid> <executable>".
type Crash struct {
	Point string
	Hit   int64
	PID   int
	// Exe is the executable's base name: floe, floe-plugin-iceberg, …
	Exe string
}

// ReadCrash reads a crash file; ok is false while it does not exist.
func ReadCrash(path string) (c Crash, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Crash{}, false, nil
	}
	if err != nil {
		return Crash{}, false, err
	}
	f := strings.Fields(string(b))
	if len(f) != 4 {
		// Being written: the line is not complete yet.
		return Crash{}, false, nil
	}
	c.Point, c.Exe = f[0], f[3]
	c.Hit, err = strconv.ParseInt(f[1], 10, 64)
	if err == nil {
		c.PID, err = strconv.Atoi(f[2])
	}
	if err != nil {
		return Crash{}, false, fmt.Errorf("crash file %s: %q: %w", path, b, err)
	}
	return c, true, nil
}

// WaitCrash waits until the crash file exists and names a process that is
// gone, and returns what it says. It fails the test when ctx ends first:
// a crash point that never fires is a broken test.
func (f *Floe) WaitCrash(ctx context.Context, file string) Crash {
	f.t.Helper()
	start := time.Now()
	for {
		c, ok, err := ReadCrash(file)
		if err != nil {
			f.failf("harness: %v", err)
		}
		if ok && !pidAlive(c.PID) {
			f.t.Logf("harness: crash point %s fired at hit %d in %s (pid %d), %s after the wait began",
				c.Point, c.Hit, c.Exe, c.PID, time.Since(start).Round(time.Millisecond))
			return c
		}
		select {
		case <-ctx.Done():
			state := "no crash file"
			if ok {
				state = fmt.Sprintf("crash file written by pid %d, which still runs", c.PID)
			}
			f.failf("harness: the crash point armed with %s never fired (%s): %v", file, state, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pidAlive reports whether pid runs and is not a zombie.
func pidAlive(pid int) bool {
	p, err := readProc(pid)
	return err == nil && p.State != 'Z' && p.State != 'X'
}

// ExitSignal is the signal that ended the floe process, 0 while it runs
// or when it exited by itself.
func (f *Floe) ExitSignal() syscall.Signal {
	f.mu.Lock()
	p := f.proc
	f.mu.Unlock()
	if p == nil || !p.exited() || p.cmd.ProcessState == nil {
		return 0
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// WaitKilled waits for the floe process to end by SIGKILL (a crash point
// in the host) and for its plugin processes to exit by themselves within
// [PluginOrphanTimeout], as after [Floe.Kill]. It fails the test when floe
// ends otherwise or not before ctx ends, or when plugins outlive it.
func (f *Floe) WaitKilled(ctx context.Context) {
	f.t.Helper()
	p := f.current()
	select {
	case <-p.done:
	case <-ctx.Done():
		f.failf("harness: floe (pid %d) was still running when the wait for its crash ended: %v", p.cmd.Process.Pid, ctx.Err())
	}
	if sig := f.ExitSignal(); sig != syscall.SIGKILL {
		f.failf("harness: floe (pid %d) ended with exit code %d, signal %v; want SIGKILL", p.cmd.Process.Pid, p.exitCode(), sig)
	}
	start := time.Now()
	if left := waitGone(markedProcs(f.marker), PluginOrphanTimeout); len(left) > 0 {
		killProcs(left)
		f.failf("harness: after floe died by SIGKILL, its plugin processes still ran %s later (orphans): %v", PluginOrphanTimeout, left)
	}
	f.t.Logf("harness: floe (pid %d) died by SIGKILL; its plugin processes were gone %s later", p.cmd.Process.Pid, time.Since(start).Round(time.Millisecond))
}

// KillHost sends SIGKILL to the floe process and returns once it is gone,
// with the plugin processes it ran. Unlike [Floe.Kill] it does not wait
// for them: they notice their parent's death within a second or so and
// exit, and a test that restarts floe at once (as a process supervisor
// would) makes them zombies the new floe must fence. [Floe.WaitGone]
// checks that they ended.
func (f *Floe) KillHost() []Proc {
	f.t.Helper()
	p := f.current()
	plugins := f.Plugins()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	f.t.Logf("harness: killed floe (pid %d), leaving its %d plugin processes to notice", p.cmd.Process.Pid, len(plugins))
	return plugins
}

// WaitGone waits up to [PluginOrphanTimeout] for procs to end and fails
// the test naming (and killing) the survivors.
func (f *Floe) WaitGone(procs []Proc) {
	f.t.Helper()
	if left := waitGone(procs, PluginOrphanTimeout); len(left) > 0 {
		killProcs(left)
		f.failf("harness: processes still ran %s later (orphans): %v", PluginOrphanTimeout, left)
	}
}

// RestartNoWait is [Floe.Restart] without the wait for GET /health: for
// a run armed to crash early (a crash point), which may die before it
// answers. Wait with [Floe.WaitCrash], or [Floe.WaitFor] (which fails
// when floe exits).
func (f *Floe) RestartNoWait() {
	f.t.Helper()
	if f.Running() {
		f.Stop()
	}
	f.mu.Lock()
	wait := f.opts.NoWait
	f.opts.NoWait = true
	f.mu.Unlock()
	f.start()
	f.mu.Lock()
	f.opts.NoWait = wait
	f.mu.Unlock()
}

// Broker is a private single-broker Kafka cluster that one test starts with
// e2e/services/up (--no-registry --no-postgres --no-python) in a state
// folder of its own, so that it may stop and start the broker without
// disturbing the other tests and users of the shared services. The
// broker's own logs are in Dir/logs/kafka-1.log.
type Broker struct {
	t testing.TB
	// Dir is the services state folder (FLOE_SERVICES_DIR of this broker).
	Dir string
	// Bootstrap is the PLAINTEXT bootstrap address.
	Bootstrap string
	// LogFile is the broker's log.
	LogFile string

	repo string
	pid  int
	cmd  *exec.Cmd // set once Start started the broker again
	done chan struct{}
	// argv, cwd and environ of the broker as up started it, read from
	// /proc before the first stop: Start runs exactly that again.
	argv    []string
	cwd     string
	environ []string
}

// StartBroker starts a private Kafka broker (about 20 s when the machine is
// quiet, up to a minute under load) and stops it when the test ends. Its
// state folder is kept when the test failed.
func StartBroker(t testing.TB, env Env) *Broker {
	t.Helper()
	if env.RepoDir == "" {
		t.Fatalf("harness: StartBroker: cannot find the floe repository (e2e/services/up)")
	}
	dir, err := os.MkdirTemp("", "floe-kafka-")
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	k := &Broker{t: t, Dir: dir, repo: env.RepoDir, LogFile: filepath.Join(dir, "logs", "kafka-1.log")}
	t.Cleanup(k.cleanup)
	start := time.Now()
	out, err := k.services(4*time.Minute, "up", "--no-registry", "--no-postgres", "--no-python")
	if err != nil {
		t.Fatalf("harness: start a private Kafka broker in %s: %v\n%s", dir, err, out)
	}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatalf("harness: private Kafka: %v", err)
	}
	k.Bootstrap = vars["FLOE_KAFKA_BOOTSTRAP"]
	k.pid, err = strconv.Atoi(vars["FLOE_KAFKA_PIDS"])
	if err != nil || k.Bootstrap == "" {
		t.Fatalf("harness: private Kafka: env file %s: bootstrap %q, pids %q", filepath.Join(dir, "env"), k.Bootstrap, vars["FLOE_KAFKA_PIDS"])
	}
	t.Logf("harness: private Kafka broker (pid %d) at %s in %s", k.pid, k.Bootstrap, time.Since(start).Round(time.Millisecond))
	return k
}

// Env returns env with this broker as Kafka (no SASL listener).
func (k *Broker) Env(env Env) Env {
	env.KafkaBootstrap = k.Bootstrap
	env.KafkaBrokers = 1
	env.SASLBootstrap, env.SASLUser, env.SASLPassword, env.SASLMechanisms = "", "", "", ""
	return env
}

// PID is the broker's pid.
func (k *Broker) PID() int { return k.pid }

// Stop sends sig (SIGKILL: a crash; SIGTERM: a controlled shutdown) to
// the broker and waits until it is gone (SIGKILL after 60 s).
func (k *Broker) Stop(sig syscall.Signal) {
	k.t.Helper()
	if k.argv == nil {
		if err := k.record(); err != nil {
			k.t.Fatalf("harness: private Kafka: %v", err)
		}
	}
	start := time.Now()
	_ = syscall.Kill(k.pid, sig)
	deadline := time.Now().Add(60 * time.Second)
	for pidAlive(k.pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(k.pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if k.done != nil {
		<-k.done
	}
	k.t.Logf("harness: private Kafka broker (pid %d) stopped by %v in %s", k.pid, sig, time.Since(start).Round(time.Millisecond))
}

// Start starts the stopped broker again: the command line, working
// folder and environment e2e/services/up gave it (read from /proc before
// the stop), in a session of its own, appending to its log; it waits for
// the log's "Kafka Server started" (KRaft prints it once the broker is
// unfenced) and records the new pid in the state folder's env file, so
// e2e/services/down still stops it.
func (k *Broker) Start() {
	k.t.Helper()
	if k.argv == nil {
		k.t.Fatalf("harness: private Kafka: Start before Stop")
	}
	logf, err := os.OpenFile(k.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		k.t.Fatalf("harness: private Kafka: %v", err)
	}
	defer func() { _ = logf.Close() }()
	st, _ := logf.Stat()
	from := st.Size()
	start := time.Now()
	cmd := exec.Command(k.argv[0], k.argv[1:]...)
	cmd.Dir, cmd.Env = k.cwd, k.environ
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		k.t.Fatalf("harness: private Kafka: restart the broker: %v", err)
	}
	k.cmd, k.pid, k.done = cmd, cmd.Process.Pid, make(chan struct{})
	done := k.done
	go func() { _ = cmd.Wait(); close(done) }()
	if err := k.setEnvPID(); err != nil {
		k.t.Logf("harness: private Kafka: %v (down will not stop pid %d; the test's cleanup does)", err, k.pid)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(k.LogFile)
		if int64(len(b)) > from && bytes.Contains(b[from:], []byte("Kafka Server started")) {
			break
		}
		select {
		case <-done:
			k.t.Fatalf("harness: private Kafka: the restarted broker exited; see %s", k.LogFile)
		default:
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("harness: private Kafka: the restarted broker (pid %d) did not start within 2 minutes; see %s", k.pid, k.LogFile)
		}
		time.Sleep(100 * time.Millisecond)
	}
	k.t.Logf("harness: private Kafka broker restarted (pid %d) in %s", k.pid, time.Since(start).Round(time.Millisecond))
}

// record reads the broker's argv, working folder and environment.
func (k *Broker) record() error {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k.pid))
	if err != nil {
		return fmt.Errorf("read the broker's command line: %w", err)
	}
	k.argv = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if k.cwd, err = os.Readlink(fmt.Sprintf("/proc/%d/cwd", k.pid)); err != nil {
		return fmt.Errorf("read the broker's working folder: %w", err)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", k.pid))
	if err != nil {
		return fmt.Errorf("read the broker's environment: %w", err)
	}
	k.environ = strings.Split(strings.TrimRight(string(env), "\x00"), "\x00")
	if len(k.argv) == 0 || k.argv[0] == "" {
		return fmt.Errorf("the broker (pid %d) has an empty command line", k.pid)
	}
	return nil
}

var kafkaPidsLine = regexp.MustCompile(`(?m)^export FLOE_KAFKA_PIDS=.*$`)

// setEnvPID rewrites FLOE_KAFKA_PIDS in the state folder's env file.
func (k *Broker) setEnvPID() error {
	path := filepath.Join(k.Dir, "env")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b = kafkaPidsLine.ReplaceAll(b, []byte(fmt.Sprintf(`export FLOE_KAFKA_PIDS="%d"`, k.pid)))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (k *Broker) services(timeout time.Duration, script string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(k.repo, "e2e", "services", script), args...)
	cmd.Env = append(servicesEnv(), "FLOE_SERVICES_DIR="+k.Dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// servicesEnv is this process's environment without what an env file of
// e2e/services sets about its services. The scripts source the env file
// of their state folder in a shell that inherits the caller's
// environment, so a test that sourced the shared services' env file would
// otherwise pass their FLOE_SCHEMA_REGISTRY_PID and FLOE_POSTGRES_PID on,
// and down of a --no-registry --no-postgres folder would stop the shared
// registry and Postgres.
func servicesEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "FLOE_") && (strings.HasSuffix(name, "_PID") || strings.HasSuffix(name, "_PIDS") ||
			strings.HasPrefix(name, "FLOE_SERVICES_")) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (k *Broker) cleanup() {
	if out, err := k.services(2*time.Minute, "down"); err != nil {
		k.t.Logf("harness: private Kafka: down: %v\n%s", err, out)
	}
	if pidAlive(k.pid) {
		_ = syscall.Kill(k.pid, syscall.SIGKILL)
	}
	if k.done != nil {
		select {
		case <-k.done:
		case <-time.After(10 * time.Second):
		}
	}
	if k.t.Failed() || os.Getenv("FLOE_E2E_KEEP") == "1" {
		k.t.Logf("harness: kept the private Kafka's state folder %s (log %s)", k.Dir, k.LogFile)
		return
	}
	_ = os.RemoveAll(k.Dir)
}

// readEnvFile parses the export lines of an e2e/services env file.
func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
		if ok && !strings.HasPrefix(k, "#") {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out, nil
}
