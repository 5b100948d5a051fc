package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestMaintenanceCompactsUnderIngestion runs the iceberg-maintenance
// plugin beside a connector that commits every 300 ms: compaction must
// run (REST's table report lists it), shrink the number of data files,
// and leave the table exactly as ingestion made it: each generated record
// once, with its values, read alike by PyIceberg and DuckDB. Files of
// 32 KiB or more are joined by copying their row groups, so the readers
// also read files written that way.
func TestMaintenanceCompactsUnderIngestion(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"),
		harness.Plugin("iceberg"), harness.Plugin("iceberg-maintenance"), harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)

	name := "maintained-orders"
	table := "maint.orders"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":              "iceberg",
		"source":                       "datagen",
		"datagen.rate":                 "3000",
		"tasks.max":                    "2",
		"commit.interval.ms":           "300",
		"iceberg.tables":               table,
		"maintenance":                  "iceberg-maintenance",
		"maintenance.poll.interval.ms": "1000",
		"maintenance.rewrite-data-files.trigger.data-file-count":        "8",
		"maintenance.rewrite-data-files.min-interval.ms":                "1000",
		"maintenance.rewrite-data-files.copy-row-groups.min-file-bytes": "32768",
	}}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	f.WaitStatus(ctx, name, "connector RUNNING", false, harness.ConnectorStatus.Running)

	f.WaitFor(ctx, "three successful rewrite-data-files runs in GET tables, one that copied row groups", func(ctx context.Context) (bool, string, error) {
		rep, err := f.API.Tables(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		runs, _ := rep["maintenance_runs"].([]any)
		ok, copied, last := 0, 0, ""
		for _, r := range runs {
			run, _ := r.(map[string]any)
			if run["task"] != "rewrite-data-files" {
				continue
			}
			if e, _ := run["error"].(string); e != "" {
				return false, "", fmt.Errorf("rewrite-data-files failed: %s", e)
			}
			ok++
			last = fmt.Sprint(run["detail"])
			if strings.Contains(last, "copied the row groups") {
				copied++
			}
		}
		return ok >= 3 && copied >= 1, fmt.Sprintf("%d runs, %d copied row groups; last: %s", ok, copied, last), nil
	})

	// The runs and the table's health reach the connector's status and
	// /metrics too (after the cycle that made them returns).
	on := []string{`connector="` + name + `"`, `table="` + table + `"`}
	f.WaitFor(ctx, "the status and /metrics counting the compactions", func(ctx context.Context) (bool, string, error) {
		st, err := f.API.Status(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		if st.Floe == nil || st.Floe.Maintenance == nil {
			return false, "", fmt.Errorf("status has no maintenance summary: %+v", st.Floe)
		}
		m := st.Floe.Maintenance
		if m.Error != "" {
			return false, "", fmt.Errorf("status says the maintenance plugin is not running: %s", m.Error)
		}
		lastRewrite := false
		for _, r := range m.LastRuns {
			lastRewrite = lastRewrite || (r.Table == table && r.Task == "rewrite-data-files" && r.Error == "" && r.FilesAfter < r.FilesBefore)
		}
		metrics, err := f.API.Metrics(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		ok, _ := metrics.Sum("floe_maintenance_runs_total", append(on, `task="rewrite-data-files"`, `result="ok"`)...)
		fullest, haveFullest := metrics.Sum("floe_table_max_partition_data_files", on...)
		records, haveRecords := metrics.Sum("floe_table_records", on...)
		state := fmt.Sprintf("status: %d runs, a last compaction that reduced files %v; metrics: %v ok compactions, fullest partition %v, records %v",
			m.Runs, lastRewrite, ok, fullest, records)
		return m.Runs >= 3 && lastRewrite && ok >= 3 && haveFullest && fullest >= 1 && haveRecords && records >= 1, state, nil
	})
	f.Stop()

	commits := checkCompactedTable(t, env, f, conn, table, 3)
	checkDescribed(t, env, f, table, 3, commits)
}

// TestMaintainOnceBesideIngestion is the external scheduler's path: a
// connector without maintenance commits every 300 ms while cron-style
// one-shot calls of floe maintain --once, each its own floe and plugin
// process, compact its table. Every call must succeed and compact, and
// the table must stay exactly as ingestion made it.
func TestMaintainOnceBesideIngestion(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"),
		harness.Plugin("iceberg"), harness.Plugin("iceberg-maintenance"), harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)

	table := "maint.cron_orders"
	conn := harness.Connector{Name: "cron-orders", Config: map[string]string{
		"connector.class":    "iceberg",
		"source":             "datagen",
		"datagen.rate":       "3000",
		"tasks.max":          "2",
		"commit.interval.ms": "300",
		"iceberg.tables":     table,
	}}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	f.WaitStatus(ctx, conn.Name, "connector RUNNING", false, harness.ConnectorStatus.Running)

	// What cron would run: the same connector, naming the plugin, with a
	// trigger low enough that each call finds work.
	cronFile := filepath.Join(t.TempDir(), "cron-orders.json")
	cron := maps.Clone(conn.Config)
	cron["maintenance"] = "iceberg-maintenance"
	cron["maintenance.rewrite-data-files.trigger.data-file-count"] = "8"
	harness.WriteConnectorFile(t, cronFile, harness.Connector{Name: conn.Name, Config: cron})
	const calls = 3
	for i := range calls {
		f.WaitFor(ctx, "ten more commits", commitsPast(f, conn.Name, int64(10*(i+1))))
		res := harness.RunFloe(t, env, "", 3*time.Minute, "maintain", cronFile, "--once", "--json", "--worker", f.WorkerFile)
		if res.Code != 0 {
			t.Fatalf("call %d: floe maintain --once: exit %d\n%s", i+1, res.Code, res.Output())
		}
		var rep struct {
			Runs []struct {
				Table       string `json:"table"`
				Task        string `json:"task"`
				FilesBefore int64  `json:"files_before"`
				FilesAfter  int64  `json:"files_after"`
				Error       string `json:"error"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
			t.Fatalf("call %d: floe maintain --once --json printed no cycle report: %v\n%s", i+1, err, res.Output())
		}
		compacted := false
		for _, r := range rep.Runs {
			if r.Error != "" {
				t.Fatalf("call %d: %s %s failed: %s", i+1, r.Table, r.Task, r.Error)
			}
			if r.Table == table && r.Task == "rewrite-data-files" && r.FilesAfter < r.FilesBefore {
				compacted = true
				t.Logf("call %d: %s files %d → %d", i+1, r.Task, r.FilesBefore, r.FilesAfter)
			}
		}
		if !compacted {
			t.Fatalf("call %d compacted nothing while ingestion added files:\n%s", i+1, res.Output())
		}
	}
	if st, err := f.API.Status(ctx, conn.Name); err != nil || !st.Running() {
		t.Fatalf("ingestion after the maintenance calls: %+v %v", st, err)
	}
	f.Stop()

	commits := checkCompactedTable(t, env, f, conn, table, calls)
	checkDescribed(t, env, f, table, calls, commits)
}

// commitsPast is a WaitFor condition: the connector committed more than n
// checkpoints.
func commitsPast(f *harness.Floe, name string, n int64) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		st, err := f.API.Status(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		if st.Floe == nil {
			return false, "no progress yet", nil
		}
		return st.Floe.Commits > n, fmt.Sprintf("%d commits", st.Floe.Commits), nil
	}
}

// checkCompactedTable reads a stopped floe's table with PyIceberg and
// DuckDB: it must hold each record datagen made for the connector once,
// up to the committed frontier, with its values, and its lineage at least
// wantReplaces compaction snapshots. It returns floe's commit count.
func checkCompactedTable(t *testing.T, env harness.Env, f *harness.Floe, conn harness.Connector, table string, wantReplaces int) int {
	t.Helper()
	name := conn.Name
	ref := harness.EmbeddedTable(f.DataDir, table)
	py := readBoth(t, env, ref, harness.ReadOptions{
		ChecksumCols: []string{"customer_id", "_source_offset"},
		DistinctCols: []string{"_source_partition", "_source_offset"},
	})
	md := harness.LoadMetadata(t, py.Metadata)
	frontier, commits, err := md.Frontier(name)
	if err != nil {
		t.Fatal(err)
	}
	replaces := 0
	for _, s := range md.Lineage() {
		if s.Summary["operation"] == "replace" {
			replaces++
		}
	}
	t.Logf("%s: %d rows, %d floe commits, %d replace commits in the lineage, frontier %v", table, py.Rows, commits, replaces, frontier)
	if replaces < wantReplaces {
		t.Errorf("%d replace (compaction) snapshots in the table's current lineage, want the %d runs'", replaces, wantReplaces)
	}
	if got := harness.SumFrontier(frontier); got != py.Rows {
		t.Errorf("committed frontier sums to %d, the table holds %d rows", got, py.Rows)
	}
	if py.Distinct == nil || *py.Distinct != py.Rows {
		t.Errorf("%v distinct (_source_partition, _source_offset) among %d rows: compaction duplicated rows", deref(py.Distinct), py.Rows)
	}
	gen := harness.DatagenFor(t, env, conn.Config)
	ends := make([]int64, gen.Partitions)
	var offsets int64
	for p := range ends {
		ends[p] = frontier[gen.PartitionName(p)]
		offsets += ends[p] * (ends[p] - 1) / 2
	}
	want := gen.Checksums(t, ends, "customer_id")
	want["_source_offset"] = strconv.FormatInt(offsets, 10)
	checkChecksums(t, py, want)

	return commits
}

// checkDescribed runs floe table describe on a stopped floe's table: its
// maintenance runs (from the plugin's history file) must list at least
// wantRuns successful compactions, and the table must hold fewer data
// files than the commits of two writers made.
func checkDescribed(t *testing.T, env harness.Env, f *harness.Floe, table string, wantRuns, commits int) {
	t.Helper()
	res := harness.RunFloe(t, env, "", 2*time.Minute, "table", "describe", table, "--worker", f.WorkerFile, "--json")
	var desc struct {
		Files struct {
			DataFiles         int64 `json:"data_files"`
			MaxPartitionFiles int64 `json:"max_partition_files"`
		} `json:"files"`
		Maintenance []struct {
			Task  string `json:"task"`
			Error string `json:"error"`
		} `json:"maintenance_runs"`
	}
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &desc) != nil {
		t.Fatalf("floe table describe: exit %d\n%s", res.Code, res.Output())
	}
	described := 0
	for _, r := range desc.Maintenance {
		if r.Task == "rewrite-data-files" && r.Error == "" {
			described++
		}
	}
	if described < wantRuns || desc.Files.MaxPartitionFiles < 1 {
		t.Errorf("floe table describe: %d compactions in its maintenance runs (want %d), fullest partition %d files", described, wantRuns, desc.Files.MaxPartitionFiles)
	}
	if files := desc.Files.DataFiles; files >= int64(commits)*2 {
		t.Errorf("%d data files after %d commits of 2 writers: compaction did not reduce them", files, commits)
	} else {
		t.Logf("%d data files after %d commits of 2 writers", files, commits)
	}
}
