package maintenance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// wholeFileMax is the size up to which a data file is read in one piece.
const wholeFileMax = 8 << 20

// wholeSmallFiles wraps a table's file IO so that a Parquet data file of
// at most wholeFileMax bytes is read in one request. Parquet readers read
// by ranges: the footer's length, the footer, then every column chunk of
// every row group, each a ReadAt; on object storage each is a ranged GET,
// on top of the GET that opening the object starts. Compacting the small
// files of frequent commits (the files it exists for) made about 19 GETs
// per file of 13 columns on the lake bench. Opening the object already
// streams all of it, so reading that stream to the end costs no request
// more, and the reads that follow are served from memory: one GET per
// file, the work's own size. Larger files keep the ranged reads (memory
// stays bounded by wholeFileMax per open file).
func wholeSmallFiles(fsF func(context.Context) (iceio.IO, error)) func(context.Context) (iceio.IO, error) {
	return func(ctx context.Context) (iceio.IO, error) {
		fsys, err := fsF(ctx)
		if err != nil {
			return nil, err
		}
		if _, ok := fsys.(*smallFileIO); ok {
			return fsys, nil
		}
		return &smallFileIO{IO: fsys}, nil
	}
}

// smallFileIO reads small Parquet files whole. It forwards the optional
// interfaces maintenance uses (write, bulk delete, listing, stat) with
// iceberg-go's own fallbacks where the wrapped IO lacks one.
type smallFileIO struct {
	iceio.IO
}

var (
	_ iceio.WriteFileIO     = (*smallFileIO)(nil)
	_ iceio.BulkRemovableIO = (*smallFileIO)(nil)
	_ iceio.ListableIO      = (*smallFileIO)(nil)
	_ iceio.StatIO          = (*smallFileIO)(nil)
)

func (s *smallFileIO) Open(name string) (iceio.File, error) {
	f, err := s.IO.Open(name)
	if err != nil || !strings.HasSuffix(name, ".parquet") {
		return f, err
	}
	st, err := f.Stat()
	if err != nil || st.Size() < 0 || st.Size() > wholeFileMax {
		return f, nil //nolint:nilerr // no size known: ranged reads as before
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		_ = f.Close()
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &wholeFile{Reader: bytes.NewReader(b), name: st.Name(), size: st.Size(), mod: st.ModTime()}, nil
}

func (s *smallFileIO) Create(name string) (iceio.FileWriter, error) {
	w, ok := s.IO.(iceio.WriteFileIO)
	if !ok {
		return nil, errNoWrite(s.IO)
	}
	return w.Create(name)
}

func (s *smallFileIO) WriteFile(name string, p []byte) error {
	w, ok := s.IO.(iceio.WriteFileIO)
	if !ok {
		return errNoWrite(s.IO)
	}
	return w.WriteFile(name, p)
}

func (s *smallFileIO) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	if b, ok := s.IO.(iceio.BulkRemovableIO); ok {
		return b.DeleteFiles(ctx, paths)
	}
	var deleted []string
	var errs []error
	for _, p := range paths {
		if err := s.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, p)
	}
	return deleted, errors.Join(errs...)
}

func (s *smallFileIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	if l, ok := s.IO.(iceio.ListableIO); ok {
		return l.WalkDir(root, fn)
	}
	return &fs.PathError{Op: "walk", Path: root, Err: errors.ErrUnsupported}
}

func (s *smallFileIO) Stat(name string) (fs.FileInfo, error) {
	if st, ok := s.IO.(iceio.StatIO); ok {
		return st.Stat(name)
	}
	f, err := s.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.Stat()
}

// wholeFile is a data file read into memory.
type wholeFile struct {
	*bytes.Reader
	name string
	size int64
	mod  time.Time
}

func (f *wholeFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *wholeFile) Close() error               { return nil }
func (f *wholeFile) Name() string               { return f.name }
func (f *wholeFile) Size() int64                { return f.size }
func (f *wholeFile) Mode() fs.FileMode          { return 0o444 }
func (f *wholeFile) ModTime() time.Time         { return f.mod }
func (f *wholeFile) IsDir() bool                { return false }
func (f *wholeFile) Sys() any                   { return nil }

func errNoWrite(fsys iceio.IO) error { return fmt.Errorf("file IO %T cannot write files", fsys) }
