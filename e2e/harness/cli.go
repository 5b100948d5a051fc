package harness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CLIResult is what a floe command printed and its exit code.
type CLIResult struct {
	Args           []string
	Stdout, Stderr string
	// Code is the exit code; -1 when a signal ended the process (the
	// timeout).
	Code int
}

// Output is stdout and stderr together, for messages that may go to
// either.
func (r CLIResult) Output() string { return r.Stdout + r.Stderr }

// RunFloe runs `floe args…` in dir ("" for a fresh temporary folder) and
// waits for it, at most timeout; plugin processes it started are killed
// with it. It fails the test only if floe cannot be started at all: the
// exit code is the caller's to judge.
func RunFloe(t testing.TB, env Env, dir string, timeout time.Duration, args ...string) CLIResult {
	t.Helper()
	if !executable(env.FloeBin()) {
		t.Fatalf("harness: %s is missing or not executable: run make build (or set FLOE_BIN_DIR)", env.FloeBin())
	}
	if dir == "" {
		dir = t.TempDir()
	}
	marker := randomHex(8)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.FloeBin(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), runMarkerEnv+"="+marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := CLIResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	default:
		t.Fatalf("harness: run floe %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Errorf("harness: floe %s did not finish within %s (killed)", strings.Join(args, " "), timeout)
	}
	if left := waitGone(markedProcs(marker), 5*time.Second); len(left) > 0 {
		killProcs(left)
		t.Errorf("harness: floe %s left processes running after it exited: %v", strings.Join(args, " "), left)
	}
	return res
}
