package e2e

import (
	"context"
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
// only when FLOE_SOAK_CYCLES is set. Each cycle picks at random a crash,
// one of the crash points with a random hit (see crash_test.go) or a
// kill -9 of the host (restarted once its plugins exited, or at once),
// the sink plugin or the source plugin after a random delay, or (one
// cycle in five) an outage of a service floe depends on (see
// [outageCycle]), while the feeder keeps producing; afterwards it checks
// that the table holds every produced record exactly once (DuckDB; every
// tenth cycle and the last with PyIceberg; the second, rare table every
// fifth cycle and at the end). It prints a line per cycle and a summary,
// and fails on the first loss, duplicate or hang.
//
// floe reaches the Postgres catalog, the Schema Registry and (with
// FLOE_SOAK_LAKE=s3) the object store through TCP proxies of the test,
// which the outages cut; the readers reach them directly.
//
// Knobs: FLOE_SOAK_CYCLES (cycles), FLOE_SOAK_RATE (records a second,
// default 500), FLOE_SOAK_MAINTENANCE=0 (no iceberg-maintenance plugin
// compacting beside ingestion; it runs by default), FLOE_SOAK_LAKE=s3
// (the warehouse in the S3 object store of the lake services, with the
// Postgres catalog; adds object-store-outage), FLOE_SOAK_KINDS (a comma
// list of cycle kinds to draw from, evenly: crash point names, kill-host,
// kill-host-now, kill-sink, kill-source, catalog-outage, registry-outage,
// object-store-outage), FLOE_CRASH_SEED (replay a run's choices).
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
	var s3 bool
	switch v := os.Getenv("FLOE_SOAK_LAKE"); v {
	case "", "local":
	case "s3":
		s3 = true
	default:
		t.Fatalf("FLOE_SOAK_LAKE=%q: want s3 (the lake's object store) or local (a local folder, the default)", v)
	}
	crashKinds, outageKinds := soakKinds(s3)
	var only []string
	if v := os.Getenv("FLOE_SOAK_KINDS"); v != "" {
		for _, k := range strings.Split(v, ",") {
			k = strings.TrimSpace(k)
			if !slices.Contains(crashKinds, k) && !slices.Contains(outageKinds, k) {
				hint := ""
				if k == string(outObjectStore)+"-outage" {
					hint = " (object-store-outage needs FLOE_SOAK_LAKE=s3)"
				}
				t.Fatalf("FLOE_SOAK_KINDS: no cycle kind %q%s; the kinds: %s", k, hint, strings.Join(append(crashKinds, outageKinds...), ", "))
			}
			only = append(only, k)
		}
	}
	needs := []harness.Need{harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers}
	if maintenance {
		needs = append(needs, harness.Plugin("iceberg-maintenance"))
	}
	if s3 {
		needs = append(needs, harness.LakeServices)
	}
	env := harness.Require(t, needs...)
	ctx := harness.Context(t, time.Duration(cycles)*2*time.Minute+10*time.Minute)
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x736f616b))
	warehouse := "local"
	if s3 {
		warehouse = "s3"
	}
	t.Logf("soak: %d cycles, %d records/s, maintenance %v, warehouse %s, kinds %s, seed %d (FLOE_CRASH_SEED=%d replays it)",
		cycles, rate, maintenance, warehouse, kindsNote(only), seed, seed)

	start := time.Now()
	proxies := map[outageService]*harness.TCPProxy{}
	extra := map[string]string{}
	proxies[outCatalog], extra["iceberg.catalog.uri"] = proxied(t, env.PostgresURL)
	proxies[outRegistry], extra["schema.registry.url"] = proxied(t, env.SchemaRegistryURL)
	o := rigOptions{env: env, partitions: 6, initial: 10_000, rate: rate, name: "soak", maintenance: maintenance, extra: extra}
	if s3 {
		lake := env.Lake
		o.lake, o.postgresS3 = &lake, true
		proxies[outObjectStore], extra["iceberg.catalog.s3.endpoint"] = proxied(t, lake.S3Endpoint)
	}
	r := newRig(t, ctx, o)
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
		c := pickCycle(rng, only, crashKinds, outageKinds)
		began := time.Now()
		note := ""
		switch c := c.(type) {
		case crashCycle:
			r.crash(ctx, c)
		case outageCycle:
			note = "; " + r.outage(ctx, proxies[c.service], c)
		}
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
		t.Logf("soak cycle %3d/%d  %-30s %-48s rows %8d  lost %d  duplicated %d  %5.1f s  (%s%s%s)",
			i, cycles, c.kind(), c, last.rows, last.lost, last.duplicated, time.Since(began).Seconds(), engine, rareNote(last), note)
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

// soakCycle is one cycle of the soak: a crashCycle or an outageCycle.
type soakCycle interface {
	// kind names the cycle's kind for the summary and FLOE_SOAK_KINDS.
	kind() string
	String() string
}

// outageService is a service an outage cycle takes away from floe.
type outageService string

const (
	outCatalog     outageService = "catalog"      // the Postgres SQL catalog
	outRegistry    outageService = "registry"     // the Schema Registry
	outObjectStore outageService = "object-store" // the S3 store of the warehouse
)

// outageCycle cuts floe off from a service (its proxy refuses
// connections and drops the open ones) for a while, during ingestion;
// floe must heal by itself once the service is back: nothing left FAILED
// (the worker's restart policy restarts what failed), every record once.
type outageCycle struct {
	service outageService
	// delay of ingestion before the cut, then the outage's length.
	delay, length time.Duration
	// killSource, for the registry: the source plugin is killed this long
	// into the outage, so that a fresh process, its schema cache empty,
	// meets the outage (the old one has the soak's only schema cached).
	killSource time.Duration
}

func (c outageCycle) kind() string { return string(c.service) + "-outage" }

func (c outageCycle) String() string {
	s := fmt.Sprintf("%s cut for %s after %s", c.service, c.length.Round(time.Second), c.delay.Round(time.Millisecond))
	if c.killSource > 0 {
		s += fmt.Sprintf(", kill -9 source at +%s", c.killSource.Round(100*time.Millisecond))
	}
	return s
}

// soakKinds lists the cycle kinds: crashes (the crash points, then the
// kills) and outages (the object store's only with the warehouse on it).
func soakKinds(s3 bool) (crashes, outages []string) {
	for _, p := range crashPoints {
		crashes = append(crashes, p.name)
	}
	for _, p := range soakKills {
		crashes = append(crashes, crashCycle{proc: p}.kind())
	}
	outages = []string{outageCycle{service: outCatalog}.kind(), outageCycle{service: outRegistry}.kind()}
	if s3 {
		outages = append(outages, outageCycle{service: outObjectStore}.kind())
	}
	return crashes, outages
}

// soakKills are the processes the kill cycles kill.
var soakKills = []crashProcess{procHost, procHostNow, procSink, procSource}

// outageEvery: one cycle in outageEvery is an outage, unless
// FLOE_SOAK_KINDS chooses; crashes stay the soak's staple.
const outageEvery = 5

// pickCycle draws the next cycle: evenly from only when set, else an
// outage one cycle in outageEvery and a crash otherwise, evenly within
// each group.
func pickCycle(rng *rand.Rand, only, crashes, outages []string) soakCycle {
	var kind string
	switch {
	case len(only) > 0:
		kind = only[rng.IntN(len(only))]
	case rng.IntN(outageEvery) == 0:
		kind = outages[rng.IntN(len(outages))]
	default:
		kind = crashes[rng.IntN(len(crashes))]
	}
	for i := range crashPoints {
		if crashPoints[i].name == kind {
			return pointCycle(rng, &crashPoints[i])
		}
	}
	for _, p := range soakKills {
		if (crashCycle{proc: p}).kind() == kind {
			return killCycle(rng, p, 100*time.Millisecond, 4*time.Second)
		}
	}
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	c := outageCycle{service: outageService(strings.TrimSuffix(kind, "-outage")), delay: between(100*time.Millisecond, 4*time.Second)}
	switch c.service {
	case outRegistry:
		c.length = between(10*time.Second, 40*time.Second)
		// Early enough that the new source rejoins, reads and asks for
		// the schema while the registry is still away.
		c.killSource = between(time.Second, c.length/3)
	default:
		c.length = between(10*time.Second, 60*time.Second)
	}
	return c
}

// kindsNote describes FLOE_SOAK_KINDS's choice for the first log line.
func kindsNote(only []string) string {
	if len(only) == 0 {
		return fmt.Sprintf("all (an outage one cycle in %d)", outageEvery)
	}
	return strings.Join(only, ",")
}

// outage runs c through proxy: after c.delay of ingestion it cuts the
// service for c.length while the feeder goes on producing (for the
// registry, killing the source plugin inside the outage), restores it,
// and waits for the first commit after it and for nothing to be FAILED
// (the restart policy heals a task an outage failed; a check would fail
// on it). It returns a note for the cycle's line: what failed meanwhile,
// the restarts, how soon floe committed again.
func (r *rig) outage(ctx context.Context, proxy *harness.TCPProxy, c outageCycle) string {
	r.t.Helper()
	f := r.f
	time.Sleep(c.delay)
	st0, err := f.API.Status(ctx, r.opts.name)
	if err != nil {
		r.t.Fatalf("status of %s: %v", r.opts.name, err)
	}
	before := r.committed(ctx)
	proxy.Down()
	cut := time.Now()
	failed := ""
	killedAt := -1 // the log's length at the source's kill
	for time.Since(cut) < c.length {
		if c.killSource > 0 && killedAt < 0 && time.Since(cut) >= c.killSource {
			restarts := r.pluginRestarts(ctx)
			killedAt = len(f.Log())
			pid := f.KillPlugin(procSource.binary())[0].PID
			r.waitPluginRestarted(ctx, procSource, pid, restarts, killedAt, true)
		}
		st, err := f.API.Status(ctx, r.opts.name)
		if err != nil {
			r.t.Fatalf("status of %s during the %s outage: %v", r.opts.name, c.service, err)
		}
		if failed == "" {
			failed = st.Failed()
		}
		time.Sleep(500 * time.Millisecond)
	}
	during := r.committed(ctx)
	proxy.Up()
	back := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	r.waitCommitted(wctx, r.committed(ctx)+1)
	resumed := time.Since(back)
	st := f.WaitStatus(wctx, r.opts.name, "nothing FAILED after the "+string(c.service)+" outage", true, func(s harness.ConnectorStatus) bool {
		return s.Failed() == "" && s.Running()
	})
	healed := time.Since(back)
	note := fmt.Sprintf("committed +%d in the outage, first commit %.1f s after it, all RUNNING at %.1f s, restarts %d",
		during-before, resumed.Seconds(), healed.Seconds(), restartsOf(st)-restartsOf(st0))
	if failed != "" {
		first, _, _ := strings.Cut(failed, "\n")
		if len(first) > 200 {
			first = first[:200] + "…"
		}
		note += "; FAILED in the outage: " + first
	}
	if killedAt >= 0 {
		// Whether the fresh source met the outage: its retries (the
		// plugin's log is in floe's).
		note += fmt.Sprintf("; the new source logged %d registry retries",
			strings.Count(f.Log()[killedAt:], "schema registry failing; retrying"))
	}
	return note
}
