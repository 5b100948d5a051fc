//go:build !linux

package shm

// Supported reports whether this system has sealed memory files: not
// this one.
func Supported() bool { return false }

// Create fails: see Supported.
func Create(string, []byte) (*File, error) { return nil, ErrUnsupported }

// Open fails: see Supported.
func Open(int, int, int64) (*File, error) { return nil, ErrUnsupported }

// Map fails: see Supported.
func (f *File) Map() ([]byte, func(), error) { return nil, nil, ErrUnsupported }
