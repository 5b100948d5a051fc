package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// service is one process that e2e/services/up started in a state folder
// of a test's own ([Broker], [Registry]), so that the test may stop it and
// start it again without disturbing the shared services.
type service struct {
	t testing.TB
	// what names the service in messages ("private Kafka").
	what string
	// dir is the state folder (FLOE_SERVICES_DIR of this service).
	dir     string
	logFile string
	// pidVar is the env file's variable that holds the pid, so
	// e2e/services/down of dir stops the restarted process too; slot is
	// the pid's place in it when it lists several (one per Kafka node).
	pidVar string
	slot   int
	// readyWithin bounds start's wait for the restarted process.
	readyWithin time.Duration
	// startAttempts is how often start starts a process that exits before
	// it is ready (1 when unset).
	startAttempts int

	repo string
	pid  int
	cmd  *exec.Cmd // set once start started the process again
	done chan struct{}
	// argv, cwd and environ of the process as up started it, read from
	// /proc before the first stop: start runs exactly that again.
	argv    []string
	cwd     string
	environ []string
}

// upService runs e2e/services/up with args in a fresh state folder and
// returns the service it started (its pid in pidVar) and the env file's
// variables. The folder is removed when the test ends, unless it failed.
func upService(t testing.TB, env Env, what, pidVar, logName string, args ...string) (*service, map[string]string) {
	t.Helper()
	if env.RepoDir == "" {
		t.Fatalf("harness: start a %s: cannot find the floe repository (e2e/services/up)", what)
	}
	dir, err := os.MkdirTemp("", "floe-services-")
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	s := &service{t: t, what: what, dir: dir, logFile: filepath.Join(dir, "logs", logName), pidVar: pidVar, repo: env.RepoDir}
	t.Cleanup(s.cleanup)
	if out, err := runServices(s.repo, dir, 4*time.Minute, "up", args...); err != nil {
		t.Fatalf("harness: start a %s in %s: %v\n%s", what, dir, err, out)
	}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatalf("harness: %s: %v", what, err)
	}
	if _, err := fmt.Sscan(vars[pidVar], &s.pid); err != nil {
		t.Fatalf("harness: %s: env file %s: %s=%q", what, filepath.Join(dir, "env"), pidVar, vars[pidVar])
	}
	return s, vars
}

// stop sends sig to the process and waits until it is gone (SIGKILL after
// 60 s).
func (s *service) stop(sig syscall.Signal) {
	s.t.Helper()
	if s.argv == nil {
		var err error
		if s.argv, s.cwd, s.environ, err = procCommand(s.pid); err != nil {
			s.t.Fatalf("harness: %s: %v", s.what, err)
		}
	}
	start := time.Now()
	_ = syscall.Kill(s.pid, sig)
	deadline := time.Now().Add(60 * time.Second)
	for pidAlive(s.pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(s.pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s.done != nil {
		<-s.done
	}
	s.t.Logf("harness: %s (pid %d) stopped by %v in %s", s.what, s.pid, sig, time.Since(start).Round(time.Millisecond))
}

// start starts the stopped process again: the command line, working
// folder and environment up gave it, in a session of its own, appending
// to its log. It waits up to s.readyWithin (2 minutes when unset) for
// ready, which is given the log written since the start, and records the
// new pid in the env file.
func (s *service) start(ready func(log []byte) bool) {
	s.t.Helper()
	if s.argv == nil {
		s.t.Fatalf("harness: %s: start before stop", s.what)
	}
	logf, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatalf("harness: %s: %v", s.what, err)
	}
	defer func() { _ = logf.Close() }()
	st, _ := logf.Stat()
	from := st.Size()
	start := time.Now()
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir, cmd.Env = s.cwd, s.environ
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("harness: %s: start again: %v", s.what, err)
	}
	s.cmd, s.pid, s.done = cmd, cmd.Process.Pid, make(chan struct{})
	done := s.done
	go func() { _ = cmd.Wait(); close(done) }()
	if err := s.recordPID(); err != nil {
		s.t.Logf("harness: %s: %v (down will not stop pid %d; the test's cleanup does)", s.what, err, s.pid)
	}
	within := s.readyWithin
	if within == 0 {
		within = 2 * time.Minute
	}
	deadline := time.Now().Add(within)
	for {
		b, _ := os.ReadFile(s.logFile)
		if int64(len(b)) >= from && ready(b[from:]) {
			break
		}
		select {
		case <-done:
			if s.startAttempts > 1 {
				s.startAttempts--
				s.t.Logf("harness: %s: the restarted process exited before it was ready (see %s); starting it again", s.what, s.logFile)
				s.start(ready)
				return
			}
			s.t.Fatalf("harness: %s: the restarted process exited; see %s", s.what, s.logFile)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("harness: %s: the restarted process (pid %d) was not ready within %s; see %s", s.what, s.pid, within, s.logFile)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Logf("harness: %s started again (pid %d) in %s", s.what, s.pid, time.Since(start).Round(time.Millisecond))
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

func (s *service) cleanup() {
	if out, err := runServices(s.repo, s.dir, 2*time.Minute, "down"); err != nil {
		s.t.Logf("harness: %s: down: %v\n%s", s.what, err, out)
	}
	s.kill()
	if s.t.Failed() || os.Getenv("FLOE_E2E_KEEP") == "1" {
		s.t.Logf("harness: kept the %s's state folder %s (log %s)", s.what, s.dir, s.logFile)
		return
	}
	_ = os.RemoveAll(s.dir)
}

// kill ends the process if it still runs (a test that failed between a
// stop and a start, a state folder that down did not stop).
func (s *service) kill() {
	if s.pid != 0 && pidAlive(s.pid) {
		_ = syscall.Kill(s.pid, syscall.SIGKILL)
	}
	if s.done != nil {
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	}
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

// procCommand reads a process's argv, working folder and environment.
func procCommand(pid int) (argv []string, cwd string, environ []string, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, "", nil, fmt.Errorf("read the command line of pid %d: %w", pid, err)
	}
	argv = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if cwd, err = os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err != nil {
		return nil, "", nil, fmt.Errorf("read the working folder of pid %d: %w", pid, err)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, "", nil, fmt.Errorf("read the environment of pid %d: %w", pid, err)
	}
	environ = strings.Split(strings.TrimRight(string(env), "\x00"), "\x00")
	if len(argv) == 0 || argv[0] == "" {
		return nil, "", nil, fmt.Errorf("pid %d has an empty command line", pid)
	}
	return argv, cwd, environ, nil
}

// setEnvVar rewrites one export line of an env file.
func setEnvVar(path, name, value string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "export "+name+"=") {
			line = fmt.Sprintf("export %s=%q", name, value)
		}
		out = append(out, line)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// recordPID writes the process's new pid into its slot of the env file's
// pidVar.
func (s *service) recordPID() error {
	path := filepath.Join(s.dir, "env")
	vars, err := readEnvFile(path)
	if err != nil {
		return err
	}
	pids := strings.Fields(vars[s.pidVar])
	for len(pids) <= s.slot {
		pids = append(pids, "")
	}
	pids[s.slot] = strconv.Itoa(s.pid)
	return setEnvVar(path, s.pidVar, strings.Join(pids, " "))
}

// runServices runs an e2e/services script on state folder dir.
func runServices(repo, dir string, timeout time.Duration, script string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "e2e", "services", script), args...)
	cmd.Env = append(servicesEnv(), "FLOE_SERVICES_DIR="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// logSays is a readiness check: the log written since the start holds
// line.
func logSays(line string) func([]byte) bool {
	return func(log []byte) bool { return bytes.Contains(log, []byte(line)) }
}
