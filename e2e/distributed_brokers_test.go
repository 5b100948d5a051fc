package e2e

import (
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestDistributedBrokerKill runs a connector on three `floe distributed`
// workers over a private three-node Kafka cluster (the internal topics
// and the data topic at replication 3, min.insync.replicas 2) while
// records are produced, and kills Kafka under it: each node in turn with
// kill -9, down for longer than the session timeouts, then started
// again; during the last node's outage the worker running the connector
// is killed too, so the connector moves while a broker is missing. No
// one restarts anything in floe: after each round the connector must be
// RUNNING and committing on a live worker, and at the end the table must
// hold every record of the topic exactly once (DuckDB after each round,
// PyIceberg at the end).
//
// Three more JVMs beside the shared services are too much for make test on
// two cores (a restarted node once took over two minutes to rejoin its
// quorum there), so the test runs with FLOE_E2E_KAFKA_CLUSTER=1, which
// make soak-distributed sets.
func TestDistributedBrokerKill(t *testing.T) {
	if os.Getenv("FLOE_E2E_KAFKA_CLUSTER") != "1" {
		t.Skip("needs a private 3-node Kafka cluster: runs with FLOE_E2E_KAFKA_CLUSTER=1 (make soak-distributed)")
	}
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 15*time.Minute)
	brokers := harness.StartBrokers(t, env, 3)
	r := newRig(t, ctx, rigOptions{env: brokers.Env(env), partitions: 6, initial: 3_000, rate: 300, name: "dbroker", workers: 3})
	d := &distSoak{t: t, ctx: ctx, r: r, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)), session: 6 * time.Second}
	down := d.session + 4*time.Second
	for node := range brokers.Nodes() {
		owner := d.owner(-1)
		at := time.Now()
		brokers.Stop(node, syscall.SIGKILL)
		last := node == brokers.Nodes()-1
		if last {
			r.workers[owner].Kill()
			d.owner(owner)
			r.workers[owner].Restart()
		}
		if rest := down - time.Since(at); rest > 0 {
			time.Sleep(rest)
		}
		brokers.Start(node)
		moved := d.owner(-1)
		res := r.check(ctx, harness.DuckDB, false)
		t.Logf("kafka node %d killed for %s (worker %s killed too: %v); the connector on %s, then %s; rows %d, lost %d, duplicated %d",
			node+1, down, harness.WorkerID(owner), last, harness.WorkerID(owner), harness.WorkerID(moved), res.rows, res.lost, res.duplicated)
	}
	res := r.check(ctx, harness.PyIceberg, true)
	t.Logf("at the end: rows %d, lost %d, duplicated %d", res.rows, res.lost, res.duplicated)
}
