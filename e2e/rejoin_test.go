package e2e

import (
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// A killed source task comes back as the same static group member, so it
// reads on at once instead of waiting for the dead member's session
// timeout, here librdkafka's 45 s: twice in a row (the chaos run saw two
// kills inside one session timeout stack to 42 s), then the table holds
// every record once.
func TestKilledSourceRejoinsAtOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 5*time.Minute)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 4, initial: 2000, rate: 200, name: "rejoin",
		extra: map[string]string{"kafka.session.timeout.ms": "45000", "kafka.heartbeat.interval.ms": "3000"}})
	r.waitCommitted(ctx, 2000)

	const bound = 15 * time.Second // far below the session timeout
	for kill := 1; kill <= 2; kill++ {
		delivered, err := r.feed.pause(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.f.KillPlugin("kafka")
		killed := time.Now()
		// Records produced after the kill can only reach the table
		// through the restarted source.
		if err := r.feed.produceNow(ctx, 500); err != nil {
			t.Fatal(err)
		}
		r.waitCommitted(ctx, delivered.all.records+500)
		took := time.Since(killed)
		t.Logf("kill %d of the kafka plugin: caught up %s after the kill", kill, took.Round(time.Millisecond))
		if took > bound {
			t.Errorf("kill %d: caught up %s after the kill, want ≤ %s: did the task wait for its old member's session timeout?",
				kill, took.Round(time.Millisecond), bound)
		}
		r.feed.resume()
	}
	res := r.check(ctx, harness.DuckDB, false)
	t.Logf("%d rows, lost %d, duplicated %d", res.rows, res.lost, res.duplicated)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}
