package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Crash points let crash tests kill a process at an exact moment, which a
// kill -9 from outside can only hit by luck: "between phase 1 and phase
// 2", "right after the catalog commit, before the answer".
const (
	// CrashPointEnv arms one crash point: FLOE_CRASHPOINT=name kills the
	// process the first time it reaches [CrashPoint](name),
	// FLOE_CRASHPOINT=name:N the N-th time (counted per process, from 1).
	CrashPointEnv = "FLOE_CRASHPOINT"
	// CrashPointFileEnv, when set, names a file the crashing process
	// creates (exclusively) just before it kills itself, holding one
	// line: "<point> <N> <pid> <executable>". If the file exists already,
	// the point does not fire: one crash per test run, even though the
	// host restarts a crashed plugin with the same environment. Tests
	// read it to prove the crash happened where they meant it to.
	CrashPointFileEnv = "FLOE_CRASHPOINT_FILE"
)

// CrashPoint is a test hook for crash tests; it does nothing unless the
// environment arms it. When [CrashPointEnv] names this point (name, or
// name:N for the N-th time it is reached in this process), the process
// kills itself at once with SIGKILL: no deferred functions run, no buffer
// is flushed, no file is closed, exactly like kill -9 from outside.
// Otherwise it is a cheap no-op: the environment is read once per process.
//
// Plugin processes inherit the floe host's environment, so one variable
// arms a point in the host or in any plugin. Names are dotted, prefixed
// with the process that reaches them (host.after-commit,
// iceberg.commit.before-catalog, kafka.after-read); e2e/crash_test.go
// lists the built-in ones and what each proves. CrashPoint may be called
// from any goroutine.
func CrashPoint(name string) {
	cp := armedCrashPoint()
	if cp == nil || cp.name != name {
		return
	}
	n := cp.hits.Add(1)
	if n != cp.at {
		return
	}
	crash(name, n)
}

// crashSpec is the armed point: its name, the hit that fires it, and the
// hits so far.
type crashSpec struct {
	name string
	at   int64
	hits atomic.Int64
}

// armedCrashPoint reads CrashPointEnv once. It is package-level state, an
// exception to the SDK's rule, because a crash point must cost nothing on
// hot paths and be reachable from code that holds no SDK value (the host's
// committer, a plugin's writer goroutine); it holds only what the
// environment said at start-up and a counter.
var armedCrashPoint = sync.OnceValue(func() *crashSpec {
	spec := strings.TrimSpace(os.Getenv(CrashPointEnv))
	if spec == "" {
		return nil
	}
	cp, err := parseCrashPoint(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "floe: %s=%q is ignored: %v\n", CrashPointEnv, spec, err)
		return nil
	}
	return cp
})

// parseCrashPoint parses "name" or "name:N" (N >= 1).
func parseCrashPoint(spec string) (*crashSpec, error) {
	name, count, hasCount := strings.Cut(spec, ":")
	if name == "" {
		return nil, fmt.Errorf("no point name; want name or name:N")
	}
	cp := &crashSpec{name: name, at: 1}
	if hasCount {
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a count >= 1; want name or name:N", count)
		}
		cp.at = n
	}
	return cp, nil
}

// crash records the crash in CrashPointFileEnv's file (unless a crash of
// this run is recorded there already: then it returns and the process
// goes on) and kills the process with SIGKILL.
func crash(name string, n int64) {
	exe, _ := os.Executable()
	exe = filepath.Base(exe)
	if path := os.Getenv(CrashPointFileEnv); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return
		}
		// The process dies next whatever happens: a failed record shows as
		// a crash the test did not expect, which it reports.
		_, _ = fmt.Fprintf(f, "%s %d %d %s\n", name, n, os.Getpid(), exe)
		_ = f.Close()
	}
	// One unbuffered line, so a log shows why the process vanished.
	_, _ = fmt.Fprintf(os.Stderr, "floe: crash point %s reached (hit %d): %s (pid %d) kills itself with SIGKILL\n", name, n, exe, os.Getpid())
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill() // SIGKILL on Unix
	}
	// The signal lands at once; this goroutine must not return meanwhile.
	for {
		time.Sleep(time.Hour)
	}
}
