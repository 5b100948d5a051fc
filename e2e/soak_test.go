package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestCrashSoak is the long crash soak (e2e/soak/run, make soak); it runs
// only when FLOE_SOAK_CYCLES is set. Each cycle picks a crash at random,
// one of the crash points with a random hit (see crash_test.go) or a
// kill -9 of the host (restarted once its plugins exited, or at once),
// the sink plugin or the source plugin after a random delay, while the feeder keeps producing; after the restart it checks
// that the table holds every produced record exactly once (DuckDB; every
// tenth cycle and the last with PyIceberg; the second, rare table every
// fifth cycle and at the end). It prints a line per cycle and
// a summary, and fails on the first loss, duplicate or hang.
//
// Knobs: FLOE_SOAK_CYCLES (cycles), FLOE_SOAK_RATE (records a second,
// default 500), FLOE_SOAK_MAINTENANCE=0 (no iceberg-maintenance plugin
// compacting beside ingestion; it runs by default), FLOE_CRASH_SEED
// (replay a run's choices).
func TestCrashSoak(t *testing.T) {
	raw := os.Getenv("FLOE_SOAK_CYCLES")
	if raw == "" {
		t.Skip("the crash soak runs with FLOE_SOAK_CYCLES=<cycles> (e2e/soak/run, make soak)")
	}
	cycles, err := strconv.Atoi(raw)
	if err != nil || cycles < 1 {
		t.Fatalf("FLOE_SOAK_CYCLES=%q: want a number of cycles >= 1", raw)
	}
	rate := 500
	if v := os.Getenv("FLOE_SOAK_RATE"); v != "" {
		if rate, err = strconv.Atoi(v); err != nil || rate < 1 {
			t.Fatalf("FLOE_SOAK_RATE=%q: want records a second >= 1", v)
		}
	}
	maintenance := os.Getenv("FLOE_SOAK_MAINTENANCE") != "0"
	needs := []harness.Need{harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers}
	if maintenance {
		needs = append(needs, harness.Plugin("iceberg-maintenance"))
	}
	env := harness.Require(t, needs...)
	ctx := harness.Context(t, time.Duration(cycles)*2*time.Minute+10*time.Minute)
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x736f616b))
	t.Logf("soak: %d cycles, %d records/s, maintenance %v, seed %d (FLOE_CRASH_SEED=%d replays it)", cycles, rate, maintenance, seed, seed)

	start := time.Now()
	r := newRig(t, ctx, rigOptions{env: env, partitions: 6, initial: 10_000, rate: rate, name: "soak", maintenance: maintenance})
	type kindTally struct{ cycles, lost, duplicated int64 }
	kinds := map[string]*kindTally{}
	var total kindTally
	var last checkResult
	done := 0
	// The summary also comes when a check stops the test (t.Fatal).
	defer func() {
		var b strings.Builder
		fmt.Fprintf(&b, "soak summary: %d of %d cycles in %s, seed %d, %d rows at the end; lost %d, duplicated %d\n",
			done, cycles, time.Since(start).Round(time.Second), seed, last.rows, total.lost, total.duplicated)
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			k := kinds[n]
			fmt.Fprintf(&b, "  %-30s cycles %3d  lost %d  duplicated %d\n", n, k.cycles, k.lost, k.duplicated)
		}
		t.Log(b.String())
	}()
	for i := 1; i <= cycles; i++ {
		var c crashCycle
		kills := []crashProcess{procHost, procHostNow, procSink, procSource}
		if k := rng.IntN(len(crashPoints) + len(kills)); k < len(crashPoints) {
			c = pointCycle(rng, &crashPoints[k])
		} else {
			c = killCycle(rng, kills[k-len(crashPoints)], 100*time.Millisecond, 4*time.Second)
		}
		began := time.Now()
		r.crash(ctx, c)
		engine := harness.DuckDB
		if i%10 == 0 || i == cycles {
			engine = harness.PyIceberg
		}
		last = r.check(ctx, engine, i%5 == 0 || i == cycles)
		done = i
		k := kinds[c.kind()]
		if k == nil {
			k = &kindTally{}
			kinds[c.kind()] = k
		}
		k.cycles++
		k.lost += last.lost
		k.duplicated += last.duplicated
		total.cycles++
		total.lost += last.lost
		total.duplicated += last.duplicated
		t.Logf("soak cycle %3d/%d  %-30s %-48s rows %8d  lost %d  duplicated %d  %5.1f s  (%s%s)",
			i, cycles, c.kind(), c, last.rows, last.lost, last.duplicated, time.Since(began).Seconds(), engine, rareNote(last))
		if t.Failed() {
			break
		}
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Error(err)
	}
	if r.f.Running() {
		r.f.Stop()
	}

	if done < cycles && !t.Failed() {
		t.Errorf("soak: only %d of %d cycles ran", done, cycles)
	}
}
