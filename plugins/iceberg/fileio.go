package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/floehq/floe/lake"
)

// listCacheSize is how many manifest lists the task keeps in memory: the
// next commit of each table reads its parent's, which is the one the
// task wrote last.
const listCacheSize = 8

// keepLists wraps a catalog so that the tables it returns, and every
// table committed from them, remember the manifest lists written through
// them. An append reads its parent snapshot's manifest list to carry the
// parent's manifests over; when the task made the parent itself, that is
// the file it has just written, and on object storage reading it back is
// one more GET and a round trip in every commit. Manifest lists are never
// rewritten in place (each name holds a snapshot id and a random UUID),
// and one is kept only once its upload completed, so the copy in memory
// is the stored file. A list the task did not write (another committer's,
// compaction's) is read from the store as before.
//
// Nothing else changes: the wrapped file IO forwards every other call,
// and a table's commit still goes to the catalog with its requirements.
//
// s3, when not nil, gives the AWS configuration the tables' s3:// file IO
// shares (lake.SharedS3Config) instead of loading its own on every call;
// it is asked once, when the first table on S3 is seen, and may answer
// nil.
//
// serverCleans says the catalog deletes the metadata files a commit
// drops from the table's metadata log itself (a REST catalog: the server
// commits, and the Apache Iceberg reference server, like Polaris, deletes
// them when write.metadata.delete-after-commit.enabled is set; the Java
// REST client leaves it to the server). iceberg-go deletes them again
// from the client after every commit; on S3 that is two HEAD requests
// for a file already gone (the delete, then the directory marker) and a
// warning in the log, every commit once the log is full. With
// serverCleans the tables' file IO skips those deletes.
func keepLists(cat catalog.Catalog, s3 func(context.Context) *aws.Config, serverCleans bool) catalog.Catalog {
	return &listCatalog{Catalog: cat, lists: &listCache{}, s3: s3, serverCleans: serverCleans}
}

// listCatalog is a catalog whose tables keep their manifest lists.
type listCatalog struct {
	catalog.Catalog
	lists        *listCache
	serverCleans bool

	s3     func(context.Context) *aws.Config
	s3Once sync.Once
	s3Cfg  *aws.Config
}

// s3Config returns the shared AWS configuration, loading it on first use.
func (c *listCatalog) s3Config(ctx context.Context) *aws.Config {
	if c.s3 == nil {
		return nil
	}
	c.s3Once.Do(func() { c.s3Cfg = c.s3(ctx) })
	return c.s3Cfg
}

func (c *listCatalog) wrap(ctx context.Context, tbl *table.Table, err error) (*table.Table, error) {
	if err != nil || tbl == nil {
		return tbl, err
	}
	inner := tbl.FS
	var s3 *aws.Config
	if lake.IsS3Location(tbl.Location()) {
		s3 = c.s3Config(ctx)
	}
	fsF := func(ctx context.Context) (iceio.IO, error) {
		if s3 != nil && utils.GetAwsConfig(ctx) == nil {
			ctx = utils.WithAwsConfig(ctx, s3)
		}
		fsys, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		if _, ok := fsys.(*listIO); ok {
			return fsys, nil
		}
		l := newListIO(fsys, c.lists)
		l.keepMetadata = c.serverCleans
		return l, nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, c), nil
}

func (c *listCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	return c.wrap(ctx, tbl, err)
}

func (c *listCatalog) CreateTable(ctx context.Context, id table.Identifier, sc *icebergapi.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	tbl, err := c.Catalog.CreateTable(ctx, id, sc, opts...)
	return c.wrap(ctx, tbl, err)
}

func (c *listCatalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.RenameTable(ctx, from, to)
	return c.wrap(ctx, tbl, err)
}

// Close closes the catalog it wraps, if that has a Close.
func (c *listCatalog) Close() error {
	if cl, ok := c.Catalog.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// isManifestList reports whether a file name is iceberg-go's (and Java's)
// manifest list name: snap-<snapshot id>-<attempt>-<uuid>.avro.
func isManifestList(name string) bool {
	base := path.Base(name)
	return strings.HasPrefix(base, "snap-") && strings.HasSuffix(base, ".avro")
}

// listCache holds the last listCacheSize manifest lists written, by path.
type listCache struct {
	mu    sync.Mutex
	files map[string][]byte
	order []string // oldest first
	hits  int
}

func (c *listCache) put(name string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		c.files = map[string][]byte{}
	}
	if _, ok := c.files[name]; !ok {
		c.order = append(c.order, name)
	}
	c.files[name] = b
	for len(c.order) > listCacheSize {
		delete(c.files, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *listCache) get(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.files[name]
	if ok {
		c.hits++
	}
	return b, ok
}

func (c *listCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.files[name]; !ok {
		return
	}
	delete(c.files, name)
	for i, n := range c.order {
		if n == name {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// listIO is a table's file IO that keeps the manifest lists written
// through it. It offers the optional interfaces iceberg-go looks for
// (write, read, bulk delete, stat, listing) whatever the IO it wraps has,
// falling back to the plain calls where that one lacks them, as
// iceberg-go itself would.
type listIO struct {
	iceio.IO
	lists *listCache
	// keepMetadata skips removing metadata.json files: the catalog
	// deletes them (keepLists' serverCleans).
	keepMetadata bool
}

func newListIO(fsys iceio.IO, lists *listCache) *listIO {
	return &listIO{IO: fsys, lists: lists}
}

var (
	_ iceio.WriteFileIO     = (*listIO)(nil)
	_ iceio.ReadFileIO      = (*listIO)(nil)
	_ iceio.BulkRemovableIO = (*listIO)(nil)
	_ iceio.StatIO          = (*listIO)(nil)
	_ iceio.ListableIO      = (*listIO)(nil)
)

func (l *listIO) Open(name string) (iceio.File, error) {
	if b, ok := l.lists.get(name); ok {
		return &memFile{Reader: bytes.NewReader(b), name: path.Base(name), size: int64(len(b))}, nil
	}
	return l.IO.Open(name)
}

func (l *listIO) ReadFile(name string) ([]byte, error) {
	if b, ok := l.lists.get(name); ok {
		return bytes.Clone(b), nil
	}
	if r, ok := l.IO.(iceio.ReadFileIO); ok {
		return r.ReadFile(name)
	}
	f, err := l.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(f)
}

func (l *listIO) Remove(name string) error {
	if l.keepMetadata && strings.HasSuffix(name, ".metadata.json") {
		return nil // the catalog deleted it; see keepLists
	}
	l.lists.drop(name)
	return l.IO.Remove(name)
}

func (l *listIO) writer() (iceio.WriteFileIO, error) {
	w, ok := l.IO.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("file IO %T cannot write files", l.IO)
	}
	return w, nil
}

func (l *listIO) Create(name string) (iceio.FileWriter, error) {
	w, err := l.writer()
	if err != nil {
		return nil, err
	}
	fw, err := w.Create(name)
	if err != nil || !isManifestList(name) {
		return fw, err
	}
	return &teeWriter{FileWriter: fw, name: name, lists: l.lists}, nil
}

func (l *listIO) WriteFile(name string, p []byte) error {
	w, err := l.writer()
	if err != nil {
		return err
	}
	l.lists.drop(name)
	if err := w.WriteFile(name, p); err != nil {
		return err
	}
	if isManifestList(name) {
		l.lists.put(name, bytes.Clone(p))
	}
	return nil
}

func (l *listIO) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	for _, p := range paths {
		l.lists.drop(p)
	}
	if b, ok := l.IO.(iceio.BulkRemovableIO); ok {
		return b.DeleteFiles(ctx, paths)
	}
	var deleted []string
	var errs []error
	for _, p := range paths {
		if err := l.IO.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, p)
	}
	return deleted, errors.Join(errs...)
}

func (l *listIO) Stat(name string) (fs.FileInfo, error) {
	if s, ok := l.IO.(iceio.StatIO); ok {
		return s.Stat(name)
	}
	f, err := l.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.Stat()
}

func (l *listIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	if w, ok := l.IO.(iceio.ListableIO); ok {
		return w.WalkDir(root, fn)
	}
	return fmt.Errorf("file IO %T cannot list %s: %w", l.IO, root, errors.ErrUnsupported)
}

// teeWriter keeps a copy of a manifest list as it is written, and hands
// it to the cache once the upload completed.
type teeWriter struct {
	iceio.FileWriter
	name  string
	lists *listCache
	buf   bytes.Buffer
	bad   bool // a write failed: the upload is not the buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	n, err := w.FileWriter.Write(p)
	w.buf.Write(p[:n])
	if err != nil {
		w.bad = true
	}
	return n, err
}

func (w *teeWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w}, r)
}

func (w *teeWriter) Close() error {
	if err := w.FileWriter.Close(); err != nil || w.bad {
		return err
	}
	w.lists.put(w.name, w.buf.Bytes())
	return nil
}

// memFile is a cached manifest list opened for reading.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Name() string               { return f.name }
func (f *memFile) Size() int64                { return f.size }
func (f *memFile) Mode() fs.FileMode          { return 0o444 }
func (f *memFile) ModTime() time.Time         { return time.Time{} }
func (f *memFile) IsDir() bool                { return false }
func (f *memFile) Sys() any                   { return nil }
