package harness

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Brokers is a private Kafka cluster of several KRaft nodes (each both
// broker and controller) that one test starts with e2e/services/up
// --kafka-brokers N in a state folder of its own, so that it may kill and
// start nodes without disturbing anyone else. Topics created on it get
// replication factor min(N, 3) and min.insync.replicas 2, so one node may
// be down while producers use acks=all. Node i's log is
// Dir/logs/kafka-<i+1>.log.
type Brokers struct {
	// Dir is the services state folder (FLOE_SERVICES_DIR of the cluster).
	Dir string
	// Bootstrap lists every node's PLAINTEXT address.
	Bootstrap string

	nodes []*service
}

// StartBrokers starts a private Kafka cluster of n nodes (n is 1 or 3,
// what e2e/services/up offers) and stops it when the test ends. Its state
// folder is kept when the test failed.
func StartBrokers(t testing.TB, env Env, n int) *Brokers {
	t.Helper()
	start := time.Now()
	first, vars := upService(t, env, "private Kafka node 1", "FLOE_KAFKA_PIDS", "kafka-1.log",
		"--kafka-brokers", strconv.Itoa(n), "--no-registry", "--no-postgres", "--no-python", "--no-lake")
	b := &Brokers{Dir: first.dir, Bootstrap: vars["FLOE_KAFKA_BOOTSTRAP"], nodes: []*service{first}}
	pids := strings.Fields(vars["FLOE_KAFKA_PIDS"])
	if len(pids) != n || b.Bootstrap == "" {
		t.Fatalf("harness: private Kafka cluster: env file %s lists pids %q and bootstrap %q, want %d nodes",
			filepath.Join(b.Dir, "env"), vars["FLOE_KAFKA_PIDS"], b.Bootstrap, n)
	}
	for i := 1; i < n; i++ {
		s := &service{t: t, what: fmt.Sprintf("private Kafka node %d", i+1), dir: b.Dir, repo: first.repo,
			logFile: filepath.Join(b.Dir, "logs", fmt.Sprintf("kafka-%d.log", i+1)), pidVar: "FLOE_KAFKA_PIDS", slot: i}
		if _, err := fmt.Sscan(pids[i], &s.pid); err != nil {
			t.Fatalf("harness: private Kafka cluster: pid %q of node %d: %v", pids[i], i+1, err)
		}
		// The first node's cleanup runs down on the folder; this one's
		// only makes sure a node left stopped mid-test is gone.
		t.Cleanup(s.kill)
		b.nodes = append(b.nodes, s)
	}
	// Registered last, so it runs first: the nodes die at once, before
	// down stops them one by one. A graceful stop of the last nodes of
	// a KRaft quorum waits for a controller that is gone (a minute per
	// test), and the cluster's data is thrown away anyway.
	t.Cleanup(func() {
		for _, s := range b.nodes {
			s.kill()
		}
	})
	t.Logf("harness: private Kafka cluster of %d nodes at %s in %s", n, b.Bootstrap, time.Since(start).Round(time.Millisecond))
	return b
}

// Env returns env with this cluster as Kafka (no SASL listener).
func (b *Brokers) Env(env Env) Env {
	env.KafkaBootstrap = b.Bootstrap
	env.KafkaBrokers = len(b.nodes)
	env.SASLBootstrap, env.SASLUser, env.SASLPassword, env.SASLMechanisms = "", "", "", ""
	return env
}

// Nodes is the number of nodes.
func (b *Brokers) Nodes() int { return len(b.nodes) }

// Stop sends sig to node i (0-based) and waits until it is gone.
func (b *Brokers) Stop(i int, sig syscall.Signal) {
	b.nodes[i].t.Helper()
	b.nodes[i].stop(sig)
}

// Start starts the stopped node i again and waits up to 5 minutes for its
// "Kafka Server started": a node rejoining a busy quorum on two shared
// cores took over two minutes.
func (b *Brokers) Start(i int) {
	b.nodes[i].t.Helper()
	b.nodes[i].readyWithin = 5 * time.Minute
	// A node restarted on two busy cores may give up registering with
	// the controller quorum and exit ("unable to register with the
	// controller quorum"): the soak met it while the workers' librdkafka
	// clients spun (docs/distributed.md, Limits). Start it once more.
	b.nodes[i].startAttempts = 2
	b.nodes[i].start(logSays("Kafka Server started"))
}
