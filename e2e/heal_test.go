package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/e2e/harness"
)

// TestPostgresCatalogOutageHealsByItself: the Postgres catalog goes away
// for 90 s during ingestion (every connection cut, new ones refused). No
// human acts: nothing is left FAILED, commits resume within 10 s of the
// catalog being back, and DuckDB and PyIceberg find every record once.
func TestPostgresCatalogOutageHealsByItself(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)
	proxy, viaProxy := proxied(t, env.PostgresURL)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 5000, rate: 500, name: "pgoutage",
		extra: map[string]string{"iceberg.catalog.uri": viaProxy}})

	before := r.waitCommitted(ctx, r.committed(ctx)+1000)
	proxy.Down()
	const outage = 90 * time.Second
	failedDuring := ""
	for end := time.Now().Add(outage); time.Now().Before(end); time.Sleep(time.Second) {
		st, err := r.f.API.Status(ctx, r.opts.name)
		if err != nil {
			t.Fatalf("status during the outage: %v", err)
		}
		if f := st.Failed(); f != "" && failedDuring == "" {
			failedDuring = f
		}
	}
	during := r.committed(ctx)
	proxy.Up()
	back := time.Now()
	r.waitCommitted(ctx, during+1)
	resumed := time.Since(back)
	if resumed > 10*time.Second {
		t.Errorf("the first commit came %s after the catalog was back, want ≤ 10 s", resumed.Round(time.Millisecond))
	}
	st := r.f.WaitStatus(ctx, r.opts.name, "nothing FAILED", false, func(s harness.ConnectorStatus) bool { return s.Failed() == "" })
	if failedDuring != "" {
		t.Logf("FAILED during the outage (healed since): %s", failedDuring)
	}
	res := r.check(ctx, harness.DuckDB, false)
	res2 := r.check(ctx, harness.PyIceberg, true)
	t.Logf("Postgres catalog down %s: committed %d before, %d at its end; first commit %s after it was back; restarts %d; %d rows after; lost %d/%d, duplicated %d/%d (DuckDB/PyIceberg)",
		outage, before, during, resumed.Round(time.Millisecond), restartsOf(st), res.rows, res.lost, res2.lost, res.duplicated, res2.duplicated)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

func restartsOf(st harness.ConnectorStatus) int64 {
	if st.Floe == nil {
		return 0
	}
	return st.Floe.Restarts
}

// TestStandaloneRestartStartsEachPluginOnce: a restart restores the
// connector from the data dir and reads the same connector file; that
// starts it once (no reconfigure 1–6 s later stopping every plugin), and
// the REST API answers within 2 s of the start.
func TestStandaloneRestartStartsEachPluginOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres)
	ctx := harness.Context(t, 4*time.Minute)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 2, initial: 1000, rate: 200, name: "once"})
	r.waitCommitted(ctx, 1000)

	r.f.Stop()
	began := time.Now()
	r.f.Restart() // returns once GET /health answers
	answered := time.Since(began)
	if answered > 2*time.Second {
		t.Errorf("the REST API answered %s after the start, want ≤ 2 s", answered.Round(time.Millisecond))
	}
	r.f.WaitStatus(ctx, r.opts.name, "connector RUNNING", false, harness.ConnectorStatus.Running)
	first := pluginPIDs(r.f)
	// The old double start stopped the plugins 1–6 s after the first
	// start; five commits later every process must still be the first.
	from := r.committed(ctx)
	st := r.f.WaitStatus(ctx, r.opts.name, "5 commits after the restart", false, func(s harness.ConnectorStatus) bool {
		return s.Floe != nil && s.Floe.Commits >= 5
	})
	r.waitCommitted(ctx, from+1)
	if now := pluginPIDs(r.f); !maps.Equal(now, first) {
		t.Errorf("plugin processes changed after the restart's first start: %v, then %v", first, now)
	}
	// One source, partitioner and sink process each.
	for _, bin := range []string{"floe-plugin-kafka", "floe-plugin-partitioners", "floe-plugin-iceberg"} {
		n := 0
		for _, name := range first {
			if name == bin {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d %s processes run after the restart, want 1 (%v)", n, bin, first)
		}
	}
	t.Logf("restart: REST answered after %s; %d plugin processes, unchanged over %d commits", answered.Round(time.Millisecond), len(first), st.Floe.Commits)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// pluginPIDs maps floe's child plugin processes to their binaries.
func pluginPIDs(f *harness.Floe) map[int]string {
	out := map[int]string{}
	for _, p := range f.Plugins() {
		if p.PPID == f.PID() {
			out[p.PID] = p.Name
		}
	}
	return out
}

// TestSigtermDuringRebalance: SIGTERM while a new member joins the
// source's consumer group (a rebalance under way). The final offset
// commit to the group may hang until the generation expires (45 s, the
// session timeout); floe must not wait for it, since the table already
// holds the truth: it exits well within task.shutdown.graceful.timeout.ms,
// and a restart finds every record once.
func TestSigtermDuringRebalance(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 5*time.Minute)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 4, initial: 3000, rate: 300, name: "rebalance",
		// librdkafka's defaults: a hung group commit would last 45 s.
		extra: map[string]string{"kafka.session.timeout.ms": "45000", "kafka.heartbeat.interval.ms": "3000"}})
	r.waitCommitted(ctx, 3000)

	joiner, err := ckafka.NewConsumer(&ckafka.ConfigMap{
		"bootstrap.servers": env.KafkaBootstrap, "group.id": "connect-" + r.opts.name, "broker.address.family": "v4",
		"partition.assignment.strategy": "cooperative-sticky", "enable.auto.commit": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := joiner.Subscribe(r.topic, nil); err != nil {
		t.Fatal(err)
	}
	stop, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			default:
				joiner.Poll(50)
			}
		}
	}()
	time.Sleep(700 * time.Millisecond) // the join is under way: floe's members are asked to rejoin
	began := time.Now()
	r.f.Stop()
	exited := time.Since(began)
	close(stop)
	<-polled
	_ = joiner.Close()
	if exited > 15*time.Second {
		t.Errorf("floe took %s to exit after SIGTERM during a rebalance, want ≤ 15 s", exited.Round(time.Millisecond))
	}

	r.f.Restart()
	r.f.WaitStatus(ctx, r.opts.name, "connector RUNNING", false, harness.ConnectorStatus.Running)
	res := r.check(ctx, harness.PyIceberg, true)
	t.Logf("SIGTERM during a rebalance: exited after %s; %d rows after the restart, lost %d, duplicated %d",
		exited.Round(time.Millisecond), res.rows, res.lost, res.duplicated)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// TestRegistryRestartedEmptyHealsByItself: the Schema Registry restarts
// with empty storage while a fresh source process starts (its schema
// cache empty), and the records in the topic carry a schema id nobody
// knows any more. The source waits for the id instead of dead-lettering
// or failing; 20 s later the schema is registered again, under the same
// id, and ingestion resumes by itself: nothing FAILED, nothing in the
// dead-letter topic (errors.tolerance=all, so a wrong verdict would land
// there), every record once in the tables. The registry is a private one
// (harness.StartRegistry), so no other test loses its schemas.
func TestRegistryRestartedEmptyHealsByItself(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 5*time.Minute)
	reg := harness.StartRegistry(t, env)
	env = reg.Env(env)
	dlq := harness.UniqueName("e2e_regreset_dlq")
	if err := harness.CreateTopic(ctx, env, dlq, 1); err != nil {
		t.Fatal(err)
	}
	// The wait for an unknown id keeps its default (60 s): the 20 s
	// outage of the schema must fit in it as shipped.
	r := newRig(t, ctx, rigOptions{env: env, partitions: 2, initial: 2000, rate: 200, name: "regreset",
		extra: map[string]string{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq}})
	id := r.feed.schemaID
	r.waitCommitted(ctx, 2000)

	// The registry goes; a fresh source starts while it is away and meets
	// it back with empty storage.
	reg.Stop(syscall.SIGKILL)
	before, logFrom := r.pluginRestarts(ctx), len(r.f.Log())
	killed := r.f.KillPlugin("kafka")
	reg.Start()
	back := time.Now()
	if known, err := schemaKnown(ctx, reg.URL, id); err != nil || known {
		t.Fatalf("the restarted registry knows schema id %d (%v): its storage is not empty", id, err)
	}
	r.waitPluginRestarted(ctx, procSource, killed[0].PID, before, logFrom, true)
	stalled := r.committed(ctx)
	failedMeanwhile := ""
	for time.Since(back) < 20*time.Second {
		st, err := r.f.API.Status(ctx, r.opts.name)
		if err != nil {
			t.Fatalf("status while the schema is unknown: %v", err)
		}
		if f := st.Failed(); f != "" && failedMeanwhile == "" {
			failedMeanwhile = f
		}
		time.Sleep(500 * time.Millisecond)
	}
	if failedMeanwhile != "" {
		t.Errorf("FAILED while the schema was unknown: %s", failedMeanwhile)
	}
	if !strings.Contains(r.f.Log()[logFrom:], "schema id unknown to the registry; its records wait for it") {
		t.Errorf("floe's log does not say the fresh source waited for schema id %d", id)
	}
	if now := r.committed(ctx); now != stalled {
		t.Errorf("committed offsets moved from %d to %d while the registry knew no schema", stalled, now)
	}

	// The same schema, registered first in an empty registry, gets the
	// same id: the records' framing is right again.
	again, err := harness.RegisterSchema(ctx, env, r.topic+"-value", crashValueSchema)
	if err != nil {
		t.Fatal(err)
	}
	if again != id {
		t.Fatalf("the re-registered schema got id %d, the records carry %d", again, id)
	}
	registered := time.Now()
	r.waitCommitted(ctx, stalled+1)
	resumed := time.Since(registered)
	if resumed > 15*time.Second {
		t.Errorf("the first commit came %s after the schema was registered again, want ≤ 15 s", resumed.Round(time.Millisecond))
	}
	res := r.check(ctx, harness.DuckDB, true)
	res2 := r.check(ctx, harness.PyIceberg, true)
	st := r.f.WaitStatus(ctx, r.opts.name, "nothing FAILED", false, func(s harness.ConnectorStatus) bool { return s.Failed() == "" })
	ends, err := harness.EndOffsets(ctx, env, dlq)
	if err != nil {
		t.Fatal(err)
	}
	if ends[0] != 0 || st.Floe == nil || st.Floe.DeadLetters != 0 {
		t.Errorf("dead letters: %d records in %s; want none (%s)", ends[0], dlq, st.Summary())
	}
	t.Logf("registry restarted empty: committed %d at the source's restart, unchanged for 20 s; schema id %d again; first commit %s after it; restarts %d; %d rows; lost %d/%d, duplicated %d/%d (DuckDB/PyIceberg); %d dead letters",
		stalled, again, resumed.Round(time.Millisecond), restartsOf(st), res.rows, res.lost, res2.lost, res.duplicated, res2.duplicated, ends[0])
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// schemaKnown asks the registry for schema id (GET /schemas/ids/{id}).
func schemaKnown(ctx context.Context, registryURL string, id int32) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/schemas/ids/%d", strings.TrimRight(registryURL, "/"), id), nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("GET schema id %d: HTTP %d", id, resp.StatusCode)
}
