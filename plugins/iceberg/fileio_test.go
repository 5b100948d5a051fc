package iceberg

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
)

// countingIO counts the opens of each file of the IO it wraps.
type countingIO struct {
	iceio.IO
	mu    sync.Mutex
	opens map[string]int
}

func (c *countingIO) Open(name string) (iceio.File, error) {
	c.mu.Lock()
	if c.opens == nil {
		c.opens = map[string]int{}
	}
	c.opens[name]++
	c.mu.Unlock()
	return c.IO.Open(name)
}

func (c *countingIO) Create(name string) (iceio.FileWriter, error) {
	return c.IO.(iceio.WriteFileIO).Create(name)
}

func (c *countingIO) WriteFile(name string, p []byte) error {
	return c.IO.(iceio.WriteFileIO).WriteFile(name, p)
}

func (c *countingIO) listOpens() (n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, k := range c.opens {
		if isManifestList(name) {
			n += k
		}
	}
	return n
}

// A manifest list written through a listIO is read back from memory; any
// other file, and a list written elsewhere, from the store.
func TestListIOKeepsWrittenManifestLists(t *testing.T) {
	store := &countingIO{IO: iceio.NewMemFS()}
	lists := &listCache{}
	fsys := newListIO(store, lists)
	list := "mem://b/t/metadata/snap-1-0-0f8e.avro"
	w, err := fsys.Create(list)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, strings.NewReader("manifest list bytes")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f, err := fsys.Open(list)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		if err != nil || string(b) != "manifest list bytes" {
			t.Fatalf("read %q, %v", b, err)
		}
		st, err := f.Stat()
		if err != nil || st.Size() != int64(len(b)) {
			t.Fatalf("stat = %v, %v", st, err)
		}
		buf := make([]byte, 4)
		if _, err := f.ReadAt(buf, 9); err != nil || string(buf) != "list" {
			t.Fatalf("ReadAt = %q, %v", buf, err)
		}
		_ = f.Close()
	}
	if n := store.opens[list]; n != 0 {
		t.Fatalf("the store was read %d times for a list written through the IO", n)
	}

	// Other files and other writers' lists come from the store.
	other := "mem://b/t/metadata/snap-2-0-aa.avro"
	if err := store.WriteFile(other, []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	manifest := "mem://b/t/metadata/0f8e-m0.avro"
	if err := fsys.WriteFile(manifest, []byte("manifest")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{other, manifest} {
		f, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		if store.opens[name] != 1 {
			t.Fatalf("%s: %d opens of the store, want 1", name, store.opens[name])
		}
	}

	// A removed list is forgotten.
	if err := fsys.Remove(list); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open(list); err == nil {
		t.Fatal("a removed manifest list still opens")
	}
}

// failingWriter fails its upload at Close.
type failingWriter struct{ iceio.FileWriter }

func (failingWriter) Close() error { return errors.New("upload failed") }

type failingIO struct{ *iceio.MemFS }

func (f failingIO) Create(name string) (iceio.FileWriter, error) {
	w, err := f.MemFS.Create(name)
	return failingWriter{w}, err
}

// A list whose upload failed is not kept: the store may not hold it.
func TestListIOForgetsFailedUploads(t *testing.T) {
	lists := &listCache{}
	fsys := newListIO(failingIO{iceio.NewMemFS()}, lists)
	list := "mem://b/t/metadata/snap-1-0-0f8e.avro"
	w, err := fsys.Create(list)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("x"))
	if err := w.Close(); err == nil {
		t.Fatal("Close passed")
	}
	if _, ok := lists.get(list); ok {
		t.Fatal("a failed upload is in the cache")
	}
}

// The cache holds the newest listCacheSize lists.
func TestListCacheBound(t *testing.T) {
	c := &listCache{}
	for i := range listCacheSize + 3 {
		c.put(strings.Repeat("x", i+1), []byte{byte(i)})
	}
	if len(c.files) != listCacheSize || len(c.order) != listCacheSize {
		t.Fatalf("%d files, %d in order", len(c.files), len(c.order))
	}
	if _, ok := c.get("x"); ok {
		t.Fatal("the oldest list is still kept")
	}
	if _, ok := c.get(strings.Repeat("x", listCacheSize+3)); !ok {
		t.Fatal("the newest list is not kept")
	}
}

// The sink's commits read their parent's manifest list from memory, not
// from the store: each commit after the first continues the one before.
// A commit by another connector in between is read from the store, and
// the next commit still lands on top of it.
func TestCommitReadsOwnManifestListFromMemory(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	store := countStoreOpens(tk)
	prepare(t, tk, 1, schemaV1)
	for cp := uint64(1); cp <= 4; cp++ {
		step(t, tk, cp, batchV1("p", int64(cp-1)*10, 10))
	}
	if n := store.listOpens(); n != 0 {
		t.Fatalf("the commits read %d manifest lists from the store, want 0", n)
	}
	if c := tk.cat.(*listCatalog).lists; c.hits != 3 {
		t.Fatalf("%d manifest lists read from memory, want 3 (commits 2..4)", c.hits)
	}

	f2 := *f
	f2.connector = "another-connector"
	other := f2.open(1)
	prepare(t, other, 1, schemaV1)
	step(t, other, 1, batchV1("x", 0, 10))
	step(t, tk, 5, batchV1("p", 40, 10))
	if n := store.listOpens(); n != 1 {
		t.Fatalf("the commit after another connector's read %d manifest lists from the store, want 1 (the other's)", n)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 50}, "x": {0, 10}})
}

// countStoreOpens makes the task's tables count their file opens below
// the list cache, and returns the counter.
func countStoreOpens(tk *task) *countingIO {
	lc := tk.cat.(*listCatalog)
	counter := &countingIO{}
	lc.Catalog = &storeCounting{Catalog: lc.Catalog, wrap: func(fsys iceio.IO) iceio.IO {
		counter.mu.Lock()
		counter.IO = fsys
		counter.mu.Unlock()
		return counter
	}}
	return counter
}

// storeCounting is a catalog whose tables' file IO is wrap's.
type storeCounting struct {
	catalog.Catalog
	wrap func(iceio.IO) iceio.IO
}

func (s *storeCounting) rewrap(tbl *table.Table, err error) (*table.Table, error) {
	if err != nil {
		return nil, err
	}
	inner := tbl.FS
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(ctx context.Context) (iceio.IO, error) {
		fsys, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		return s.wrap(fsys), nil
	}, s), nil
}

func (s *storeCounting) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	return s.rewrap(s.Catalog.LoadTable(ctx, id))
}

func (s *storeCounting) CreateTable(ctx context.Context, id table.Identifier, sc *icebergapi.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	return s.rewrap(s.Catalog.CreateTable(ctx, id, sc, opts...))
}

// Tables on S3 get the shared AWS configuration in the context their file
// IO is made with, loaded once; tables elsewhere never ask for it.
func TestKeepListsSharesS3Config(t *testing.T) {
	shared := &aws.Config{Region: "shared"}
	loads := 0
	lc := keepLists(nil, func(context.Context) *aws.Config { loads++; return shared }, false).(*listCatalog)
	sc := icebergapi.NewSchema(1, icebergapi.NestedField{ID: 1, Name: "id", Type: icebergapi.PrimitiveTypes.Int64, Required: true})
	tableAt := func(loc string) (*table.Table, *[]*aws.Config) {
		meta, err := table.NewMetadata(sc, icebergapi.UnpartitionedSpec, table.UnsortedSortOrder, loc, nil)
		if err != nil {
			t.Fatal(err)
		}
		var seen []*aws.Config
		tbl := table.New(table.Identifier{"db", "t"}, meta, loc+"/metadata/v1.metadata.json", func(ctx context.Context) (iceio.IO, error) {
			seen = append(seen, utils.GetAwsConfig(ctx))
			return iceio.NewMemFS(), nil
		}, nil)
		return tbl, &seen
	}
	ctx := context.Background()
	for range 2 {
		tbl, seen := tableAt("s3://lake/db/t")
		w, err := lc.wrap(ctx, tbl, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.FS(ctx); err != nil {
			t.Fatal(err)
		}
		if len(*seen) != 1 || (*seen)[0] != shared {
			t.Fatalf("s3 table: file IO made with %v, want the shared config", *seen)
		}
	}
	if loads != 1 {
		t.Fatalf("the shared config was loaded %d times, want 1", loads)
	}
	tbl, seen := tableAt("file:///tmp/db/t")
	w, _ := lc.wrap(ctx, tbl, nil)
	if _, err := w.FS(ctx); err != nil {
		t.Fatal(err)
	}
	if (*seen)[0] != nil {
		t.Fatal("a local table's file IO got the S3 config")
	}
}

// removingIO records the removes of the IO it wraps.
type removingIO struct {
	iceio.IO
	removed []string
}

func (r *removingIO) WriteFile(name string, p []byte) error {
	return r.IO.(iceio.WriteFileIO).WriteFile(name, p)
}

func (r *removingIO) Create(name string) (iceio.FileWriter, error) {
	return r.IO.(iceio.WriteFileIO).Create(name)
}

func (r *removingIO) Remove(name string) error {
	r.removed = append(r.removed, name)
	return r.IO.Remove(name)
}

// On a catalog that deletes the metadata files a commit drops (REST),
// the tables' file IO leaves them to it; anything else it removes.
func TestListIOLeavesMetadataFilesToTheCatalog(t *testing.T) {
	for _, cleans := range []bool{false, true} {
		store := &removingIO{IO: iceio.NewMemFS()}
		l := newListIO(store, &listCache{})
		l.keepMetadata = cleans
		md, data := "s3://b/t/metadata/00001-a.metadata.json", "s3://b/t/data/f.parquet"
		for _, name := range []string{md, data} {
			if err := l.WriteFile(name, []byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := l.Remove(name); err != nil {
				t.Fatalf("catalog cleans metadata %v: remove %s: %v", cleans, name, err)
			}
		}
		want := []string{md, data}
		if cleans {
			want = want[1:]
		}
		if !slices.Equal(store.removed, want) {
			t.Errorf("catalog cleans metadata %v: removed %v, want %v", cleans, store.removed, want)
		}
	}
}
