//go:build !unix

package maintenance

import (
	"errors"
	"os"
)

// lockFile creates path exclusively; ok is false when it exists. Without
// flock a crashed holder leaves the file behind: delete it by hand.
func lockFile(path string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return f, true, nil
}

// unlockFile closes and removes the lock file.
func unlockFile(f *os.File) error {
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}
