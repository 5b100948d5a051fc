package maintenance

import (
	"bytes"
	"context"
	"io"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
)

// rangedIO counts the opens and ranged reads that reach the store.
type rangedIO struct {
	*iceio.MemFS
	opens, readAts int
}

type rangedFile struct {
	iceio.File
	io *rangedIO
}

func (f *rangedFile) ReadAt(p []byte, off int64) (int, error) {
	f.io.readAts++
	return f.File.ReadAt(p, off)
}

func (r *rangedIO) Open(name string) (iceio.File, error) {
	r.opens++
	f, err := r.MemFS.Open(name)
	if err != nil {
		return nil, err
	}
	return &rangedFile{File: f, io: r}, nil
}

// A small Parquet file is read in one request however its reader reads
// it; a large one, and other files, as before.
func TestWholeSmallFiles(t *testing.T) {
	store := &rangedIO{MemFS: iceio.NewMemFS()}
	small := bytes.Repeat([]byte("p"), 100_000)
	big := bytes.Repeat([]byte("b"), wholeFileMax+1)
	for name, b := range map[string][]byte{"mem://w/t/data/small.parquet": small, "mem://w/t/data/big.parquet": big, "mem://w/t/metadata/m.avro": small} {
		if err := store.WriteFile(name, b); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := wholeSmallFiles(func(context.Context) (iceio.IO, error) { return store, nil })(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string, want []byte) {
		t.Helper()
		f, err := fsys.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		st, err := f.Stat()
		if err != nil || st.Size() != int64(len(want)) {
			t.Fatalf("%s: stat %v, %v", name, st, err)
		}
		// What a Parquet reader does: the footer length, the footer, the
		// column chunks.
		for _, off := range []int64{int64(len(want)) - 8, int64(len(want)) - 1000, 0, 4096, 50_000} {
			buf := make([]byte, 8)
			if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, want[off:off+8]) {
				t.Fatalf("%s: ReadAt(%d) = %q, %v", name, off, buf, err)
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(f)
		if err != nil || !bytes.Equal(all, want) {
			t.Fatalf("%s: read %d bytes, %v", name, len(all), err)
		}
	}
	read("mem://w/t/data/small.parquet", small)
	if store.opens != 1 || store.readAts != 0 {
		t.Fatalf("small file: %d opens, %d ranged reads of the store; want 1, 0", store.opens, store.readAts)
	}
	read("mem://w/t/data/big.parquet", big)
	if store.opens != 2 || store.readAts != 5 {
		t.Fatalf("big file: %d opens, %d ranged reads of the store; want 2, 5", store.opens, store.readAts)
	}
	read("mem://w/t/metadata/m.avro", small)
	if store.readAts != 10 {
		t.Fatalf("a manifest: %d ranged reads, want 5 more: it is not read whole", store.readAts)
	}
}
