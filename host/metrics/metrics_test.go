package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
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
