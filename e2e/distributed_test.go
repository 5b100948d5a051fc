package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/e2e/harness"
)

// cluster is a running distributed test: workers by id, connectors,
// their tables.
type cluster struct {
	t         *testing.T
	env       harness.Env
	ctx       context.Context
	byID      map[string]*harness.Floe
	conns     []harness.Connector
	refs      []harness.TableRef
	keys      map[string]string
	namespace string
}

// newCluster starts workers worker-a … on a private Kafka cluster of
// clusterBrokers nodes and creates n datagen → iceberg connectors on a
// shared Postgres catalog, connector i through worker i mod workers (the
// leader answers, forwarded to it when it is another).
func newCluster(t *testing.T, ctx context.Context, env harness.Env, workers, n int) *cluster {
	t.Helper()
	return newClusterWith(t, ctx, env, workers, n, nil)
}

// clusterBrokers is the number of Kafka nodes a cluster test runs on:
// FLOE_E2E_CLUSTER_BROKERS, by default 3 (the workers' internal topics
// replicated 3 times with min.insync.replicas 2, as in production); 1
// uses the shared services' broker.
func clusterBrokers(t *testing.T) int {
	v := os.Getenv("FLOE_E2E_CLUSTER_BROKERS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("FLOE_E2E_CLUSTER_BROKERS=%q: want a number of Kafka nodes, 1 or more", v)
	}
	return n
}

// newClusterWith is newCluster with extra connector keys.
func newClusterWith(t *testing.T, ctx context.Context, env harness.Env, workers, n int, extra map[string]string) *cluster {
	t.Helper()
	if n := clusterBrokers(t); n > 1 {
		env = harness.StartBrokers(t, env, n).Env(env)
	}
	c := &cluster{t: t, env: env, ctx: ctx, byID: map[string]*harness.Floe{}, keys: harness.ClusterKeys(env), namespace: harness.UniqueName("e2e_dist")}
	var ws []*harness.Floe
	for i := range workers {
		id, w := harness.StartWorker(t, env, c.keys, i)
		c.byID[id] = w
		ws = append(ws, w)
	}
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	for i := range n {
		table := fmt.Sprintf("%s.orders_%d", c.namespace, i)
		conn := harness.Connector{Name: fmt.Sprintf("dist-%d", i), Config: map[string]string{
			"connector.class":           "iceberg",
			"source":                    "datagen",
			"datagen.rate":              "1000",
			"datagen.partitions":        "2",
			"tasks.max":                 "2",
			"commit.interval.ms":        "500",
			"iceberg.tables":            table,
			"iceberg.catalog.type":      "sql",
			"iceberg.catalog.uri":       env.PostgresURL,
			"iceberg.catalog.warehouse": warehouse,
		}}
		maps.Copy(conn.Config, extra)
		harness.CreateWhenLed(t, ctx, ws[i%len(ws)], conn)
		c.conns = append(c.conns, conn)
		c.refs = append(c.refs, harness.TableRef{CatalogURI: env.PostgresURL, Warehouse: warehouse, Name: table})
	}
	return c
}

// other returns a worker that is none of not.
func (c *cluster) other(not ...string) (string, *harness.Floe) {
	for _, id := range slices.Sorted(maps.Keys(c.byID)) {
		if !slices.Contains(not, id) {
			return id, c.byID[id]
		}
	}
	c.t.Fatalf("no worker other than %v", not)
	return "", nil
}

// owner waits until the connector's status, read through reader, is
// RUNNING with its committer and every task on workers that are none of
// not, and returns the committer's worker (the connector's worker_id).
func (c *cluster) owner(name string, reader *harness.Floe, not ...string) string {
	c.t.Helper()
	var id string
	reader.WaitStatus(c.ctx, name, fmt.Sprintf("RUNNING on workers other than %v", not), false, func(s harness.ConnectorStatus) bool {
		id = s.Connector.WorkerID
		if !s.Running() || slices.Contains(not, id) || c.byID[id] == nil {
			return false
		}
		for _, task := range s.Tasks {
			if slices.Contains(not, task.WorkerID) || c.byID[task.WorkerID] == nil {
				return false
			}
		}
		return true
	})
	return id
}

// taskWorkers returns the workers the connector's tasks run on, read
// through reader.
func (c *cluster) taskWorkers(name string, reader *harness.Floe) map[string]bool {
	c.t.Helper()
	st, err := reader.API.Status(c.ctx, name)
	if err != nil {
		c.t.Fatal(err)
	}
	ws := map[string]bool{}
	for _, task := range st.Tasks {
		ws[task.WorkerID] = true
	}
	return ws
}

// committed is the sum of the connector's committed offsets, read
// through via; -1 when the call fails.
func (c *cluster) committed(name string, via *harness.Floe) int64 {
	offs, err := via.API.Offsets(c.ctx, name)
	if err != nil {
		return -1
	}
	var sum int64
	for _, o := range offs.Offsets {
		sum += offsetValue(c.t, o)
	}
	return sum
}

// progressing waits until the connector committed 500 records past
// after, read through via, and returns the new sum.
func (c *cluster) progressing(name string, via *harness.Floe, after int64, what string) int64 {
	c.t.Helper()
	var sum int64
	via.WaitFor(c.ctx, what, func(ctx context.Context) (bool, string, error) {
		sum = c.committed(name, via)
		return sum >= after+500, fmt.Sprintf("%s committed %d (from %d)", name, sum, after), nil
	})
	return sum
}

// stopAndCheck stops every live worker (SIGTERM, exit 0) and checks
// every table with PyIceberg and DuckDB.
func (c *cluster) stopAndCheck(dead ...string) {
	c.t.Helper()
	for id, w := range c.byID {
		if !slices.Contains(dead, id) {
			w.Stop()
		}
	}
	for i, conn := range c.conns {
		checkDatagenTable(c.t, c.env, c.refs[i], conn)
	}
}

// TestDistributedFailover runs two datagen → iceberg connectors on a
// cluster of three workers sharing a Postgres catalog: each connector is
// created through one worker and its status read through another; they
// run on two different workers; the worker of one is killed with
// SIGKILL, and that connector moves to a live worker and goes on
// committing. Then the leader is killed while it writes a config change,
// and the last worker applies the change and runs both connectors.
// Afterwards every table holds each generated record of its committed
// range exactly once (PyIceberg and DuckDB).
func TestDistributedFailover(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.Postgres, harness.Plugin("datagen"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)
	c := newCluster(t, ctx, env, 3, 2)
	_, reader := c.other("worker-a", "worker-b")
	first := c.owner(c.conns[0].Name, reader)
	second := c.owner(c.conns[1].Name, reader)
	t.Logf("placement: %s on %s, %s on %s", c.conns[0].Name, first, c.conns[1].Name, second)
	if first == second {
		t.Errorf("both connectors run on %s: the leader must spread them over the three workers", first)
	}

	_, survivor := c.other(first)
	before := c.progressing(c.conns[0].Name, survivor, 0, "a first commit of "+c.conns[0].Name)
	// A worker that does not run the connector forwards its offsets to
	// the one that does, rather than start a sink process to read them.
	for range 5 {
		c.committed(c.conns[0].Name, survivor)
	}
	if survivor.LogContains(`msg="plugin process exited"[^\n]*connector=` + regexp.QuoteMeta(c.conns[0].Name) + `\b`) {
		t.Errorf("reading %s's offsets through a worker that does not run it started a plugin process there", c.conns[0].Name)
	}
	killed := time.Now()
	c.byID[first].Kill()
	moved := c.owner(c.conns[0].Name, survivor, first)
	t.Logf("%s moved from %s (killed) to %s in %s", c.conns[0].Name, first, moved, time.Since(killed).Round(100*time.Millisecond))
	c.progressing(c.conns[0].Name, c.byID[moved], before, c.conns[0].Name+" committing on "+moved)
	if second != first {
		c.progressing(c.conns[1].Name, c.byID[second], 0, c.conns[1].Name+" committing on "+second)
	}

	// Kill the leader while it writes a config change: the change is in
	// the config topic whole or not at all, and the last worker takes
	// the same change again.
	var leader string
	for _, id := range slices.Sorted(maps.Keys(c.byID)) {
		if id != first && c.byID[id].LogContains("leading the cluster") {
			leader = id
		}
	}
	if leader == "" {
		t.Fatalf("no live worker logged \"leading the cluster\"")
	}
	last, lastW := c.other(first, leader)
	changed := maps.Clone(c.conns[1].Config)
	changed["datagen.rate"] = "1500"
	go func() { _, _, _ = c.byID[leader].API.PutConfig(ctx, c.conns[1].Name, changed) }()
	time.Sleep(20 * time.Millisecond)
	c.byID[leader].Kill()
	t.Logf("killed the leader %s during a config write; %s is left", leader, last)
	lastW.WaitFor(ctx, "the config change applied through "+last, func(ctx context.Context) (bool, string, error) {
		_, _, err := lastW.API.PutConfig(ctx, c.conns[1].Name, changed)
		var ae *harness.APIError
		if err != nil && errors.As(err, &ae) && ae.Status == 409 {
			return false, err.Error(), nil
		}
		return err == nil, "", err
	})
	c.conns[1].Config = changed
	for _, conn := range c.conns {
		c.owner(conn.Name, lastW, first, leader)
		c.progressing(conn.Name, lastW, c.committed(conn.Name, lastW), conn.Name+" committing on "+last)
	}
	if cfg, err := lastW.API.Config(ctx, c.conns[1].Name); err != nil || cfg["datagen.rate"] != "1500" {
		t.Errorf("%s's config on %s: %v (err %v), want datagen.rate 1500", c.conns[1].Name, last, cfg, err)
	}
	c.stopAndCheck(first, leader)
}

// TestDistributedTasksSpread runs one connector with three tasks on a
// cluster of three workers: it is created through worker-a and its status
// read through worker-c; its tasks run on all three workers, each worker
// reading its own partitions and writing its own files, and one committer
// commits every worker's checkpoints. Then a worker without the
// committer is killed (its task moves, the others keep committing), then
// the committer's worker (the committer moves). The table must hold
// every record of its frontier once, with checkpoints, positions and
// committer epochs that never went back.
func TestDistributedTasksSpread(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.Postgres, harness.Plugin("datagen"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)
	c := newClusterWith(t, ctx, env, 3, 1, map[string]string{"tasks.max": "3", "datagen.partitions": "6", "datagen.rate": "1500"})
	name := c.conns[0].Name
	reader := c.byID["worker-c"]
	committer := c.owner(name, reader)
	ws := c.taskWorkers(name, reader)
	t.Logf("%s: committer on %s, tasks on %v", name, committer, slices.Sorted(maps.Keys(ws)))
	if len(ws) != 3 {
		t.Fatalf("the tasks run on %d workers (%v); want all three", len(ws), ws)
	}
	before := c.progressing(name, reader, 0, "first commits of every worker's checkpoints")
	if !c.byID[committer].LogContains("committing the connector's checkpoints for the cluster") {
		t.Errorf("%s does not log that it commits for the cluster", committer)
	}

	// Read-your-writes across workers: a config written through one
	// worker is what every other answers at once, though each applies it
	// only once its share stopped.
	changed := maps.Clone(c.conns[0].Config)
	changed["datagen.rate"] = "1400"
	if _, _, err := c.byID["worker-a"].API.PutConfig(ctx, name, changed); err != nil {
		t.Fatalf("PUT %s's config through worker-a: %v", name, err)
	}
	c.conns[0].Config = changed
	for _, id := range []string{"worker-b", "worker-c"} {
		if cfg, err := c.byID[id].API.Config(ctx, name); err != nil || cfg["datagen.rate"] != "1400" {
			t.Errorf("right after the PUT through worker-a, %s answers datagen.rate %q (err %v), want 1400", id, cfg["datagen.rate"], err)
		}
	}
	before = c.progressing(name, reader, before, name+" committing with its new config")

	// A restart with includeTasks reaches the tasks on every worker, as
	// Connect's does: each worker opens its task again. Each worker
	// applies the config change first (its task opens at the new rate),
	// so that the opens counted after the restart are the restart's.
	newRate := fmt.Sprintf("rate=%v/s", 1400.0/3) // datagen.rate over the three tasks
	for id, w := range c.byID {
		w.WaitFor(ctx, id+" applied the config change", func(context.Context) (bool, string, error) {
			ok := strings.Contains(w.Log(), newRate)
			return ok, fmt.Sprintf("task opened at %s: %v", newRate, ok), nil
		})
	}
	opened := map[string]int{}
	for id, w := range c.byID {
		opened[id] = strings.Count(w.Log(), "datagen task opened")
	}
	if code, _, err := c.byID["worker-b"].API.Restart(ctx, name, true, false); err != nil || code != http.StatusAccepted {
		t.Fatalf("POST %s/restart?includeTasks=true through worker-b: %d %v, want 202", name, code, err)
	}
	for id, w := range c.byID {
		w.WaitFor(ctx, id+" restarted its task", func(context.Context) (bool, string, error) {
			n := strings.Count(w.Log(), "datagen task opened")
			return n > opened[id], fmt.Sprintf("%d task opens, %d before the restart", n, opened[id]), nil
		})
	}
	before = c.progressing(name, reader, before, name+" committing after the restart of every task")

	var other string
	for _, id := range slices.Sorted(maps.Keys(c.byID)) {
		if id != committer {
			other = id
			break
		}
	}
	killed := time.Now()
	c.byID[other].Kill()
	_, via := c.other(other)
	if got := c.owner(name, via, other); got != committer {
		t.Errorf("the committer moved from %s to %s when %s (without it) was killed", committer, got, other)
	}
	t.Logf("killed %s (no committer): RUNNING on the others after %s", other, time.Since(killed).Round(100*time.Millisecond))
	before = c.progressing(name, via, before, name+" committing without "+other)

	killed = time.Now()
	c.byID[committer].Kill()
	last, lastW := c.other(other, committer)
	if got := c.owner(name, lastW, other, committer); got != last {
		t.Errorf("committer on %s, want %s, the last worker", got, last)
	}
	t.Logf("killed %s (the committer's): RUNNING on %s after %s", committer, last, time.Since(killed).Round(100*time.Millisecond))
	c.progressing(name, lastW, before, name+" committing on "+last)
	c.stopAndCheck(other, committer)
}

// TestDistributedZombieAndRollingRestart freezes the worker of a
// connector (SIGSTOP of it and its plugins) past the session timeout, so
// the connector moves; then thaws it (a zombie that still runs the
// connector until it reads the new assignment) and checks that it stops
// its copy. Then every worker is restarted in turn while both connectors
// ingest. Every table must still hold each record exactly once, and
// checkpoint ids only grow: the zombie's commit of a partition its
// successor had not committed yet continues the frontier, and only the
// sink's fence on the checkpoint id refuses it.
func TestDistributedZombieAndRollingRestart(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.Postgres, harness.Plugin("datagen"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 10*time.Minute)
	c := newCluster(t, ctx, env, 3, 2)
	_, reader := c.other("worker-a", "worker-b")
	frozenID := c.owner(c.conns[0].Name, reader)
	_, heirReader := c.other(frozenID)
	before := c.progressing(c.conns[0].Name, heirReader, 0, "a first commit")

	zombie := c.byID[frozenID]
	procs := append(zombie.Plugins(), harness.Proc{PID: zombie.PID(), Name: "floe"})
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGSTOP)
	}
	t.Logf("froze %s (pid %d) and its plugins", frozenID, zombie.PID())
	heir := c.owner(c.conns[0].Name, heirReader, frozenID)
	c.progressing(c.conns[0].Name, c.byID[heir], before, c.conns[0].Name+" committing on "+heir)
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGCONT)
	}
	t.Logf("thawed %s", frozenID)
	zombie.WaitFor(ctx, "the thawed worker to stop its copy of "+c.conns[0].Name, func(context.Context) (bool, string, error) {
		return zombie.LogContains(`(connector placed on another worker; stopping it here|the connector's committer moved to another worker).*` + c.conns[0].Name), "", nil
	})
	c.progressing(c.conns[0].Name, c.byID[heir], c.committed(c.conns[0].Name, c.byID[heir]), c.conns[0].Name+" still committing on "+heir)

	for _, id := range slices.Sorted(maps.Keys(c.byID)) {
		c.byID[id].Restart()
		_, via := c.other(id)
		for _, conn := range c.conns {
			c.owner(conn.Name, via)
			c.progressing(conn.Name, via, c.committed(conn.Name, via), fmt.Sprintf("%s committing after the restart of %s", conn.Name, id))
		}
	}
	c.stopAndCheck()
}

// TestDistributedScaleOutAndIn runs three connectors on one worker, adds
// two workers (the leader moves one connector to each, stopping it on the
// first worker before starting it on the new one), then stops the two
// (their connectors come back to the first). Every table must hold each
// record exactly once.
func TestDistributedScaleOutAndIn(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.Postgres, harness.Plugin("datagen"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 10*time.Minute)
	c := newCluster(t, ctx, env, 1, 3)
	a := c.byID["worker-a"]
	for _, conn := range c.conns {
		c.owner(conn.Name, a)
		c.progressing(conn.Name, a, 0, conn.Name+" committing on worker-a")
	}
	for i := 1; i <= 2; i++ {
		id, w := harness.StartWorker(t, env, c.keys, i)
		c.byID[id] = w
	}
	spread := map[string]string{}
	a.WaitFor(ctx, "one connector on each of the three workers", func(ctx context.Context) (bool, string, error) {
		seen := map[string]bool{}
		for _, conn := range c.conns {
			st, err := a.API.Status(ctx, conn.Name)
			if err != nil || !st.Running() {
				return false, fmt.Sprint(spread), nil
			}
			spread[conn.Name] = st.Connector.WorkerID
			seen[st.Connector.WorkerID] = true
		}
		return len(seen) == 3, fmt.Sprint(spread), nil
	})
	t.Logf("after scaling out: %v", spread)
	for _, conn := range c.conns {
		w := c.byID[spread[conn.Name]]
		c.progressing(conn.Name, w, c.committed(conn.Name, w), conn.Name+" committing on "+spread[conn.Name])
	}
	c.byID["worker-b"].Stop()
	c.byID["worker-c"].Stop()
	for _, conn := range c.conns {
		c.owner(conn.Name, a, "worker-b", "worker-c")
		c.progressing(conn.Name, a, c.committed(conn.Name, a), conn.Name+" back on worker-a and committing")
	}
	a.Stop()
	for i, conn := range c.conns {
		checkDatagenTable(t, env, c.refs[i], conn)
	}
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
	if err := md.CheckLineage(conn.Name); err != nil {
		t.Errorf("%s: %v", ref.Name, err)
	}
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

// TestDistributedBadInput starts `floe distributed` on clusters it must
// refuse: a group.id an ordinary consumer group uses, a config topic with
// two partitions, an internal topic that is not compacted. Each exits
// non-zero with an error naming the group or the topic and the fix.
func TestDistributedBadInput(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka)
	ctx := harness.Context(t, 3*time.Minute)
	run := func(t *testing.T, group string, keys map[string]string) harness.CLIResult {
		t.Helper()
		dir := t.TempDir()
		port, err := freeTCPPort()
		if err != nil {
			t.Fatal(err)
		}
		cfg := map[string]string{
			"bootstrap.servers":    env.KafkaBootstrap,
			"group.id":             group,
			"config.storage.topic": group + "-configs",
			"offset.storage.topic": group + "-offsets",
			"status.storage.topic": group + "-status",
			"listeners":            fmt.Sprintf("http://127.0.0.1:%d", port),
			"plugin.path":          env.PluginDir(),
			"data.dir":             filepath.Join(dir, "data"),
		}
		maps.Copy(cfg, keys)
		data, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "worker.json")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res := harness.RunFloe(t, env, dir, 90*time.Second, "distributed", file)
		if res.Code == 0 {
			t.Fatalf("floe distributed exited 0, want an error:\n%s", res.Output())
		}
		return res
	}
	expect := func(t *testing.T, res harness.CLIResult, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(res.Output(), w) {
				t.Errorf("the error does not say %q:\n%s", w, res.Output())
			}
		}
	}

	t.Run("group.id of an ordinary consumer group", func(t *testing.T) {
		group := harness.UniqueName("e2e-foreign")
		topic := group + "-data"
		if err := harness.CreateTopic(ctx, env, topic, 1); err != nil {
			t.Fatal(err)
		}
		cons, err := ckafka.NewConsumer(&ckafka.ConfigMap{"bootstrap.servers": env.KafkaBootstrap, "group.id": group, "broker.address.family": "v4"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cons.Close() }()
		if err := cons.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		// Poll until the consumer holds its partition: the group is live.
		deadline := time.Now().Add(30 * time.Second)
		for {
			cons.Poll(100)
			parts, err := cons.Assignment()
			if err == nil && len(parts) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the ordinary consumer got no partition within 30 s")
			}
		}
		stop := make(chan struct{})
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			for {
				select {
				case <-stop:
					return
				default:
					cons.Poll(100)
				}
			}
		}()
		res := run(t, group, nil)
		close(stop)
		<-polled
		expect(t, res, group, "not a floe cluster")
	})
	t.Run("config topic with two partitions", func(t *testing.T) {
		group := harness.UniqueName("e2e-badtopic")
		if err := harness.CreateTopicWith(ctx, env, group+"-configs", 2, map[string]string{"cleanup.policy": "compact"}); err != nil {
			t.Fatal(err)
		}
		expect(t, run(t, group, nil), group+"-configs", "2 partitions")
	})
	t.Run("status topic not compacted", func(t *testing.T) {
		group := harness.UniqueName("e2e-badtopic")
		if err := harness.CreateTopic(ctx, env, group+"-status", 2); err != nil {
			t.Fatal(err)
		}
		expect(t, run(t, group, nil), group+"-status", "compact")
	})
}

// TestDistributedWorkerWithoutPlugin runs a cluster of two workers, one
// of which lacks the datagen plugin: a datagen connector created through
// it runs wholly on the other (tasks and committer), and its status read
// through the lacking worker is the other's, not its own refusal. Once
// the worker that can run it stops, the connector is placed nowhere and
// its status says which worker lacks what.
func TestDistributedWorkerWithoutPlugin(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.Postgres, harness.Plugin("datagen"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 5*time.Minute)
	keys := harness.ClusterKeys(env)
	lacking := t.TempDir()
	entries, err := os.ReadDir(env.PluginDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "floe-plugin-datagen" {
			continue
		}
		if err := os.Symlink(filepath.Join(env.PluginDir(), e.Name()), filepath.Join(lacking, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	_, a := harness.StartWorker(t, env, keys, 0)
	bKeys := maps.Clone(keys)
	bKeys["plugin.path"] = lacking
	_, b := harness.StartWorker(t, env, bKeys, 1)
	c := &cluster{t: t, env: env, ctx: ctx, byID: map[string]*harness.Floe{"worker-a": a, "worker-b": b}, keys: keys}
	conn := harness.Connector{Name: "needs-datagen", Config: map[string]string{
		"connector.class": "iceberg", "source": "datagen", "datagen.rate": "500", "tasks.max": "2",
		"commit.interval.ms": "500", "iceberg.tables": harness.UniqueName("e2e_plugin") + ".orders",
		"iceberg.catalog.type": "sql", "iceberg.catalog.uri": env.PostgresURL,
		"iceberg.catalog.warehouse": "file://" + filepath.Join(t.TempDir(), "warehouse"),
	}}
	harness.CreateWhenLed(t, ctx, b, conn)
	if got := c.owner(conn.Name, a, "worker-b"); got != "worker-a" {
		t.Fatalf("committer on %s, want worker-a", got)
	}
	// Until worker-b reads the first placement of the connector it
	// answers with its own refusal (FAILED, naming what it lacks): a
	// known limit of a few hundred milliseconds after the create. Then
	// its answer is worker-a's.
	b.WaitStatus(ctx, conn.Name, "worker-a's status read through worker-b", true, func(s harness.ConnectorStatus) bool {
		return s.Running() && s.Connector.WorkerID == "worker-a"
	})
	if ws := c.taskWorkers(conn.Name, b); len(ws) != 1 || !ws["worker-a"] {
		t.Fatalf("tasks on %v, want all on worker-a (worker-b has no datagen)", ws)
	}
	c.progressing(conn.Name, b, 0, "commits on worker-a, read through worker-b")
	if b.LogContains(`connector placed on this worker; starting it[^\n]*` + conn.Name) {
		t.Errorf("worker-b, which lacks datagen, was given part of %s", conn.Name)
	}

	a.Stop()
	b.WaitStatus(ctx, conn.Name, "FAILED on worker-b naming the missing plugin", false, func(s harness.ConnectorStatus) bool {
		return s.Connector.State == "FAILED" && strings.Contains(s.Connector.Trace, "worker-b") && strings.Contains(s.Connector.Trace, "datagen")
	})
}

// freeTCPPort asks the kernel for a free port on 127.0.0.1.
func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PUT /admin/loggers/{name}?scope=cluster on one worker sets the level
// on every worker of the cluster (Connect's KIP-976); scope=worker only
// on the worker asked.
func TestDistributedLoggerScopeCluster(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka)
	ctx := harness.Context(t, 3*time.Minute)
	keys := harness.ClusterKeys(env)
	_, a := harness.StartWorker(t, env, keys, 0)
	_, b := harness.StartWorker(t, env, keys, 1)
	level := func(w *harness.Floe) string {
		var l struct {
			Level string `json:"level"`
		}
		mustDecode(t, mustDo(t, w.API, ctx, "GET", "/admin/loggers/floe.worker", nil, http.StatusOK), &l)
		return l.Level
	}
	// Until worker-b has joined, worker-a does not know it: ask again
	// until it reached worker-b.
	b.WaitFor(ctx, "scope=cluster through worker-a to set floe.worker to DEBUG on worker-b", func(ctx context.Context) (bool, string, error) {
		r, err := a.API.Do(ctx, "PUT", "/admin/loggers/floe.worker?scope=cluster", map[string]string{"level": "DEBUG"})
		if err != nil {
			return false, "", err
		}
		if r.Status != http.StatusNoContent && r.Status != http.StatusConflict {
			return false, "", fmt.Errorf("PUT scope=cluster: HTTP %d: %s", r.Status, r.Body)
		}
		got := level(b)
		return got == "DEBUG", fmt.Sprintf("PUT answered %d; worker-b at %s", r.Status, got), nil
	})
	if got := level(a); got != "DEBUG" {
		t.Errorf("worker-a, asked with scope=cluster, has floe.worker at %s", got)
	}
	mustDo(t, b.API, ctx, "PUT", "/admin/loggers/floe.worker?scope=worker", map[string]string{"level": "WARN"}, http.StatusOK)
	if ga, gb := level(a), level(b); ga != "DEBUG" || gb != "WARN" {
		t.Errorf("after scope=worker on worker-b: worker-a %s (want DEBUG), worker-b %s (want WARN)", ga, gb)
	}
}
