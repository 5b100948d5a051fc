package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestKillNineExactlyOnce kills processes with SIGKILL under a running
// datagen → iceberg connector: first each plugin process (floe must
// restart it and go on), then the floe host itself (its plugins must exit
// by themselves, and a new floe on the same data dir must resume from the
// table). Afterwards the table must hold each generated record of each
// partition's committed range exactly once, with the generator's values.
func TestKillNineExactlyOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"),
		harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 10*time.Minute)

	name := "kill-orders"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":             "iceberg",
		"source":                      "datagen",
		"datagen.rate":                "2000",
		"datagen.partitions":          "3",
		"tasks.max":                   "2",
		"commit.interval.ms":          "500",
		"iceberg.tables":              "kill.orders",
		"plugin.restart.backoff.ms":   "200",
		"plugin.restart.max.attempts": "10",
	}}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	// committed is the sum of the connector's committed offsets (GET
	// offsets: the table's frontier), which only grows.
	committed := func() int64 {
		t.Helper()
		offs, err := f.API.Offsets(ctx, name)
		if err != nil {
			return -1
		}
		sum := int64(0)
		for _, o := range offs.Offsets {
			sum += offsetValue(t, o)
		}
		return sum
	}
	// progressing waits until the committed records grow past after by
	// at least 1000 (half a second of the rate), and returns the new sum.
	progressing := func(what string, after int64) int64 {
		t.Helper()
		var sum int64
		f.WaitFor(ctx, what, func(ctx context.Context) (bool, string, error) {
			st, err := f.API.Status(ctx, name)
			if err != nil {
				return false, err.Error(), nil
			}
			if failed := st.Failed(); failed != "" {
				return false, st.Summary(), fmt.Errorf("connector failed:\n%s", failed)
			}
			sum = committed()
			return sum >= after+1000, fmt.Sprintf("committed %d (from %d); %s; plugins %v", sum, after, st.Summary(), f.Plugins()), nil
		})
		return sum
	}
	sum := progressing("a first commit", 0)

	for _, plugin := range []string{"datagen", "iceberg", "partitioners"} {
		t.Run("kill plugin "+plugin, func(t *testing.T) {
			st, err := f.API.Status(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			restarts := st.Floe.PluginRestarts
			f.KillPlugin(plugin)
			f.WaitStatus(ctx, name, fmt.Sprintf("floe-plugin-%s restarted", plugin), false, func(s harness.ConnectorStatus) bool {
				return s.Running() && s.Floe != nil && s.Floe.PluginRestarts > restarts
			})
			sum = progressing("more records committed after the restart of floe-plugin-"+plugin, sum)
		})
	}

	t.Run("kill the host", func(t *testing.T) {
		if n := len(f.Plugins()); n < 3 {
			t.Errorf("before the host kill, floe runs %d plugin processes, want 3 (datagen, partitioners, iceberg): %v", n, f.Plugins())
		}
		f.Kill() // fails the test if plugin processes outlive the host
		f.Restart()
		progressing("the restarted floe committing", sum)
	})
	f.Stop()

	ref := harness.EmbeddedTable(f.DataDir, "kill.orders")
	py := harness.ReadTable(t, env, harness.PyIceberg, ref, harness.ReadOptions{
		ChecksumCols: []string{"customer_id", "customer_email", "_source_offset"},
		DistinctCols: []string{"_source_partition", "_source_offset"},
	})
	md := harness.LoadMetadata(t, py.Metadata)
	frontier, commits, err := md.Frontier(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kill.orders: %d rows in %d floe commits, frontier %v", py.Rows, commits, frontier)
	if got := harness.SumFrontier(frontier); got != py.Rows {
		t.Errorf("committed frontier sums to %d, the table holds %d rows", got, py.Rows)
	}
	if py.Distinct == nil || *py.Distinct != py.Rows {
		t.Errorf("%v distinct (_source_partition, _source_offset) among %d rows: duplicates after the kills", deref(py.Distinct), py.Rows)
	}
	gen := harness.DatagenFor(t, env, conn.Config)
	ends := make([]int64, gen.Partitions)
	var offsets int64
	for p := range ends {
		ends[p] = frontier[gen.PartitionName(p)]
		offsets += ends[p] * (ends[p] - 1) / 2
	}
	want := gen.Checksums(t, ends, "customer_id", "customer_email")
	want["_source_offset"] = strconv.FormatInt(offsets, 10)
	checkChecksums(t, py, want)
}
