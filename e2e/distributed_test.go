package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// distributedWorkers starts n `floe distributed` workers of one new
// cluster (its own group.id and internal topics) on the test broker.
func distributedWorkers(t *testing.T, env harness.Env, n int) []*harness.Floe {
	t.Helper()
	group := harness.UniqueName("e2e-cluster")
	keys := map[string]string{
		"bootstrap.servers":                 env.KafkaBootstrap,
		"group.id":                          group,
		"config.storage.topic":              group + "-configs",
		"offset.storage.topic":              group + "-offsets",
		"status.storage.topic":              group + "-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"offset.storage.partitions":         "3",
		"status.storage.partitions":         "2",
		// The broker's minimum, so a dead worker's connectors move soon.
		"session.timeout.ms":    "6000",
		"heartbeat.interval.ms": "2000",
	}
	ws := make([]*harness.Floe, n)
	for i := range ws {
		wk := map[string]string{"worker.id": fmt.Sprintf("worker-%c", 'a'+i)}
		for k, v := range keys {
			wk[k] = v
		}
		ws[i] = harness.StartFloe(t, env, harness.Options{Distributed: true, Worker: wk})
	}
	return ws
}

// TestDistributedFailover runs two datagen → iceberg connectors on a
// cluster of three workers sharing a Postgres catalog: each connector is
// created through one worker and its status read through another; they
// run on two different workers; the worker of one is killed with
// SIGKILL, and that connector moves to a live worker and goes on
// committing. Afterwards every table holds each generated record of its
// committed range exactly once (PyIceberg and DuckDB).
func TestDistributedFailover(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.Postgres, harness.Plugin("datagen"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)
	ws := distributedWorkers(t, env, 3)
	byID := map[string]*harness.Floe{}
	for i, w := range ws {
		byID[fmt.Sprintf("worker-%c", 'a'+i)] = w
	}

	namespace := harness.UniqueName("e2e_dist")
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	conns := make([]harness.Connector, 2)
	for i := range conns {
		conns[i] = harness.Connector{Name: fmt.Sprintf("dist-%d", i), Config: map[string]string{
			"connector.class":           "iceberg",
			"source":                    "datagen",
			"datagen.rate":              "1000",
			"datagen.partitions":        "2",
			"tasks.max":                 "2",
			"commit.interval.ms":        "500",
			"iceberg.tables":            fmt.Sprintf("%s.orders_%d", namespace, i),
			"iceberg.catalog.type":      "sql",
			"iceberg.catalog.uri":       env.PostgresURL,
			"iceberg.catalog.warehouse": warehouse,
		}}
		// Writes through worker a or b: the leader answers, forwarded to
		// it when it is another worker.
		createWhenLed(t, ctx, ws[i], conns[i])
	}

	// owner waits until the connector's status, read through reader, is
	// RUNNING with its tasks, and returns the worker that runs it.
	owner := func(name string, reader *harness.Floe, not string) string {
		t.Helper()
		var id string
		reader.WaitStatus(ctx, name, "RUNNING on a worker other than "+strconv.Quote(not), false, func(s harness.ConnectorStatus) bool {
			id = s.Connector.WorkerID
			if !s.Running() || id == not || byID[id] == nil {
				return false
			}
			for _, task := range s.Tasks {
				if task.WorkerID != id {
					return false
				}
			}
			return true
		})
		return id
	}
	first := owner(conns[0].Name, ws[2], "")
	second := owner(conns[1].Name, ws[2], "")
	t.Logf("placement: %s on %s, %s on %s", conns[0].Name, first, conns[1].Name, second)
	if first == second {
		t.Errorf("both connectors run on %s: the leader must spread them over the three workers", first)
	}

	committed := func(name string, via *harness.Floe) int64 {
		offs, err := via.API.Offsets(ctx, name)
		if err != nil {
			return -1
		}
		var sum int64
		for _, o := range offs.Offsets {
			sum += offsetValue(t, o)
		}
		return sum
	}
	progressing := func(name string, via *harness.Floe, after int64, what string) int64 {
		t.Helper()
		var sum int64
		via.WaitFor(ctx, what, func(ctx context.Context) (bool, string, error) {
			sum = committed(name, via)
			return sum >= after+500, fmt.Sprintf("%s committed %d (from %d)", name, sum, after), nil
		})
		return sum
	}
	var survivor *harness.Floe
	for id, w := range byID {
		if id != first {
			survivor = w
			break
		}
	}
	before := progressing(conns[0].Name, survivor, 0, "a first commit of "+conns[0].Name)

	victim := byID[first]
	killed := time.Now()
	victim.Kill()
	moved := owner(conns[0].Name, survivor, first)
	t.Logf("%s moved from %s (killed) to %s in %s", conns[0].Name, first, moved, time.Since(killed).Round(100*time.Millisecond))
	progressing(conns[0].Name, byID[moved], before, conns[0].Name+" committing on "+moved)
	if second != first {
		progressing(conns[1].Name, byID[second], 0, conns[1].Name+" committing on "+second)
	}

	for id, w := range byID {
		if id != first {
			w.Stop()
		}
	}
	for i, c := range conns {
		ref := harness.TableRef{CatalogURI: env.PostgresURL, Warehouse: warehouse, Name: fmt.Sprintf("%s.orders_%d", namespace, i)}
		checkDatagenTable(t, env, ref, c)
	}
}

// createWhenLed creates conn through w, again while the cluster answers
// 409 (no leader yet, or a rebalance).
func createWhenLed(t *testing.T, ctx context.Context, w *harness.Floe, conn harness.Connector) {
	t.Helper()
	w.WaitFor(ctx, "connector "+conn.Name+" created", func(ctx context.Context) (bool, string, error) {
		_, err := w.API.CreateConnector(ctx, conn)
		if err == nil {
			return true, "", nil
		}
		var ae *harness.APIError
		if errors.As(err, &ae) && ae.Status == 409 {
			return false, err.Error(), nil
		}
		return false, "", err
	})
}

// checkDatagenTable checks with PyIceberg and DuckDB that the table holds
// each generated record of its committed frontier exactly once.
func checkDatagenTable(t *testing.T, env harness.Env, ref harness.TableRef, conn harness.Connector) {
	t.Helper()
	opts := harness.ReadOptions{
		ChecksumCols: []string{"customer_id", "customer_email", "_source_offset"},
		DistinctCols: []string{"_source_partition", "_source_offset"},
	}
	py := readBoth(t, env, ref, opts)
	md := harness.LoadMetadata(t, py.Metadata)
	frontier, commits, err := md.Frontier(conn.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d rows in %d floe commits, frontier %v", ref.Name, py.Rows, commits, frontier)
	if got := harness.SumFrontier(frontier); got != py.Rows || py.Rows == 0 {
		t.Errorf("%s: committed frontier sums to %d, the table holds %d rows", ref.Name, got, py.Rows)
	}
	if py.Distinct == nil || *py.Distinct != py.Rows {
		t.Errorf("%s: %v distinct (_source_partition, _source_offset) among %d rows: duplicates", ref.Name, deref(py.Distinct), py.Rows)
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
