package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunHelpHasNoSideEffects: `e2e/bench/run -h` used to start every
// service and build bin/ before printing its usage. A make on PATH that
// records being called, and a services env file whose pids are alive (so
// a regression would take them as running services and go on to make
// build, not start any), show it does neither.
func TestRunHelpHasNoSideEffects(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds floebench")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "make-called")
	fakeBin := filepath.Join(dir, "bin")
	if err := os.Mkdir(fakeBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fakeBin, "make"), []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	services := filepath.Join(dir, "services")
	if err := os.Mkdir(services, 0o755); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(services, "env"), []byte("FLOE_KAFKA_PIDS="+self+"\nFLOE_SCHEMA_REGISTRY_PID="+self+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-h", "--help"} {
		cmd := exec.Command("./run", "--quick", flag)
		cmd.Env = append(os.Environ(), "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"), "FLOE_SERVICES_DIR="+services)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %s: %v\n%s", flag, err, out)
		}
		for _, want := range []string{"usage: e2e/bench/run", "-quick", "-maint-duration"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("run %s: output lacks %q:\n%s", flag, want, out)
			}
		}
		if strings.Contains(string(out), "bench: using the services") || strings.Contains(string(out), "bench: starting services") {
			t.Errorf("run %s looked for services:\n%s", flag, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("run %s called make", flag)
		}
	}
}
