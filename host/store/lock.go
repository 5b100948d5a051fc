package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file in a data dir that the worker using it holds
// locked, with its pid inside.
const LockFile = "floe.lock"

// ErrDataDirInUse is wrapped by [LockDataDir] when another process holds
// the data dir.
var ErrDataDirInUse = errors.New("data dir in use")

// DirLock is a held data-dir lock.
type DirLock struct {
	f *os.File
}

// LockDataDir takes the data dir for this process: two workers on one
// data dir would both run its stored connectors and overwrite each
// other's state. The lock is an exclusive flock on dir/floe.lock, which
// holds the owner's pid; the kernel releases it when the process exits,
// however it exits. It fails at once, wrapping [ErrDataDirInUse] and
// naming the dir and the pid that holds it, when another process does.
func LockDataDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: create data dir %s: %w (check data.dir)", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w (check data.dir)", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		_ = f.Close()
		holder := "another process"
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
			holder = fmt.Sprintf("another floe worker (pid %d)", pid)
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is used by %s: %w; stop that worker, or give this one its own data.dir", dir, holder, ErrDataDirInUse)
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("store: write %s: %w", path, err)
		}
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the data dir. The pid stays in the file; the next
// worker overwrites it.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the only descriptor releases the flock
	l.f = nil
	return err
}
