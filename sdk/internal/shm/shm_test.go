package shm

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestShareAndOpen(t *testing.T) {
	if !Supported() {
		t.Skip("no sealed memory files here")
	}
	data := bytes.Repeat([]byte("floe batch "), 100_000)
	f, err := Create("test", data)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	// Another process would open /proc/<our pid>/fd/<fd>; so do we.
	g, err := Open(os.Getpid(), f.Fd(), f.Size())
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close() // the receiver's descriptor keeps the memory
	got, err := g.ReadAll()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll: %d bytes, %v", len(got), err)
	}
	m, unmap, err := g.Map()
	if err != nil || !bytes.Equal(m, data) {
		t.Fatalf("Map: %d bytes, %v", len(m), err)
	}
	unmap()
	if err := g.Close(); err != nil || g.Close() != nil {
		t.Errorf("Close twice: %v", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	if !Supported() {
		t.Skip("no sealed memory files here")
	}
	f, err := Create("test", []byte("12345"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := Open(os.Getpid(), f.Fd(), 4); err == nil || !strings.Contains(err.Error(), "holds 5 bytes, the handle says 4") {
		t.Errorf("wrong size: %v", err)
	}
	// A plain file can change under the reader: refused.
	plain, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Close() }()
	if _, err := Open(os.Getpid(), int(plain.Fd()), 0); err == nil || !strings.Contains(err.Error(), "not a sealed memory file") {
		t.Errorf("unsealed file: %v", err)
	}
	if _, err := Open(os.Getpid(), 1<<20, 5); err == nil || !strings.Contains(err.Error(), "/proc/") {
		t.Errorf("no such descriptor: %v", err)
	}
}
