package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// writeJSON stores v as path atomically: a temporary file in the same
// directory is written and synced, renamed over path, and the directory is
// synced so the rename itself survives a crash.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("store: encode %s: %w", path, err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("store: write %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		return errors.Join(fmt.Errorf("store: sync %s: %w", dir, err), d.Close())
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}

// readJSON decodes path into v. A missing file wraps ErrNotFound; a file
// that does not parse is an error naming it, so the user can fix or remove
// it.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("store: %s is corrupt (%w); fix or remove the file", path, err)
	}
	return nil
}

// removeFile deletes path; a missing file is fine.
func removeFile(path string) error {
	err := os.Remove(path)
	if err == nil {
		return syncDir(filepath.Dir(path))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("store: remove %s: %w", path, err)
}

// tmpPrefix marks temporary files, which listings skip.
const tmpPrefix = ".tmp-"

// fileName maps a connector name to a file name: letters, digits, '-',
// '_' and '.' stay; every other byte (and a leading '.') becomes %XX, so
// names with '/' or spaces cannot escape the folder or collide.
// MaxNameBytes bounds the file name a connector's name becomes
// ([fileName]), leaving room for the suffixes within the 255 bytes most
// file systems allow.
const MaxNameBytes = 240

// CheckName refuses a connector name the store cannot hold: one whose
// file name would be too long for the file system.
func CheckName(name string) error {
	if n := len(fileName(name)); n > MaxNameBytes {
		return fmt.Errorf("connector name of %d bytes is too long: floe stores a connector in files named after it, and this name takes %d bytes there (at most %d; letters, digits, '-', '_' and '.' take one byte, any other byte three)", len(name), n, MaxNameBytes)
	}
	return nil
}

func fileName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || (c == '.' && i > 0)
		if ok {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
