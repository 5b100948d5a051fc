//go:build unix

package maintenance

import (
	"errors"
	"os"
	"syscall"
)

// lockFile opens path and takes an exclusive, non-blocking flock on it. ok
// is false when another open file (in any process) holds it. The kernel
// frees the lock when the holder's process ends, so a crash never leaves
// it stale.
func lockFile(path string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// unlockFile releases the lock by closing the file.
func unlockFile(f *os.File) error { return f.Close() }
