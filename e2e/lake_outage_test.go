package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestLakeCatalogOutage kills the REST catalog for 20 s while floe ingests
// (Kafka → iceberg on a private lake, REST catalog + S3, a commit a
// second, a feeder producing 500 records a second), twice. Commits stall
// and are retried with backoff; ingestion goes on until
// checkpoint.max.pending (3) checkpoints wait and the open one holds
// checkpoint.max.buffered.bytes (256 KiB here), then pauses (records in
// stop growing); the connector stays RUNNING. Once the
// catalog is back (same tables: its SQLite file and the bucket keep them)
// the waiting checkpoints commit by themselves, and the tables hold every
// produced record once (DuckDB, then PyIceberg).
func TestLakeCatalogOutage(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 8*time.Minute)
	pl := harness.StartLake(t, env)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 5000, rate: 500, name: "outage", lake: &pl.Lake,
		// A small memory bound, so the outage reaches it in seconds.
		extra: map[string]string{"checkpoint.max.buffered.bytes": "262144"}})

	for i, engine := range []harness.Engine{harness.DuckDB, harness.PyIceberg} {
		began := time.Now()
		before := r.waitCommitted(ctx, r.committed(ctx)+1000)
		pl.REST.Stop(syscall.SIGKILL)
		var last, atPause harness.Progress
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
			st, err := r.f.API.Status(ctx, r.opts.name)
			if err != nil {
				t.Fatalf("status during the outage: %v", err)
			}
			if failed := st.Failed(); failed != "" {
				t.Fatalf("the connector failed during the catalog outage:\n%s", failed)
			}
			if st.Floe != nil {
				last = *st.Floe
				if time.Until(end) > 6*time.Second {
					atPause = last
				}
			}
		}
		during := r.committed(ctx)
		if during != before {
			t.Errorf("%d records were committed while the catalog was down (from %d to %d)", during-before, before, during)
		}
		if last.PendingCheckpoints != 3 {
			t.Errorf("at the end of the outage %d checkpoints wait, want checkpoint.max.pending = 3", last.PendingCheckpoints)
		}
		if last.RecordsIn != atPause.RecordsIn {
			t.Errorf("ingestion did not pause: records in grew from %d to %d over the outage's last 6 s", atPause.RecordsIn, last.RecordsIn)
		}
		pl.REST.Start()
		res := r.check(ctx, engine, i == 1)
		t.Logf("REST catalog down 20 s: committed %d before and at the end of the outage; %d checkpoints waiting, records in %d (paused); %d rows after; lost %d, duplicated %d; %.1f s",
			before, last.PendingCheckpoints, last.RecordsIn, res.rows, res.lost, res.duplicated, time.Since(began).Seconds())
		if t.Failed() {
			break
		}
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// TestLakeObjectStoreOutage kills the object store for 20 s while floe
// ingests (the rig of TestLakeCatalogOutage). Writes and commits stall
// and are retried; the connector never shows FAILED, nothing is committed
// while the store is down, and once it is back ingestion resumes by
// itself and the table holds every produced record once.
func TestLakeObjectStoreOutage(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 6*time.Minute)
	pl := harness.StartLake(t, env)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 5000, rate: 500, name: "s3outage", lake: &pl.Lake,
		extra: map[string]string{"checkpoint.max.buffered.bytes": "262144"}})

	before := r.waitCommitted(ctx, r.committed(ctx)+1000)
	pl.S3.Stop(syscall.SIGKILL)
	stopped := time.Now()
	var failures []string
	for time.Since(stopped) < 20*time.Second {
		st, err := r.f.API.Status(ctx, r.opts.name)
		if err != nil {
			t.Fatalf("status during the outage: %v", err)
		}
		if failed := st.Failed(); failed != "" && len(failures) < 3 {
			failures = append(failures, fmt.Sprintf("at %.1f s:\n%s", time.Since(stopped).Seconds(), failed))
		}
		time.Sleep(time.Second)
	}
	during := r.committed(ctx)
	if during != before {
		t.Errorf("%d records were committed while the object store was down (from %d to %d)", during-before, before, during)
	}
	if len(failures) > 0 {
		t.Errorf("the connector showed FAILED during the object store outage:\n%s", strings.Join(failures, "\n"))
	}
	pl.S3.Start()
	back := time.Now()
	first := r.waitCommitted(ctx, during+1)
	resumed := time.Since(back)
	if resumed > 15*time.Second {
		t.Errorf("the first commit came %s after the object store was back, want within 15 s", resumed.Round(time.Millisecond))
	}
	res := r.check(ctx, harness.DuckDB, true)
	t.Logf("object store down 20 s: committed %d before and %d at the end of the outage; first commit (%d) %.1f s after it was back; %d rows after; lost %d, duplicated %d",
		before, during, first, resumed.Seconds(), res.rows, res.lost, res.duplicated)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}
