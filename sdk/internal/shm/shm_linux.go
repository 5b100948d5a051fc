//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// seals are the seals a shared file must carry: its bytes and its size
// are fixed, and no one can lift that.
const seals = unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

var probe = sync.OnceValue(func() bool {
	fd, err := unix.MemfdCreate("floe-probe", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
})

// Supported reports whether this system has sealed memory files.
func Supported() bool { return probe() }

// Create makes a sealed memory file holding data. name labels it in
// /proc/<pid>/fd listings only.
func Create(name string, data []byte) (*File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return nil, ErrUnsupported
		}
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := writeAll(fd, data); err != nil {
		_ = f.Close()
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("shm: seal: %w", err)
	}
	return &File{f: f, size: int64(len(data))}, nil
}

func writeAll(fd int, data []byte) error {
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("shm: write %d bytes: %w", len(data), err)
		}
		off += n
	}
	return nil
}

// Open opens descriptor fd of process pid and checks that it is a sealed
// memory file of size bytes: a receiver can then trust that the bytes it
// reads are the ones the sender wrote, and stay so. The errors name the
// path and what is wrong.
func Open(pid, fd int, size int64) (*File, error) {
	path := procPath(pid, fd)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("shm: open %s: %w", path, err)
	}
	got, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil || got&seals != seals {
		_ = f.Close()
		if err == nil {
			err = fmt.Errorf("seals %#x, want %#x", got, seals)
		}
		return nil, fmt.Errorf("shm: %s is not a sealed memory file: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("shm: stat %s: %w", path, err)
	}
	if st.Size != size {
		_ = f.Close()
		return nil, fmt.Errorf("shm: %s holds %d bytes, the handle says %d", path, st.Size, size)
	}
	return &File{f: f, size: size}, nil
}

// Map maps the file read-only and returns its bytes, valid until unmap
// is called. Reading only part of them (a projection) touches only those
// pages.
func (f *File) Map() (data []byte, unmap func(), err error) {
	if f.size == 0 {
		return nil, func() {}, nil
	}
	b, err := unix.Mmap(int(f.f.Fd()), 0, int(f.size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("shm: map %d bytes: %w", f.size, err)
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}
