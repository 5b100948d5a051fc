package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestSigtermFinalCommit runs an unbounded datagen connector whose commit
// interval (60 s) is far longer than the run, and stops floe with SIGTERM
// after a few seconds: floe must exit 0 after a final checkpoint commit
// holding every record the source handed on, no more, no less, each once.
// Without the final commit the table would be empty.
func TestSigtermFinalCommit(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"),
		harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 6*time.Minute)

	name := "sigterm-orders"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":    "iceberg",
		"source":             "datagen",
		"datagen.rate":       "1000",
		"tasks.max":          "2",
		"commit.interval.ms": "60000",
		"iceberg.tables":     "sigterm.orders",
	}}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	st := f.WaitStatus(ctx, name, "3000 records read", false, func(s harness.ConnectorStatus) bool {
		return s.Running() && s.Floe != nil && s.Floe.RecordsIn >= 3000
	})
	if st.Floe.Commits != 0 {
		t.Fatalf("floe committed %d times before SIGTERM with commit.interval.ms=60000; the test needs the final commit to be the only one", st.Floe.Commits)
	}
	readBefore := st.Floe.RecordsIn
	f.Stop()

	ref := harness.EmbeddedTable(f.DataDir, "sigterm.orders")
	py := readBoth(t, env, ref, harness.ReadOptions{
		ChecksumCols: []string{"customer_id", "_source_offset"},
		DistinctCols: []string{"_source_partition", "_source_offset"},
	})
	md := harness.LoadMetadata(t, py.Metadata)
	frontier, commits, err := md.Frontier(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read %d records before SIGTERM; the table holds %d rows in %d commits, frontier %v", readBefore, py.Rows, commits, frontier)
	if commits != 1 {
		t.Errorf("the table has %d floe commits, want exactly 1 (the final one at SIGTERM)", commits)
	}
	if py.Rows < readBefore {
		t.Errorf("the table holds %d rows, but %d records had been read before SIGTERM: lost in shutdown", py.Rows, readBefore)
	}
	if got := harness.SumFrontier(frontier); got != py.Rows {
		t.Errorf("committed frontier sums to %d, the table holds %d rows: the frontier and the data disagree", got, py.Rows)
	}
	if py.Distinct == nil || *py.Distinct != py.Rows {
		t.Errorf("%v distinct (_source_partition, _source_offset) among %d rows: duplicates", deref(py.Distinct), py.Rows)
	}

	// Exactly the records [0, frontier) of each partition, with the
	// generator's values.
	gen := harness.DatagenFor(t, env, conn.Config)
	ends := make([]int64, gen.Partitions)
	var offsets int64
	for p := range ends {
		ends[p] = frontier[gen.PartitionName(p)]
		offsets += ends[p] * (ends[p] - 1) / 2
	}
	if len(frontier) != gen.Partitions {
		t.Errorf("frontier %v has %d partitions, datagen made %d", frontier, len(frontier), gen.Partitions)
	}
	want := gen.Checksums(t, ends, "customer_id")
	want["_source_offset"] = strconv.FormatInt(offsets, 10)
	checkChecksums(t, py, want)
}
