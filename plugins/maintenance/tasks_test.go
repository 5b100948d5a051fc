package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

func loadTable(t testing.TB, cat catalog.Catalog, name string) *table.Table {
	t.Helper()
	id, _ := parseTableName(name)
	tbl, err := cat.LoadTable(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// localPath turns a file:// location into a path.
func localPath(loc string) string { return strings.TrimPrefix(loc, "file://") }

// filesUnder lists the files under dir whose names end with suffix.
func filesUnder(t testing.TB, dir, suffix string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestExpireKeepsNewestFloeSnapshot: with retain-last 1 and max-age 0,
// expiry still keeps the newest snapshot of every floe connector (and so
// everything above it), and recovery's walk finds it.
func TestExpireKeepsNewestFloeSnapshot(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend) {
		cat := b.catalog(t)
		createTable(t, cat, "db.events", nil)
		orders := newWriter(cat, "db.events", "orders")
		n := fill(t, orders, 20, 2, 2)
		newestOrders := loadTable(t, cat, "db.events").CurrentSnapshot().SnapshotID
		other := newWriter(cat, "db.events", "")
		other.offset = n
		for i := range 15 {
			if err := other.commit(context.Background(), rowsFor(n+int64(i)*2, 2, 2)); err != nil {
				t.Fatal(err)
			}
		}
		n += 30

		tk := b.openTask(t, b.config("db.events", append(only(),
			"maintenance.expire-snapshots.retain-last", "1", "maintenance.expire-snapshots.max-age.ms", "0")...))
		res := cycle(t, tk, sdk.CycleRequest{Force: []string{taskExpire}})
		r := runsOf(res.Runs, taskExpire)[0]
		t.Logf("%s", r.Detail)
		tbl := loadTable(t, cat, "db.events")
		if tbl.SnapshotByID(newestOrders) == nil {
			t.Fatalf("the newest snapshot of connector orders was expired")
		}
		if got := len(tbl.Metadata().Snapshots()); got != 16 || r.FilesBefore != 35 || r.FilesAfter != 16 {
			t.Fatalf("snapshots %d (run %d → %d); want 35 → 16: the 15 above the newest orders snapshot and it", got, r.FilesBefore, r.FilesAfter)
		}
		scan(t, cat, "db.events").checkExactly(t, n)

		// Once orders commits again, its older snapshots may go.
		if err := orders.commit(context.Background(), rowsFor(n, 2, 2)); err != nil {
			t.Fatal(err)
		}
		n += 2
		cycle(t, tk, sdk.CycleRequest{Force: []string{taskExpire}})
		if got := len(loadTable(t, cat, "db.events").Metadata().Snapshots()); got != 1 {
			t.Fatalf("snapshots after the connector moved on: %d; want 1", got)
		}
		scan(t, cat, "db.events").checkExactly(t, n)
	})
}

// TestExpireDeletesFilesOnlyExpiredSnapshotsReferenced: after compaction,
// expiring the pre-compaction snapshots deletes the small files they
// alone referenced, and nothing the current snapshot reads.
func TestExpireDeletesFilesOnlyExpiredSnapshotsReferenced(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	n := fill(t, w, 40, 2, 2)
	tk := b.openTask(t, b.config("db.events", append(only(),
		"maintenance.expire-snapshots.retain-last", "1", "maintenance.expire-snapshots.max-age.ms", "0")...))
	cycle(t, tk, sdk.CycleRequest{Force: []string{taskRewriteData}})
	if err := w.commit(context.Background(), rowsFor(n, 2, 2)); err != nil {
		t.Fatal(err)
	}
	n += 2
	dataDir := localPath(loadTable(t, cat, "db.events").Location()) + "/data"
	before := len(filesUnder(t, dataDir, ".parquet"))
	cycle(t, tk, sdk.CycleRequest{Force: []string{taskExpire}})
	after := len(filesUnder(t, dataDir, ".parquet"))
	live := shape(t, cat, "db.events").DataFiles
	if before != 84 || int64(after) != live || live != 4 {
		t.Fatalf("parquet files on disk %d → %d; live %d; want 84 (80 small, 2 compacted, 2 new) → 4", before, after, live)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
}

// TestExpireIsQuietAboutFilesAlreadyDeleted: expiry's post-commit cleanup
// finds some of the files it deletes already gone (an earlier expiry
// deleted them): they count as deleted, with no warning naming them. A
// file it really cannot delete is still warned about, by name.
func TestExpireIsQuietAboutFilesAlreadyDeleted(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	n := fill(t, w, 40, 2, 2)
	dataDir := localPath(loadTable(t, cat, "db.events").Location()) + "/data"
	small := filesUnder(t, dataDir, ".parquet")
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		t.Log(strings.TrimSpace(string(p)))
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	tk := b.openTaskLogging(t, b.config("db.events", append(only(),
		"maintenance.expire-snapshots.retain-last", "1", "maintenance.expire-snapshots.max-age.ms", "0")...), log)
	cycle(t, tk, sdk.CycleRequest{Force: []string{taskRewriteData}})
	if err := w.commit(context.Background(), rowsFor(n, 2, 2)); err != nil {
		t.Fatal(err)
	}
	n += 2

	// The 80 small files are referenced only by the snapshots before the
	// compaction, which expiry removes: 30 are gone already, and one is a
	// directory with a file in it, which no delete can remove.
	const gone = 30
	if len(small) != 80 {
		t.Fatalf("%d parquet files before compaction, want 80", len(small))
	}
	for _, f := range small[:gone] {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	stuck := small[gone]
	if err := os.Remove(stuck); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(stuck, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	cycle(t, tk, sdk.CycleRequest{Force: []string{taskExpire}})

	mu.Lock()
	out := logs.String()
	mu.Unlock()
	var warned []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=WARN") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "post-commit") || !strings.Contains(warned[0], stuck) ||
		!strings.Contains(warned[0], "directory not empty") {
		t.Fatalf("warnings %q; want one, naming %s, which could not be deleted", warned, stuck)
	}
	for _, f := range small[:gone] {
		if strings.Contains(out, filepath.Base(f)) {
			t.Errorf("the logs name %s, which was already deleted", f)
		}
	}
	if left := filesUnder(t, dataDir, ".parquet"); int64(len(left)) != shape(t, cat, "db.events").DataFiles {
		t.Errorf("%d parquet files left, want only the %d live ones", len(left), shape(t, cat, "db.events").DataFiles)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
}

// splitNotExist counts the files already gone among the per-file errors
// iceberg-go joins (nested, as it joins them one by one) and keeps the
// rest whole.
func TestSplitNotExist(t *testing.T) {
	missing := func(name string) error { return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOENT} }
	denied := &fs.PathError{Op: "remove", Path: "data/b.parquet", Err: syscall.EACCES}
	var joined error
	for _, e := range []error{missing("data/a.parquet"), denied, missing("data/c.parquet"), missing("data/d.parquet")} {
		joined = errors.Join(joined, e)
	}
	gone, rest := splitNotExist(errors.Join(nil, joined))
	if gone != 3 || rest == nil || !errors.Is(rest, syscall.EACCES) || errors.Is(rest, fs.ErrNotExist) || rest.Error() != denied.Error() {
		t.Fatalf("splitNotExist = %d, %v; want 3 files gone and only %v left", gone, rest, denied)
	}
	if gone, rest := splitNotExist(errors.Join(missing("x"), missing("y"))); gone != 2 || rest != nil {
		t.Fatalf("only missing files: %d, %v; want 2 and nil", gone, rest)
	}
	if gone, rest := splitNotExist(fmt.Errorf("read manifest list: %w", denied)); gone != 0 || rest == nil || !strings.Contains(rest.Error(), "read manifest list") {
		t.Fatalf("a single wrapped error: %d, %v; want it kept whole", gone, rest)
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestOrphanCleanup: an unreferenced file older than the safety age goes;
// a young one and every referenced file stay; a dry run deletes nothing.
func TestOrphanCleanup(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", nil)
	n := fill(t, newWriter(cat, "db.events", "orders"), 10, 2, 2)
	tbl := loadTable(t, cat, "db.events")
	dataDir := localPath(tbl.Location()) + "/data"
	old := time.Now().Add(-4 * 24 * time.Hour)
	oldOrphan := filepath.Join(dataDir, "part=p0", "orphan-old.parquet")
	youngOrphan := filepath.Join(dataDir, "part=p0", "orphan-young.parquet")
	for _, p := range []string{oldOrphan, youngOrphan} {
		if err := os.WriteFile(p, []byte("not committed"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(oldOrphan, old, old); err != nil {
		t.Fatal(err)
	}
	// Referenced files as old as the orphan must stay.
	for _, p := range filesUnder(t, localPath(tbl.Location()), "") {
		if p != youngOrphan {
			_ = os.Chtimes(p, old, old)
		}
	}

	tk := b.openTask(t, b.config("db.events", only()...))
	res := cycle(t, tk, sdk.CycleRequest{Force: []string{taskOrphans}, DryRun: true})
	r := runsOf(res.Runs, taskOrphans)[0]
	if r.FilesBefore != 1 || r.FilesAfter != 1 || !strings.Contains(r.Detail, "orphan-old.parquet") {
		t.Fatalf("dry run: %+v", r)
	}
	if _, err := os.Stat(oldOrphan); err != nil {
		t.Fatalf("a dry run deleted the orphan: %v", err)
	}
	dry := b.openTask(t, b.config("db.events", append(only(), "maintenance.delete-orphan-files.dry-run", "true")...))
	cycle(t, dry, sdk.CycleRequest{Force: []string{taskOrphans}})
	if _, err := os.Stat(oldOrphan); err != nil {
		t.Fatalf("the dry-run config deleted the orphan: %v", err)
	}

	res = cycle(t, tk, sdk.CycleRequest{Force: []string{taskOrphans}})
	r = runsOf(res.Runs, taskOrphans)[0]
	if r.FilesBefore != 1 || r.FilesAfter != 0 {
		t.Fatalf("run: %+v", r)
	}
	if _, err := os.Stat(oldOrphan); !os.IsNotExist(err) {
		t.Fatalf("the old orphan is still there: %v", err)
	}
	if _, err := os.Stat(youngOrphan); err != nil {
		t.Fatalf("the young orphan was deleted: %v", err)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
}

// TestDeleteMetadataFiles keeps the current metadata.json and the newest
// retain-last versions, and deletes the rest.
func TestDeleteMetadataFiles(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", iceberg.Properties{"write.metadata.delete-after-commit.enabled": "false"})
	n := fill(t, newWriter(cat, "db.events", "orders"), 30, 2, 2)
	metaDir := filepath.Dir(localPath(loadTable(t, cat, "db.events").MetadataLocation()))
	if got := len(filesUnder(t, metaDir, ".metadata.json")); got != 31 {
		t.Fatalf("metadata files before: %d", got)
	}
	tk := b.openTask(t, b.config("db.events", append(only(), "maintenance.delete-metadata-files.retain-last", "5")...))
	res := cycle(t, tk, sdk.CycleRequest{Force: []string{taskMetadataFiles}})
	r := runsOf(res.Runs, taskMetadataFiles)[0]
	if got := len(filesUnder(t, metaDir, ".metadata.json")); got != 6 || r.FilesBefore != 31 || r.FilesAfter != 6 {
		t.Fatalf("metadata files after: %d; run %+v; want 6 (current + 5)", got, r)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
	// The table still commits.
	if err := newWriter(cat, "db.events", "other").commit(context.Background(), rowsFor(n, 2, 2)); err != nil {
		t.Fatal(err)
	}
}

// TestRewriteManifests merges one manifest per commit into one.
func TestRewriteManifests(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", nil)
	n := fill(t, newWriter(cat, "db.events", "orders"), 40, 2, 2)
	tk := b.openTask(t, b.config("db.events", only(taskRewriteManifests)...))
	res := cycle(t, tk, sdk.CycleRequest{})
	r := runsOf(res.Runs, taskRewriteManifests)
	if len(r) != 1 || r[0].Trigger != "manifest-count 40 ≥ 20" || r[0].FilesBefore != 40 || r[0].FilesAfter != 1 {
		t.Fatalf("runs: %+v", res.Runs)
	}
	if got := shape(t, cat, "db.events").Manifests; got != 1 {
		t.Fatalf("manifests after: %d", got)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
	// Nothing more to do: a forced run is a no-op.
	res = cycle(t, tk, sdk.CycleRequest{Force: []string{taskRewriteManifests}})
	if r := runsOf(res.Runs, taskRewriteManifests)[0]; !strings.HasPrefix(r.Detail, "no-op") {
		t.Fatalf("second run: %+v", r)
	}
}

// TestMetadataFileNewerThanTheLoadedTableStays is the race a CI run met:
// the task loaded a table at version 0, a commit made version 1
// milliseconds later, and the file system stamped version 1 from a tick
// before version 0's last-updated time. Version 1 is current in the
// catalog and must stay; only lower versions may go.
func TestMetadataFileNewerThanTheLoadedTableStays(t *testing.T) {
	cutoff := time.Now()
	early := cutoff.Add(-4 * time.Millisecond)
	for _, c := range []struct {
		name    string
		current int
		modTime time.Time
		want    bool
	}{
		{"00001-27a00a18-4c5b-4a9d-a552-cb3c8663930c.metadata.json", 0, early, false},
		{"00001-27a00a18-4c5b-4a9d-a552-cb3c8663930c.metadata.json", 1, early, false},
		{"00001-27a00a18-4c5b-4a9d-a552-cb3c8663930c.metadata.json", 2, early, true},
		{"00001-27a00a18-4c5b-4a9d-a552-cb3c8663930c.gz.metadata.json", 2, cutoff, true},
		{"v3.metadata.json", 2, early, false},
		{"v3.metadata.json", 2, cutoff.Add(-2 * mtimeSlack), true},
		{"00001-27a00a18.metadata.json", -1, early, false},
	} {
		if got := superseded(c.name, c.current, c.modTime, cutoff); got != c.want {
			t.Errorf("superseded(%s, current %d, %s before the cutoff) = %v, want %v", c.name, c.current, cutoff.Sub(c.modTime), got, c.want)
		}
	}
}
