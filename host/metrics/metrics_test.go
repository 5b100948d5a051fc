package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floehq/floe/sdk"
)

func TestConnectorSeries(t *testing.T) {
	m := New()
	c := m.Connector("orders")
	c.RecordsIn(0, 100, 4096)
	c.RecordsIn(1, 50, 2048)
	c.BatchesInFlight(0, 2)
	c.BatchesInFlight(0, -1)
	c.Checkpoint(20*time.Millisecond, 3)
	c.Commit(5*time.Millisecond, 1500*time.Millisecond, 150)
	c.CommitFailure()
	c.PendingCheckpoints(2)
	c.PluginRestart("sink")
	c.DeadLetters(4)
	c.WriterLoad([]float64{1.5, 0.5})

	want := `
# HELP floe_records_in_total Records read from the source, per task.
# TYPE floe_records_in_total counter
floe_records_in_total{connector="orders",task="0"} 100
floe_records_in_total{connector="orders",task="1"} 50
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "floe_records_in_total"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"floe_batches_in_flight", "floe_commits_total", "floe_commit_failures_total",
		"floe_files_written_total", "floe_dead_letters_total", "floe_records_out_total",
		"floe_commit_lag_seconds", "floe_pending_checkpoints", "floe_plugin_restarts_total",
		"floe_checkpoints_total", "floe_commit_duration_seconds",
	} {
		if n, err := testutil.GatherAndCount(m.Registry(), name); err != nil || n != 1 {
			t.Errorf("%s: %d series, %v", name, n, err)
		}
	}
	if got := testutil.ToFloat64(m.commitLag.WithLabelValues("orders")); got != 1.5 {
		t.Errorf("commit lag = %v", got)
	}
	if got := testutil.ToFloat64(m.writerLoad.WithLabelValues("orders", "0")); got != 1.5 {
		t.Errorf("writer load = %v", got)
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "floe_checkpoint_duration_seconds"); n != 1 {
		t.Errorf("checkpoint histogram series = %d", n)
	}

	m.Forget("orders")
	if n, _ := testutil.GatherAndCount(m.Registry(), "floe_records_in_total", "floe_writer_load", "floe_commits_total"); n != 0 {
		t.Errorf("after Forget: %d series left", n)
	}
}

func TestNilConnectorRecordsNothing(t *testing.T) {
	var c *Connector
	c.RecordsIn(0, 1, 1)
	c.Commit(time.Second, time.Second, 1)
	c.WriterLoad([]float64{1})
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.Connector("x").DeadLetters(1)
	if n, _ := testutil.GatherAndCount(b.Registry(), "floe_dead_letters_total"); n != 0 {
		t.Fatalf("second registry sees %d series", n)
	}
}

func TestMaintenanceSeries(t *testing.T) {
	m := New()
	c := m.Connector("orders")
	ended := time.Date(2026, 12, 1, 10, 0, 2, 0, time.UTC)
	c.MaintenanceRun(sdk.TaskRun{Table: "sales.orders", Task: "rewrite-data-files", Started: ended.Add(-2 * time.Second), Duration: 2 * time.Second, FilesBefore: 40, FilesAfter: 9})
	c.MaintenanceRun(sdk.TaskRun{Table: "sales.orders", Task: "rewrite-data-files", Started: ended, Duration: time.Second, FilesBefore: 12, Error: "commit: conflict"})
	c.TableHealth(sdk.TableHealth{Table: "sales.orders", DataFiles: 57, SmallFiles: 50, MaxPartition: "day=2026-12-01", MaxPartitionFiles: 7,
		Snapshots: 120, Manifests: 3, LastCommit: ended})

	want := `
# HELP floe_maintenance_runs_total Maintenance task runs, per table, task and result (ok or failed).
# TYPE floe_maintenance_runs_total counter
floe_maintenance_runs_total{connector="orders",result="failed",table="sales.orders",task="rewrite-data-files"} 1
floe_maintenance_runs_total{connector="orders",result="ok",table="sales.orders",task="rewrite-data-files"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "floe_maintenance_runs_total"); err != nil {
		t.Fatal(err)
	}
	// A failed run moves the last-run time but keeps the last good counts.
	if got := testutil.ToFloat64(m.maintLastRun.WithLabelValues("orders", "sales.orders", "rewrite-data-files")); got != float64(ended.Add(time.Second).Unix()) {
		t.Errorf("last run = %v", got)
	}
	if got := testutil.ToFloat64(m.maintLastFiles.WithLabelValues("orders", "sales.orders", "rewrite-data-files", "after")); got != 9 {
		t.Errorf("files after the last good run = %v", got)
	}
	want = `
# HELP floe_table_data_files Live data files of the table's current snapshot.
# TYPE floe_table_data_files gauge
floe_table_data_files{connector="orders",table="sales.orders"} 57
# HELP floe_table_max_partition_data_files Live data files of the table's fullest partition (what a query of one partition opens).
# TYPE floe_table_max_partition_data_files gauge
floe_table_max_partition_data_files{connector="orders",table="sales.orders"} 7
# HELP floe_table_last_commit_timestamp_seconds When the table's current snapshot was committed (Unix time; 0 before the first).
# TYPE floe_table_last_commit_timestamp_seconds gauge
floe_table_last_commit_timestamp_seconds{connector="orders",table="sales.orders"} 1.796119202e+09
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"floe_table_data_files", "floe_table_max_partition_data_files", "floe_table_last_commit_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "floe_maintenance_run_duration_seconds"); n != 1 {
		t.Errorf("duration histogram series = %d", n)
	}

	m.Forget("orders")
	if n, _ := testutil.GatherAndCount(m.Registry(), "floe_maintenance_runs_total", "floe_maintenance_last_run_files", "floe_table_data_files", "floe_table_records"); n != 0 {
		t.Errorf("after Forget: %d series left", n)
	}
}
