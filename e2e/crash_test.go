package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// Crash tests with a real broker, a real registry, a Postgres catalog and
// real plugin processes: floe (kafka → hash → iceberg, two tasks, a
// commit a second) ingests a topic of six partitions while a feeder keeps
// producing; processes die by SIGKILL at chosen moments; after each
// restart the table must hold every produced record exactly once.
//
// The crash points (sdk.CrashPoint; FLOE_CRASHPOINT=name:N arms one, the
// crash kit's crashPoints says what each proves):
//
//	host.after-flush               host/runtime barrier: Flush(N) returned, before the committer gets N
//	host.before-commit             host/runtime committer: right before the sink's Commit(N)
//	host.after-commit              host/runtime committer: Commit(N) succeeded, before source Commit and offset store
//	iceberg.writing                plugins/iceberg writer: a sub-batch handed to a WriteRecords pipeline
//	iceberg.commit.before-catalog  plugins/iceberg Commit: transaction staged, before the catalog commit
//	iceberg.commit.after-catalog   plugins/iceberg Commit: catalog commit returned, before the answer
//	kafka.after-read               plugins/kafka Read: batches formed and handed on
//	kafka.after-commit             plugins/kafka Commit: group offsets committed
//
// FLOE_CRASH_SEED=<n> replays a run's random choices (hits, delays).

// TestCrashExactlyOnce crashes floe once at every crash point (a random
// hit in each point's range), then kills the host (once restarting it
// after its orphaned plugins exited, once at once while they may still
// run), the sink plugin and the source plugin with kill -9 at random
// moments: twelve cycles. Each
// crash is checked to have happened where meant (the crash file names
// the point and the process, which is gone; a host died by SIGKILL and
// its plugins followed; a plugin's death by signal is in floe's log and
// floe restarted it). After each, the committed frontier must reach the
// topic's end offsets and DuckDB must read each produced record exactly
// once (rows = distinct (partition, offset) = produced; sums of id,
// amount and offsets as produced); the last check reads with PyIceberg.
// Records are routed to two tables (all of them, and a rare few), so that
// every crash also tests recovery from the older of two tables'
// frontiers; the rare table is checked halfway and at the end.
func TestCrashExactlyOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 10*time.Minute)
	crashEveryPoint(t, ctx, rigOptions{env: env, partitions: 6, initial: 20_000, rate: 1000, name: "crash"})
}

// crashEveryPoint runs TestCrashExactlyOnce's cycles on a rig made with o.
func crashEveryPoint(t *testing.T, ctx context.Context, o rigOptions) {
	t.Helper()
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x666c6f65))
	t.Logf("seed %d (FLOE_CRASH_SEED=%d replays it)", seed, seed)

	var cycles []crashCycle
	for i := range crashPoints {
		cycles = append(cycles, pointCycle(rng, &crashPoints[i]))
	}
	for _, p := range []crashProcess{procHost, procHostNow, procSink, procSource} {
		cycles = append(cycles, killCycle(rng, p, 300*time.Millisecond, 3*time.Second))
	}

	start := time.Now()
	r := newRig(t, ctx, o)
	var summary []string
	for i, c := range cycles {
		began := time.Now()
		r.crash(ctx, c)
		engine, last := harness.DuckDB, i == len(cycles)-1
		if last {
			engine = harness.PyIceberg
		}
		// The rare table is read halfway and at the end (a loss or a
		// duplicate stays); every cycle would cost a reader run each.
		res := r.check(ctx, engine, last || i == len(cycles)/2)
		line := fmt.Sprintf("cycle %2d/%d  %-44s rows %7d  lost %d  duplicated %d  %5.1f s (check %.1f s)%s",
			i+1, len(cycles), c, res.rows, res.lost, res.duplicated, time.Since(began).Seconds(), res.took.Seconds(), rareNote(res))
		t.Log(line)
		summary = append(summary, line)
		if t.Failed() {
			break
		}
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
	t.Logf("%d cycles in %s (seed %d):\n%s", len(summary), time.Since(start).Round(time.Second), seed, strings.Join(summary, "\n"))
}

// TestBrokerRestartExactlyOnce stops the Kafka broker during ingestion,
// first with SIGKILL, then with SIGTERM (a controlled shutdown), keeps it
// down for a few seconds while the feeder goes on producing into its
// client-side queue, and starts it again. The broker is a private one
// (harness.StartBroker), so no other test loses its broker. Ingestion
// must resume by itself, without a restart of floe, and the table must
// then hold every produced record exactly once.
func TestBrokerRestartExactlyOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)
	broker := harness.StartBroker(t, env)
	r := newRig(t, ctx, rigOptions{env: broker.Env(env), partitions: 6, initial: 10_000, rate: 1000, name: "broker"})

	for i, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		began := time.Now()
		// In full flow: floe commits and the feeder produces.
		committedBefore := r.waitCommitted(ctx, r.committed(ctx)+2000)
		time.Sleep(time.Duration(rand.Int64N(int64(1500 * time.Millisecond))))
		broker.Stop(sig)
		time.Sleep(4 * time.Second)
		broker.Start()
		engine := harness.DuckDB
		if i == 1 {
			engine = harness.PyIceberg
		}
		res := r.check(ctx, engine, i == 1)
		if r.f.ExitSignal() != 0 || !r.f.Running() {
			t.Fatalf("floe did not survive the broker restart")
		}
		t.Logf("broker restart by %v: committed %d before, %d rows after; lost %d, duplicated %d; %.1f s",
			sig, committedBefore, res.rows, res.lost, res.duplicated, time.Since(began).Seconds())
		if t.Failed() {
			break
		}
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Fatal(err)
	}
	r.f.Stop()
}

// rareNote says what the check found of the rare table, if it read it.
func rareNote(res checkResult) string {
	if res.rareRows < 0 {
		return ""
	}
	return fmt.Sprintf("; rare table %d rows", res.rareRows)
}

// waitCommitted waits until the connector's committed offsets add up to
// at least n, and returns their sum.
func (r *rig) waitCommitted(ctx context.Context, n int64) int64 {
	r.t.Helper()
	var sum int64
	r.f.WaitFor(ctx, fmt.Sprintf("%d records committed", n), func(ctx context.Context) (bool, string, error) {
		offs, err := r.f.API.Offsets(ctx, r.opts.name)
		if err != nil {
			return false, err.Error(), nil
		}
		sum = 0
		for _, o := range offs.Offsets {
			sum += offsetValue(r.t, o)
		}
		return sum >= n, fmt.Sprintf("%d committed", sum), nil
	})
	return sum
}

// committed is the sum of the connector's committed offsets (GET
// offsets).
func (r *rig) committed(ctx context.Context) int64 {
	r.t.Helper()
	offs, err := r.f.API.Offsets(ctx, r.opts.name)
	if err != nil {
		r.t.Fatalf("offsets of %s: %v", r.opts.name, err)
	}
	sum := int64(0)
	for _, o := range offs.Offsets {
		sum += offsetValue(r.t, o)
	}
	return sum
}
