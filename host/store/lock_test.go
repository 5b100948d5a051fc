package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second holder of a data dir fails at once, naming the dir and the
// pid of the first; once the first lets go, the dir can be taken again.
func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(os.Getpid()) {
		t.Fatalf("lock file holds %q %v, want our pid %d", b, err, os.Getpid())
	}
	_, err = LockDataDir(dir)
	if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second lock: %v, want ErrDataDirInUse naming %s and pid %d", err, dir, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := LockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	_ = l2.Unlock()
}

// The lock is released by the kernel when its holder dies, however it
// dies: a lock left by a killed worker does not keep the dir. The holder
// is this test binary run again as a helper.
func TestLockDataDirReleasedByExit(t *testing.T) {
	if dir := os.Getenv("FLOE_TEST_LOCK_DIR"); dir != "" {
		if _, err := LockDataDir(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDataDirReleasedByExit$")
	cmd.Env = append(os.Environ(), "FLOE_TEST_LOCK_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper: %q %v", line, err)
	}
	_, err = LockDataDir(dir)
	if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Fatalf("while the helper holds it: %v, want ErrDataDirInUse naming pid %d", err, cmd.Process.Pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	l, err := LockDataDir(dir)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	_ = l.Unlock()
}
