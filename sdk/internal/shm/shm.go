// Package shm moves a batch's bytes between floe's processes without
// copying them through gRPC: the sender writes them once into a sealed
// memory file (Linux memfd) and only a handle travels, the process id and
// file descriptor number; the receiver opens /proc/<pid>/fd/<fd>, which
// gives it its own descriptor of the same memory. Sealing (no write, no
// resize) means what a receiver checked cannot change afterwards.
//
// Both sides of the plugin protocol use it: a source's SDK creates the
// files, the host opens them and hands its own descriptor on to the sink,
// whose SDK reads them. Where memfd is missing (other systems), Supported
// is false and batches travel as bytes.
package shm

import (
	"errors"
	"fmt"
	"os"
)

// ErrUnsupported is returned by Create and Open where memory files are
// not available.
var ErrUnsupported = errors.New("shm: sealed memory files are not supported on this system")

// File is a sealed memory file holding one batch's bytes. It is closed
// by Close, or by the garbage collector once unreachable (os.File's
// finalizer), so a lost File leaks nothing for long.
type File struct {
	f    *os.File
	size int64
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.size }

// Fd is the descriptor number, which another process opens as
// /proc/<pid>/fd/<Fd> while this File is open.
func (f *File) Fd() int { return int(f.f.Fd()) }

// Close releases the descriptor; the memory goes once no process holds
// one. Safe to call more than once.
func (f *File) Close() error {
	if f == nil || f.f == nil {
		return nil
	}
	err := f.f.Close()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// ReadAll copies the file's bytes into a new slice.
func (f *File) ReadAll() ([]byte, error) {
	b := make([]byte, f.size)
	if _, err := f.f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("shm: read %d bytes: %w", f.size, err)
	}
	return b, nil
}

func procPath(pid, fd int) string { return fmt.Sprintf("/proc/%d/fd/%d", pid, fd) }
