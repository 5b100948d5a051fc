package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// Crash tests: floe's processes killing themselves at crash points
// (sdk.CrashPoint), and a private Kafka broker a test may stop and start
// ([StartBroker]; the private services are in service.go).

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
	// Dir is the services state folder (FLOE_SERVICES_DIR of this broker).
	Dir string
	// Bootstrap is the PLAINTEXT bootstrap address.
	Bootstrap string
	// LogFile is the broker's log.
	LogFile string

	svc *service
}

// StartBroker starts a private Kafka broker (about 20 s when the machine is
// quiet, up to a minute under load) and stops it when the test ends. Its
// state folder is kept when the test failed.
func StartBroker(t testing.TB, env Env) *Broker {
	t.Helper()
	start := time.Now()
	svc, vars := upService(t, env, "private Kafka", "FLOE_KAFKA_PIDS", "kafka-1.log",
		"--no-registry", "--no-postgres", "--no-python", "--no-lake")
	k := &Broker{Dir: svc.dir, Bootstrap: vars["FLOE_KAFKA_BOOTSTRAP"], LogFile: svc.logFile, svc: svc}
	if k.Bootstrap == "" {
		t.Fatalf("harness: private Kafka: env file %s has no bootstrap", filepath.Join(k.Dir, "env"))
	}
	t.Logf("harness: private Kafka broker (pid %d) at %s in %s", svc.pid, k.Bootstrap, time.Since(start).Round(time.Millisecond))
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
func (k *Broker) PID() int { return k.svc.pid }

// Stop sends sig (SIGKILL: a crash; SIGTERM: a controlled shutdown) to
// the broker and waits until it is gone (SIGKILL after 60 s).
func (k *Broker) Stop(sig syscall.Signal) {
	k.svc.t.Helper()
	k.svc.stop(sig)
}

// Start starts the stopped broker again: the command line, working
// folder and environment e2e/services/up gave it (read from /proc before
// the stop), in a session of its own, appending to its log; it waits for
// the log's "Kafka Server started" (KRaft prints it once the broker is
// unfenced) and records the new pid in the state folder's env file, so
// e2e/services/down still stops it.
func (k *Broker) Start() {
	k.svc.t.Helper()
	k.svc.start(logSays("Kafka Server started"))
}
