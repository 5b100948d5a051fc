package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/e2e/harness"
	"github.com/floehq/floe/lake"
)

// lakeTasks are the maintenance tasks, in the order they are run.
var lakeTasks = []string{"rewrite-data-files", "expire-snapshots", "rewrite-manifests", "delete-orphan-files", "delete-metadata-files"}

// TestLakeMaintenanceOnS3 maintains a table on REST catalog + S3 with
// `floe maintain --once --force <task>`, first every task while Kafka →
// iceberg keeps committing every second, then each task alone with the
// feeder paused, counting the object store's requests per task (its
// request log). Two planted orphans sit in the table's data folder: one
// 2 h old (older than the 1 h safety age), one new. Afterwards, listed
// through the S3 API: the old orphan is gone and the new one stays; every
// data file in the bucket is referenced by a snapshot the table still has
// (the expired snapshots' files were deleted); every live file is there;
// the live data files are few; every produced record is read once by
// DuckDB and PyIceberg. No task lists anything but the table's own
// location, and no task's requests exceed a bound proportional to the
// table's files.
func TestLakeMaintenanceOnS3(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Plugin("iceberg-maintenance"), harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 8*time.Minute)
	lk := env.Lake
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 3000, rate: 1000, name: "lakemaint", lake: &lk})
	r.waitCommitted(ctx, r.committed(ctx)+10_000) // ten commits or more: small files, snapshots, manifests

	c, err := lake.ParseCatalogConfig(r.conn.Config)
	if err != nil {
		t.Fatal(err)
	}
	cat, closeCat, err := lake.OpenCatalog(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeCat() }()
	id := table.Identifier(strings.Split(r.all.Name, "."))
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	location := strings.TrimSuffix(tbl.Location(), "/")
	oldOrphan, youngOrphan := location+"/data/orphan-old.parquet", location+"/data/orphan-young.parquet"
	for _, o := range []string{oldOrphan, youngOrphan} {
		path := lk.LocalPath(o)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("not referenced by any snapshot"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The store reports a file's mtime as the object's LastModified.
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(lk.LocalPath(oldOrphan), old, old); err != nil {
		t.Fatal(err)
	}
	before := tableFiles(t, ctx, cat, id)

	dir := t.TempDir()
	conn := r.conn
	conn.Config = maps.Clone(r.conn.Config)
	conn.Config["maintenance"] = "iceberg-maintenance"
	conn.Config["maintenance.tables"] = r.all.Name
	conn.Config["maintenance.expire-snapshots.retain-last"] = "2"
	conn.Config["maintenance.expire-snapshots.max-age.ms"] = "1000"
	conn.Config["maintenance.delete-metadata-files.retain-last"] = "2"
	conn.Config["maintenance.delete-orphan-files.older-than.ms"] = "3600000" // the shortest safety age, 1 h
	file := filepath.Join(dir, "maintain.json")
	harness.WriteConnectorFile(t, file, conn)
	maintain := func(tasks ...string) []harness.S3Request {
		t.Helper()
		from := lk.S3LogSize(t)
		res := harness.RunFloe(t, env, dir, 3*time.Minute, "maintain", file, "--once", "--json",
			"--plugin-path", env.PluginDir(), "--data-dir", filepath.Join(dir, "data"), "--force", strings.Join(tasks, ","))
		if res.Code != 0 {
			t.Fatalf("floe maintain --force %s exited %d:\n%s", strings.Join(tasks, ","), res.Code, res.Output())
		}
		ran := maintainRuns(t, res.Stdout)
		for _, task := range tasks {
			if !slices.Contains(ran, task) {
				t.Errorf("floe maintain --force %s ran %v, not %s", strings.Join(tasks, ","), ran, task)
			}
		}
		return lk.S3Requests(t, from)
	}

	// Under ingestion: every task, while floe commits.
	maintain(lakeTasks...)
	r.waitCommitted(ctx, r.committed(ctx)+2000)

	// Paused: each task alone, so the request log holds its requests only.
	r.check(ctx, harness.DuckDB, false) // every record so far once, under maintenance
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // floe commits what it still holds
	_, tableKey, _ := strings.Cut(strings.TrimPrefix(location, "s3://"), "/")
	mid := tableFiles(t, ctx, cat, id)
	for _, task := range lakeTasks {
		reqs := maintain(task)
		ops := harness.CountOps(reqs)
		t.Logf("%-22s %4d S3 requests %v (table: %d data files, %d objects)", task, len(reqs), ops, len(mid.live), len(mid.objects))
		for _, q := range reqs {
			if q.Op() == "LIST" && !strings.Contains(q.Query, "prefix="+url.QueryEscape(tableKey)) {
				t.Errorf("%s listed outside the table's location %s: %s ?%s", task, location, q.Path, q.Query)
			}
		}
		if bound := 20 + 4*len(mid.objects); len(reqs) > bound {
			t.Errorf("%s made %d S3 requests for a table of %d objects (bound %d)", task, len(reqs), len(mid.objects), bound)
		}
	}
	r.feed.resume()

	after := tableFiles(t, ctx, cat, id)
	t.Logf("data files: %d live before, %d after; objects in the table's location %d before, %d after; snapshots %d -> %d",
		len(before.live), len(after.live), len(before.objects), len(after.objects), before.snapshots, after.snapshots)
	objects := map[string]bool{}
	for _, o := range after.objects {
		objects[o] = true
	}
	if objects[oldOrphan] {
		t.Errorf("the 2 h old orphan %s is still in the bucket", oldOrphan)
	}
	if !objects[youngOrphan] {
		t.Errorf("the new orphan %s was deleted: younger than the safety age", youngOrphan)
	}
	for _, f := range after.live {
		if !objects[f] {
			t.Errorf("live data file %s is missing from the bucket", f)
		}
	}
	for _, o := range after.objects {
		if strings.Contains(o, "/data/") && strings.HasSuffix(o, ".parquet") && o != youngOrphan && !after.referenced[o] {
			t.Errorf("data file %s is in the bucket but no remaining snapshot references it (expiry left it)", o)
		}
	}
	if len(after.live) > 12 {
		t.Errorf("%d live data files after compaction, want at most 12", len(after.live))
	}
	for _, engine := range harness.Engines {
		res := r.check(ctx, engine, engine == harness.PyIceberg)
		t.Logf("after maintenance: %s read %d rows; lost %d, duplicated %d", engine, res.rows, res.lost, res.duplicated)
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// lakeFiles is what a table holds: its live data files, the data files
// any of its snapshots references, and every object under its location
// (listed through the S3 API).
type lakeFiles struct {
	live       []string
	referenced map[string]bool
	objects    []string
	snapshots  int
}

func tableFiles(t *testing.T, ctx context.Context, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, id table.Identifier) lakeFiles {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := lakeFiles{referenced: map[string]bool{}}
	cur := tbl.CurrentSnapshot()
	for _, s := range tbl.Metadata().Snapshots() {
		out.snapshots++
		tasks, err := tbl.Scan(table.WithSnapshotID(s.SnapshotID)).PlanFiles(ctx)
		if err != nil {
			t.Fatalf("plan snapshot %d: %v", s.SnapshotID, err)
		}
		for _, task := range tasks {
			out.referenced[task.File.FilePath()] = true
			if cur != nil && s.SnapshotID == cur.SnapshotID {
				out.live = append(out.live, task.File.FilePath())
			}
		}
	}
	env := harness.LoadEnv()
	out.objects, err = env.Lake.ListObjects(ctx, strings.TrimSuffix(tbl.Location(), "/")+"/")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// maintainRuns returns the tasks `floe maintain --json` reports runs of.
func maintainRuns(t *testing.T, stdout string) []string {
	t.Helper()
	var tasks []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var cycle struct {
			Runs []struct {
				Task  string `json:"task"`
				Error string `json:"error"`
			} `json:"runs"`
		}
		if json.Unmarshal(sc.Bytes(), &cycle) != nil {
			continue
		}
		for _, run := range cycle.Runs {
			if run.Error != "" {
				t.Errorf("maintenance run %s failed: %s", run.Task, run.Error)
			}
			tasks = append(tasks, run.Task)
		}
	}
	return tasks
}
