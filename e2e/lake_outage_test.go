package e2e

import (
	"context"
	"fmt"
	"slices"
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
// checkpoint.max.buffered.bytes (256 KiB here), or sooner when a writer
// meets a table it has not loaded yet (its write waits for the catalog),
// then pauses (records in stop growing); the connector stays RUNNING, and its status says it is
// waiting for the catalog at the REST URI, since the outage began, with
// the last error. Once the catalog is back (same tables: its SQLite file
// and the bucket keep them) the waiting checkpoints commit by themselves,
// the status waits for nothing, and the tables hold every produced record
// once (DuckDB, then PyIceberg).
func TestLakeCatalogOutage(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 8*time.Minute)
	pl := harness.StartLake(t, env)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 5000, rate: 500, name: "outage", lake: &pl.Lake,
		// A small memory bound, so the outage reaches it in seconds.
		extra: map[string]string{"checkpoint.max.buffered.bytes": "262144"}})
	catalog := "catalog at " + pl.Lake.RESTURI

	for i, engine := range []harness.Engine{harness.DuckDB, harness.PyIceberg} {
		began := time.Now()
		before := r.waitCommitted(ctx, r.committed(ctx)+1000)
		pl.REST.Stop(syscall.SIGKILL)
		stopped := time.Now()
		var last, atPause harness.Progress
		var waits waitLog
		// A commit the catalog answered before the kill may be counted
		// after it: nothing may commit from inFlightCommit on.
		settled := int64(-1)
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
			if settled < 0 && time.Since(stopped) >= inFlightCommit {
				settled = r.committed(ctx)
			}
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
				waits.note(last, catalog, stopped)
			}
		}
		waits.check(t, catalog, stopped)
		during := r.committed(ctx)
		if during != settled {
			t.Errorf("%d records were committed while the catalog was down (from %d, %s after the kill, to %d)", during-settled, settled, inFlightCommit, during)
		}
		if last.PendingCheckpoints < 1 || last.PendingCheckpoints > 3 {
			t.Errorf("at the end of the outage %d checkpoints wait, want 1 to checkpoint.max.pending (3)", last.PendingCheckpoints)
		}
		if last.RecordsIn != atPause.RecordsIn {
			t.Errorf("ingestion did not pause: records in grew from %d to %d over the outage's last 6 s", atPause.RecordsIn, last.RecordsIn)
		}
		pl.REST.Start()
		res := r.check(ctx, engine, i == 1)
		cleared := awaitNoWaits(t, ctx, r)
		t.Logf("REST catalog down 20 s: committed %d before the kill, %d %s after it and at the end of the outage; %d checkpoints waiting, records in %d (paused); status named %q %.1f s after the kill (%d attempts at the end, last error %q), waited for nothing %.1f s after the check; %d rows after; lost %d, duplicated %d; %.1f s",
			before, settled, inFlightCommit, last.PendingCheckpoints, last.RecordsIn, catalog, waits.firstAt.Seconds(), waits.last.Attempts, waits.last.LastError, cleared.Seconds(), res.rows, res.lost, res.duplicated, time.Since(began).Seconds())
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
// and are retried; the connector never shows FAILED, its status says it
// is waiting for the object store at its endpoint, nothing is committed
// while the store is down, and once it is back ingestion resumes by
// itself, the status waits for nothing, and the tables hold every
// produced record once (DuckDB from S3, then PyIceberg through the
// catalog).
func TestLakeObjectStoreOutage(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	ctx := harness.Context(t, 6*time.Minute)
	pl := harness.StartLake(t, env)
	r := newRig(t, ctx, rigOptions{env: env, partitions: 3, initial: 5000, rate: 500, name: "s3outage", lake: &pl.Lake,
		extra: map[string]string{"checkpoint.max.buffered.bytes": "262144"}})
	store := "object store at " + pl.Lake.S3Endpoint

	before := r.waitCommitted(ctx, r.committed(ctx)+1000)
	pl.S3.Stop(syscall.SIGKILL)
	stopped := time.Now()
	var failures []string
	var waits waitLog
	// A commit whose files and metadata reached the store before the
	// kill may still be answered after it (the host counts it once the
	// sink returns): nothing may commit from then on.
	settled := int64(-1)
	for time.Since(stopped) < 20*time.Second {
		if settled < 0 && time.Since(stopped) >= inFlightCommit {
			settled = r.committed(ctx)
		}
		st, err := r.f.API.Status(ctx, r.opts.name)
		if err != nil {
			t.Fatalf("status during the outage: %v", err)
		}
		if failed := st.Failed(); failed != "" && len(failures) < 3 {
			failures = append(failures, fmt.Sprintf("at %.1f s:\n%s", time.Since(stopped).Seconds(), failed))
		}
		if st.Floe != nil {
			waits.note(*st.Floe, store, stopped)
		}
		time.Sleep(time.Second)
	}
	waits.check(t, store, stopped)
	during := r.committed(ctx)
	if during != settled {
		t.Errorf("%d records were committed while the object store was down (from %d, %s after the kill, to %d)", during-settled, settled, inFlightCommit, during)
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
	cleared := awaitNoWaits(t, ctx, r)
	res := r.check(ctx, harness.DuckDB, true)
	t.Logf("object store down 20 s: committed %d before and %d at the end of the outage; status named %q %.1f s after the kill (%d attempts at the end, last error %q); first commit (%d) %.1f s after it was back, waiting for nothing %.1f s after that; DuckDB read %d rows: lost %d, duplicated %d",
		before, during, store, waits.firstAt.Seconds(), waits.last.Attempts, waits.last.LastError, first, resumed.Seconds(), cleared.Seconds(), res.rows, res.lost, res.duplicated)
	res = r.check(ctx, harness.PyIceberg, true)
	t.Logf("PyIceberg read %d rows (rare %d): lost %d, duplicated %d", res.rows, res.rareRows, res.lost, res.duplicated)
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// inFlightCommit bounds how long after a catalog's or an object store's
// kill a commit answered or written before it may still be counted.
const inFlightCommit = 2 * time.Second

// waitLog follows what the status says a connector waits for during an
// outage of one service.
type waitLog struct {
	first, last *harness.ServiceWait
	// firstAt is when the status first named the service, from the kill.
	firstAt time.Duration
	// others are other services the status named.
	others []string
}

// note records the waits of one status read.
func (l *waitLog) note(p harness.Progress, service string, stopped time.Time) {
	for _, w := range p.Waiting {
		if w.Service != service {
			if !slices.Contains(l.others, w.Service) {
				l.others = append(l.others, w.Service)
			}
			continue
		}
		if l.first == nil {
			l.first, l.firstAt = &w, time.Since(stopped)
		}
		l.last = &w
	}
}

// check fails the test unless the status named service within 10 s of
// the kill, with a start at or after it, failed attempts that grew, and
// an error.
func (l *waitLog) check(t *testing.T, service string, stopped time.Time) {
	t.Helper()
	if l.first == nil {
		t.Errorf("over the outage the status never said it waits for the %s (it named %v)", service, l.others)
		return
	}
	if l.firstAt > 10*time.Second {
		t.Errorf("the status named the %s only %.1f s after the kill, want within 10 s", service, l.firstAt.Seconds())
	}
	// The plugin stamps the wait in its own process, on this machine's
	// clock; a second of slack for the failure that began it.
	if l.first.Since.Before(stopped.Add(-time.Second)) || l.first.Since.After(stopped.Add(20*time.Second)) {
		t.Errorf("the wait for the %s began at %s, the kill was at %s", service, l.first.Since.Format(time.RFC3339Nano), stopped.Format(time.RFC3339Nano))
	}
	if !l.last.Since.Equal(l.first.Since) {
		t.Errorf("the wait for the %s began at %s, later at %s: one outage, one start", service, l.first.Since.Format(time.RFC3339Nano), l.last.Since.Format(time.RFC3339Nano))
	}
	if l.last.Attempts <= l.first.Attempts || l.last.LastError == "" {
		t.Errorf("the wait for the %s went from %d to %d failed attempts, last error %q: want them growing, with the error", service, l.first.Attempts, l.last.Attempts, l.last.LastError)
	}
}

// awaitNoWaits waits up to 10 s for the status to wait for nothing, and
// returns how long that took.
func awaitNoWaits(t *testing.T, ctx context.Context, r *rig) time.Duration {
	t.Helper()
	start := time.Now()
	var waiting []harness.ServiceWait
	for time.Since(start) < 10*time.Second {
		st, err := r.f.API.Status(ctx, r.opts.name)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		if st.Floe != nil && len(st.Floe.Waiting) == 0 {
			return time.Since(start)
		}
		if st.Floe != nil {
			waiting = st.Floe.Waiting
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("10 s after the outage ended and commits went on, the status still waits for %+v", waiting)
	return time.Since(start)
}
