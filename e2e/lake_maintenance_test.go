package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
	out, err := readTableFiles(ctx, cat, id)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tableFilesWhileMaintained is tableFiles on a table that maintenance
// keeps changing: an expiry may delete a snapshot's manifest list between
// the table's load and its planning, so a failed read is tried again.
func tableFilesWhileMaintained(t *testing.T, ctx context.Context, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, id table.Identifier) lakeFiles {
	t.Helper()
	var err error
	for range 5 {
		var out lakeFiles
		if out, err = readTableFiles(ctx, cat, id); err == nil {
			return out
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("the table's files, 5 tries: %v", err)
	return lakeFiles{}
}

func readTableFiles(ctx context.Context, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, id table.Identifier) (lakeFiles, error) {
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		return lakeFiles{}, err
	}
	out := lakeFiles{referenced: map[string]bool{}}
	cur := tbl.CurrentSnapshot()
	for _, s := range tbl.Metadata().Snapshots() {
		out.snapshots++
		tasks, err := tbl.Scan(table.WithSnapshotID(s.SnapshotID)).PlanFiles(ctx)
		if err != nil {
			return lakeFiles{}, fmt.Errorf("plan snapshot %d: %w", s.SnapshotID, err)
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
	return out, err
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

// TestLakeMaintenanceUnderIngestion runs the maintenance plugin inside the
// connector, continuously, on REST catalog + S3 while Kafka → iceberg
// commits every second (1,000 records a second into a table partitioned
// by bucket(4, id)), for 75 s, with its triggers shortened so every task
// runs: compaction by its defaults, expiry down to 20 snapshots, manifest
// rewrites at 3 manifests, and orphan and metadata cleanup every 15 s
// (orphans with the 1 h safety age). A
// 2 h old and a new orphan are planted in the table's data folder. Every
// 5 s the test counts the live data files of each partition: after a
// 20 s warm-up the fullest never passes 40 (without compaction it gains
// two files a second, 150 by the end). At the end, listed through the S3
// API: no data file or manifest list that only expired snapshots
// referenced is left, the old orphan is gone and the new one stays, and
// every live file is there; DuckDB and PyIceberg read every produced
// record once; every task ran.
func TestLakeMaintenanceUnderIngestion(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Plugin("iceberg-maintenance"), harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 6*time.Minute)
	lk := env.Lake
	const (
		run       = 75 * time.Second
		warmUp    = 20 * time.Second
		maxFiles  = 40
		sampleGap = 5 * time.Second
	)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 2000, rate: 1000, name: "lakemaintrun", lake: &lk,
		extra: map[string]string{
			"iceberg.tables.default-partition-by":                   "bucket(4, id)",
			"maintenance":                                           "iceberg-maintenance",
			"maintenance.expire-snapshots.max-snapshots":            "20",
			"maintenance.expire-snapshots.retain-last":              "2",
			"maintenance.expire-snapshots.min-interval.ms":          "10000",
			"maintenance.rewrite-manifests.trigger.manifest-count":  "3",
			"maintenance.rewrite-manifests.min-interval.ms":         "10000",
			"maintenance.delete-orphan-files.older-than.ms":         "3600000", // the shortest safety age, 1 h
			"maintenance.delete-orphan-files.trigger.interval.ms":   "15000",
			"maintenance.delete-orphan-files.min-interval.ms":       "15000",
			"maintenance.delete-metadata-files.trigger.interval.ms": "15000",
			"maintenance.delete-metadata-files.min-interval.ms":     "15000",
		}})
	began := time.Now()
	r.waitCommitted(ctx, 3000)

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
	old := time.Now().Add(-2 * time.Hour) // the store reports a file's mtime as its LastModified
	if err := os.Chtimes(lk.LocalPath(oldOrphan), old, old); err != nil {
		t.Fatal(err)
	}

	// The snapshots of the warm-up, and what they reference: most are
	// expired by the end, and what only they referenced must be gone.
	var early lakeFiles
	var earlyLists map[int64]string
	var series []string
	worst := 0
	for time.Since(began) < run {
		time.Sleep(sampleGap)
		most, parts := partitionFiles(t, ctx, cat, id)
		series = append(series, fmt.Sprintf("%.0fs:%d", time.Since(began).Seconds(), most))
		if time.Since(began) < warmUp {
			continue
		}
		if earlyLists == nil {
			early, earlyLists = tableFilesWhileMaintained(t, ctx, cat, id), manifestLists(t, ctx, cat, id)
		}
		worst = max(worst, most)
		if most > maxFiles {
			t.Errorf("at %.0f s a partition holds %d live data files (of %d partitions), want at most %d under continuous compaction",
				time.Since(began).Seconds(), most, parts, maxFiles)
		}
	}
	t.Logf("live data files in the fullest partition, every %s: %s", sampleGap, strings.Join(series, " "))

	// Every record so far once; the pause lets floe commit all it holds.
	res := r.check(ctx, harness.DuckDB, false)
	t.Logf("DuckDB read %d rows: lost %d, duplicated %d", res.rows, res.lost, res.duplicated)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := r.f.API.Status(ctx, r.opts.name)
	if err != nil {
		t.Fatal(err)
	}
	// Expiry commits first and deletes after: a file the table no longer
	// references may be on its way out. Look again a few times.
	var after lakeFiles
	var lists map[int64]string
	var objects map[string]bool
	var left []string
	expired, gone := 0, 0
	for look := 0; look < 4; look++ {
		if look > 0 {
			time.Sleep(3 * time.Second)
		}
		after, lists = tableFilesWhileMaintained(t, ctx, cat, id), manifestLists(t, ctx, cat, id)
		objects = map[string]bool{}
		for _, o := range after.objects {
			objects[o] = true
		}
		expired, gone, left = 0, 0, nil
		for sid, list := range earlyLists {
			if _, kept := lists[sid]; kept {
				continue
			}
			expired++
			if objects[list] {
				left = append(left, fmt.Sprintf("the manifest list %s of expired snapshot %d", list, sid))
			}
		}
		for f := range early.referenced {
			if after.referenced[f] {
				continue
			}
			gone++
			if objects[f] {
				left = append(left, "data file "+f+", referenced only by expired snapshots,")
			}
		}
		if len(left) == 0 {
			break
		}
	}
	for _, l := range left {
		t.Errorf("%s is still in the bucket", l)
	}
	if expired == 0 || gone == 0 {
		t.Errorf("of the %d snapshots after the warm-up %d were expired, and %d of their data files only they referenced: expiry did not run", len(earlyLists), expired, gone)
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
	unreferenced := 0
	for _, o := range after.objects {
		if strings.Contains(o, "/data/") && strings.HasSuffix(o, ".parquet") && !after.referenced[o] && o != youngOrphan {
			unreferenced++
		}
	}
	ran := map[string]bool{}
	var runs, failed int64
	if m := st.Floe.Maintenance; m != nil {
		runs, failed = m.Runs, m.FailedRuns
		for _, lr := range m.LastRuns {
			ran[lr.Task] = true
		}
	}
	for _, task := range lakeTasks {
		if !ran[task] {
			t.Errorf("maintenance never ran %s in %s (its runs: %+v)", task, run, st.Floe.Maintenance)
		}
	}
	t.Logf("maintenance: %d runs (%d failed); fullest partition at most %d files after the warm-up; %d snapshots, %d live data files, %d objects in the table's location at the end; %d of %d warm-up snapshots expired, %d data files only they referenced deleted; %d unreferenced data files younger than the safety age kept",
		runs, failed, worst, after.snapshots, len(after.live), len(after.objects), expired, len(earlyLists), gone, unreferenced)
	r.feed.resume()
	for _, engine := range harness.Engines {
		res := r.check(ctx, engine, engine == harness.PyIceberg)
		t.Logf("at the end: %s read %d rows; lost %d, duplicated %d", engine, res.rows, res.lost, res.duplicated)
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// partitionFiles counts the live data files of each partition of the
// table's current snapshot; it returns the fullest partition's count and
// the number of partitions.
func partitionFiles(t *testing.T, ctx context.Context, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, id table.Identifier) (most, partitions int) {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, task := range tasks {
		counts[fmt.Sprint(task.File.Partition())]++
	}
	for _, n := range counts {
		most = max(most, n)
	}
	return most, len(counts)
}

// manifestLists returns each snapshot's manifest list.
func manifestLists(t *testing.T, ctx context.Context, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, id table.Identifier) map[int64]string {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, s := range tbl.Metadata().Snapshots() {
		out[s.SnapshotID] = s.ManifestList
	}
	return out
}
