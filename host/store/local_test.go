package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestConnectorsRoundTrip(t *testing.T) {
	ctx := context.Background()
	l, err := OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Connector(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing connector: got %v, want ErrNotFound", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, name := range []string{"b", "a", "with/slash and space", ".hidden", "x.override"} {
		c := Connector{Name: name, Config: map[string]string{"k": name}, Target: TargetRunning, Created: now, Updated: now}
		if err := l.PutConnector(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	all, err := l.Connectors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
		if c.Config["k"] != c.Name {
			t.Errorf("%s: config %v", c.Name, c.Config)
		}
	}
	if got := strings.Join(names, ","); got != ".hidden,a,b,with/slash and space,x.override" {
		t.Fatalf("names = %s", got)
	}
	c, err := l.Connector(ctx, "with/slash and space")
	if err != nil || c.Target != TargetRunning || !c.Created.Equal(now) {
		t.Fatalf("got %+v, %v", c, err)
	}
	// Replace keeps one record.
	c.Target = TargetPaused
	if err := l.PutConnector(ctx, c); err != nil {
		t.Fatal(err)
	}
	if c2, _ := l.Connector(ctx, c.Name); c2.Target != TargetPaused {
		t.Fatalf("target = %s", c2.Target)
	}
	if err := l.DeleteConnector(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteConnector(ctx, "a"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	all, _ = l.Connectors(ctx)
	if len(all) != 4 {
		t.Fatalf("after delete: %d connectors", len(all))
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Join(l.Dir(), connectorsDir))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Errorf("leftover temp file %s", e.Name())
		}
	}
}

func TestCorruptFileIsNamed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, connectorsDir, "broken.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = l.Connectors(ctx)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("got %v, want an error naming %s", err, bad)
	}
	if err := os.WriteFile(filepath.Join(dir, offsetsDir, "c.json"), []byte("[1,"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Committed(ctx, "c"); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "c.json") {
		t.Fatalf("committed: got %v", err)
	}
}

func TestStatusAndTopics(t *testing.T) {
	ctx := context.Background()
	l, _ := OpenLocal(t.TempDir())
	if _, err := l.Status(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v", err)
	}
	s := Status{Connector: InstanceStatus{State: "RUNNING", WorkerID: "w"}, Tasks: []InstanceStatus{{State: "FAILED", Trace: "boom"}}}
	if err := l.PutStatus(ctx, "c", s); err != nil {
		t.Fatal(err)
	}
	got, err := l.Status(ctx, "c")
	if err != nil || got.Tasks[0].Trace != "boom" {
		t.Fatalf("got %+v %v", got, err)
	}
	if tp, err := l.Topics(ctx, "c"); err != nil || len(tp) != 0 {
		t.Fatalf("topics before: %v %v", tp, err)
	}
	if err := l.PutTopics(ctx, "c", []string{"b", "a", "b"}); err != nil {
		t.Fatal(err)
	}
	if tp, _ := l.Topics(ctx, "c"); strings.Join(tp, ",") != "a,b" {
		t.Fatalf("topics = %v", tp)
	}
	if err := l.DeleteStatus(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if tp, _ := l.Topics(ctx, "c"); len(tp) != 0 {
		t.Fatalf("topics after delete = %v", tp)
	}
}

func TestOffsetsAndOverrides(t *testing.T) {
	ctx := context.Background()
	l, _ := OpenLocal(t.TempDir())
	if _, err := l.Committed(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v", err)
	}
	if err := l.PutCommitted(ctx, "c", Committed{Checkpoint: 7, Positions: map[string]int64{"t/0": 10}}); err != nil {
		t.Fatal(err)
	}
	if err := l.PutOverride(ctx, "c", Override{Positions: map[string]int64{"t/0": 3}, AfterCheckpoint: 7}); err != nil {
		t.Fatal(err)
	}
	// A connector whose name looks like another's override file name
	// must not collide with it.
	if err := l.PutCommitted(ctx, "c.override", Committed{Checkpoint: 1}); err != nil {
		t.Fatal(err)
	}
	c, _ := l.Committed(ctx, "c")
	o, err := l.Override(ctx, "c")
	if err != nil || c.Positions["t/0"] != 10 || o.Positions["t/0"] != 3 || o.AfterCheckpoint != 7 {
		t.Fatalf("committed %+v override %+v %v", c, o, err)
	}
	if err := l.DeleteOverride(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Override(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("override after delete: %v", err)
	}
	if err := l.DeleteOffsets(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Committed(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("committed after delete: %v", err)
	}
	if c, err := l.Committed(ctx, "c.override"); err != nil || c.Checkpoint != 1 {
		t.Fatalf("other connector: %+v %v", c, err)
	}
}

func TestConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	l, _ := OpenLocal(t.TempDir())
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.PutCommitted(ctx, "c", Committed{Checkpoint: uint64(i)})
			_, _ = l.Connectors(ctx)
		}()
	}
	wg.Wait()
	if _, err := l.Committed(ctx, "c"); err != nil {
		t.Fatal(err)
	}
}

func TestFileName(t *testing.T) {
	for in, want := range map[string]string{
		"orders-to-iceberg": "orders-to-iceberg",
		"a/b":               "a%2Fb",
		"..":                "%2E.",
		"a b":               "a%20b",
	} {
		if got := fileName(in); got != want {
			t.Errorf("fileName(%q) = %q, want %q", in, got, want)
		}
	}
}
