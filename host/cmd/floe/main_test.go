package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildFloe returns a floe binary: $FLOE_BIN_DIR/floe when e2e/run-tests
// built one, else this command built into a temporary folder.
func buildFloe(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("FLOE_BIN_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "floe")); err == nil {
			return filepath.Join(dir, "floe")
		}
	}
	if testing.Short() {
		t.Skip("builds the floe binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "floe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestBinary checks the process's exit codes and that SIGTERM shuts a
// standalone worker down gracefully with exit 0.
func TestBinary(t *testing.T) {
	bin := buildFloe(t)

	if err := exec.Command(bin, "version").Run(); exitCode(err) != 0 {
		t.Errorf("floe version: %v", err)
	}
	if err := exec.Command(bin).Run(); exitCode(err) != 2 {
		t.Errorf("floe without a command: exit %d, want 2", exitCode(err))
	}
	if err := exec.Command(bin, "nope").Run(); exitCode(err) != 2 {
		t.Errorf("floe nope: exit %d, want 2", exitCode(err))
	}

	dir := t.TempDir()
	worker := filepath.Join(dir, "worker.json")
	cfg := `{"listeners": "http://127.0.0.1:0", "plugin.path": "` + filepath.Join(dir, "plugins") + `", "data.dir": "` + filepath.Join(dir, "data") + `"}`
	if err := os.WriteFile(worker, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd := exec.Command(bin, "standalone", worker)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(stderr.String(), "REST API listening") {
		select {
		case err := <-done:
			t.Fatalf("floe standalone exited early: %v\n%s", err, stderr.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("floe standalone did not start:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if exitCode(err) != 0 {
			t.Errorf("exit %d after SIGTERM, want 0\n%s", exitCode(err), stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("floe standalone did not stop after SIGTERM:\n%s", stderr.String())
	}
	for _, want := range []string{"no plugins found", "make build", "worker stopped"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// lockedBuffer is a buffer the process's output goroutine and the test
// share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
