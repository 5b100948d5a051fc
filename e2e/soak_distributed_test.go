package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// distCycles are the distributed soak's cycle kinds.
var distCycles = []string{"kill-owner", "kill-other", "freeze", "rolling-restart", "kill-leader-config", "kill-broker"}

// TestDistributedSoak is the distributed soak (e2e/soak/run --distributed,
// make soak-distributed); it runs only when FLOE_SOAK_DISTRIBUTED_CYCLES
// is set. A kafka → iceberg connector (the crash soak's rig) runs on a
// cluster of three `floe distributed` workers on a private Kafka cluster
// of clusterBrokers nodes (3 by default) while the feeder produces; each
// cycle draws one of distCycles: kill -9 of the worker that runs the
// connector, kill -9 of another worker (each restarted once the cluster
// noticed), SIGSTOP of a worker (and its plugins) for the session
// timeout plus 4 s then SIGCONT, a rolling restart (SIGTERM, start) of
// the three, or kill -9 of the leader while it writes a config change
// (commit.interval.ms flips between 1000 and 1500 ms; the change is sent
// again through a survivor), or kill -9 of a Kafka node, down for the
// session timeout plus 4 s, then started again (only on a cluster). After every cycle the connector must be
// RUNNING on one worker, nothing FAILED, and the table must hold every
// record produced so far exactly once (the crash soak's check, DuckDB;
// PyIceberg every tenth cycle and the last). It prints a line per cycle
// and a summary and fails on the first loss, duplicate or hang.
//
// Knobs: FLOE_SOAK_DISTRIBUTED_CYCLES, FLOE_SOAK_RATE (records a second,
// default 300), FLOE_SOAK_KINDS (a comma list of distCycles),
// FLOE_CRASH_SEED (replay a run's choices).
func TestDistributedSoak(t *testing.T) {
	raw := os.Getenv("FLOE_SOAK_DISTRIBUTED_CYCLES")
	if raw == "" {
		t.Skip("the distributed soak runs with FLOE_SOAK_DISTRIBUTED_CYCLES=<cycles> (e2e/soak/run --distributed, make soak-distributed)")
	}
	cycles, err := strconv.Atoi(raw)
	if err != nil || cycles < 1 {
		t.Fatalf("FLOE_SOAK_DISTRIBUTED_CYCLES=%q: want a number of cycles >= 1", raw)
	}
	rate := 300
	if v := os.Getenv("FLOE_SOAK_RATE"); v != "" {
		if rate, err = strconv.Atoi(v); err != nil || rate < 1 {
			t.Fatalf("FLOE_SOAK_RATE=%q: want records a second >= 1", v)
		}
	}
	kinds := distCycles
	if v := os.Getenv("FLOE_SOAK_KINDS"); v != "" {
		kinds = nil
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); !slices.Contains(distCycles, k) {
				t.Fatalf("FLOE_SOAK_KINDS: no distributed cycle kind %q; the kinds: %s", k, strings.Join(distCycles, ", "))
			}
			kinds = append(kinds, k)
		}
	}
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	ctx := harness.Context(t, time.Duration(cycles)*3*time.Minute+10*time.Minute)
	var brokers *harness.Brokers
	if n := clusterBrokers(t); n > 1 {
		brokers = harness.StartBrokers(t, env, n)
		env = brokers.Env(env)
	} else {
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "kill-broker" })
	}
	if len(kinds) == 0 {
		t.Fatalf("FLOE_SOAK_KINDS: kill-broker needs a Kafka cluster (FLOE_E2E_CLUSTER_BROKERS > 1)")
	}
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x64736f616b))
	t.Logf("distributed soak: %d cycles over 3 workers, %d records/s, kinds %s, seed %d (FLOE_CRASH_SEED=%d replays it)",
		cycles, rate, strings.Join(kinds, ","), seed, seed)

	start := time.Now()
	r := newRig(t, ctx, rigOptions{env: env, partitions: 6, initial: 5_000, rate: rate, name: "dsoak", workers: 3})
	d := &distSoak{t: t, ctx: ctx, r: r, rng: rng, session: 6 * time.Second, brokers: brokers}
	// A stall (RUNNING, nothing committed) has been seen and not yet
	// explained: on a failure, every worker's stacks go to its log.
	t.Cleanup(func() {
		if t.Failed() {
			for _, w := range r.workers {
				w.DumpStacks()
			}
		}
	})
	byKind := map[string][3]int64{} // cycles, lost, duplicated
	var total [3]int64
	var last checkResult
	done := 0
	defer func() {
		var b strings.Builder
		fmt.Fprintf(&b, "soak summary: %d of %d cycles in %s, seed %d, %d rows at the end; lost %d, duplicated %d\n",
			done, cycles, time.Since(start).Round(time.Second), seed, last.rows, total[1], total[2])
		for _, k := range slices.Sorted(maps.Keys(byKind)) {
			c := byKind[k]
			fmt.Fprintf(&b, "  %-30s cycles %3d  lost %d  duplicated %d\n", k, c[0], c[1], c[2])
		}
		t.Log(b.String())
	}()
	for i := 1; i <= cycles; i++ {
		kind := kinds[rng.IntN(len(kinds))]
		began := time.Now()
		note := d.cycle(kind)
		engine := harness.DuckDB
		if i%10 == 0 || i == cycles {
			engine = harness.PyIceberg
		}
		last = r.check(ctx, engine, i == cycles)
		done = i
		c := byKind[kind]
		c[0], c[1], c[2] = c[0]+1, c[1]+last.lost, c[2]+last.duplicated
		byKind[kind] = c
		total[1] += last.lost
		total[2] += last.duplicated
		t.Logf("soak cycle %3d/%d  %-20s %-60s rows %8d  lost %d  duplicated %d  %5.1f s  (%s)",
			i, cycles, kind, note, last.rows, last.lost, last.duplicated, time.Since(began).Seconds(), engine)
		if t.Failed() {
			break
		}
	}
	if _, err := r.feed.pause(ctx); err != nil {
		t.Error(err)
	}
	for _, w := range r.workers {
		if w.Running() {
			w.Stop()
		}
	}
	if done < cycles && !t.Failed() {
		t.Errorf("soak: only %d of %d cycles ran", done, cycles)
	}
}

// distSoak runs the distributed soak's cycles on a rig's workers.
type distSoak struct {
	t       *testing.T
	ctx     context.Context
	r       *rig
	rng     *rand.Rand
	session time.Duration
	flip    bool // the next config change's commit.interval.ms: 1500 when set
	// brokers is the private Kafka cluster the rig runs on; nil on the
	// shared services' broker.
	brokers *harness.Brokers
}

// cycle runs one cycle of kind and returns a note for its line. It ends
// with the three workers running, the connector RUNNING on one of them
// and the rig reading through a running worker.
func (d *distSoak) cycle(kind string) string {
	d.t.Helper()
	ws := d.r.workers
	time.Sleep(time.Duration(d.rng.Int64N(int64(3 * time.Second))))
	owner := d.owner(-1)
	var note string
	switch kind {
	case "kill-owner":
		at := time.Now()
		ws[owner].Kill()
		to := d.owner(owner)
		note = fmt.Sprintf("killed %s; moved to %s in %.1f s", harness.WorkerID(owner), harness.WorkerID(to), time.Since(at).Seconds())
		ws[owner].Restart()
	case "kill-other":
		other := d.pick(owner)
		ws[other].Kill()
		// The cluster notices after the session timeout; the connector
		// must stay RUNNING meanwhile.
		time.Sleep(d.session + time.Second)
		to := d.owner(other)
		note = fmt.Sprintf("killed %s; the connector on %s, then %s", harness.WorkerID(other), harness.WorkerID(owner), harness.WorkerID(to))
		ws[other].Restart()
	case "freeze":
		frozen := d.pick(-1)
		w := ws[frozen]
		procs := append(w.Plugins(), harness.Proc{PID: w.PID(), Name: "floe"})
		for _, p := range procs {
			_ = syscall.Kill(p.PID, syscall.SIGSTOP)
		}
		time.Sleep(d.session + 4*time.Second)
		for _, p := range procs {
			_ = syscall.Kill(p.PID, syscall.SIGCONT)
		}
		to := d.owner(-1)
		note = fmt.Sprintf("froze %s (%d processes) for %s; the connector was on %s, now %s", harness.WorkerID(frozen), len(procs),
			d.session+4*time.Second, harness.WorkerID(owner), harness.WorkerID(to))
	case "rolling-restart":
		var path []string
		for i, w := range ws {
			d.r.f = ws[(i+1)%len(ws)]
			w.Restart()
			path = append(path, harness.WorkerID(d.owner(-1)))
		}
		note = "restarted a, b, c; the connector on " + strings.Join(path, ", ")
	case "kill-leader-config":
		leader := d.leader()
		interval := "1000"
		if d.flip = !d.flip; d.flip {
			interval = "1500"
		}
		cfg := make(map[string]string, len(d.r.conn.Config))
		for k, v := range d.r.conn.Config {
			cfg[k] = v
		}
		cfg["commit.interval.ms"] = interval
		go func() { _, _, _ = ws[leader].API.PutConfig(d.ctx, d.r.conn.Name, cfg) }()
		time.Sleep(time.Duration(d.rng.Int64N(int64(50 * time.Millisecond))))
		ws[leader].Kill()
		via := ws[d.pick(leader)]
		via.WaitFor(d.ctx, "the config change applied through a survivor", func(ctx context.Context) (bool, string, error) {
			_, _, err := via.API.PutConfig(ctx, d.r.conn.Name, cfg)
			var ae *harness.APIError
			if err != nil && errors.As(err, &ae) && ae.Status == 409 {
				return false, err.Error(), nil
			}
			return err == nil, "", err
		})
		d.r.conn.Config = cfg
		ws[leader].Restart()
		got, err := via.API.Config(d.ctx, d.r.conn.Name)
		if err != nil || got["commit.interval.ms"] != interval {
			d.t.Errorf("after the leader's kill: %s's config has commit.interval.ms %q (err %v), want %s", d.r.conn.Name, got["commit.interval.ms"], err, interval)
		}
		note = fmt.Sprintf("killed the leader %s writing commit.interval.ms=%s; applied", harness.WorkerID(leader), interval)
	case "kill-broker":
		node := d.rng.IntN(d.brokers.Nodes())
		down := d.session + 4*time.Second
		d.brokers.Stop(node, syscall.SIGKILL)
		time.Sleep(down)
		d.brokers.Start(node)
		note = fmt.Sprintf("killed kafka node %d for %s; the connector was on %s", node+1, down, harness.WorkerID(owner))
	default:
		d.t.Fatalf("no distributed cycle kind %q", kind)
	}
	d.owner(-1)
	return note
}

// pick is a random running worker other than not (-1: any).
func (d *distSoak) pick(not int) int {
	var ids []int
	for i, w := range d.r.workers {
		if i != not && w.Running() {
			ids = append(ids, i)
		}
	}
	if len(ids) == 0 {
		d.t.Fatalf("no running worker other than %d", not)
	}
	return ids[d.rng.IntN(len(ids))]
}

// owner waits until the connector is RUNNING with its committer and
// every task on running workers other than not (-1: any), read through
// another running worker; the rig then reads through the committer's
// worker, the owner. It returns the owner's index.
func (d *distSoak) owner(not int) int {
	d.t.Helper()
	via := d.pick(not)
	d.r.f = d.r.workers[via]
	var id int
	d.r.f.WaitStatus(d.ctx, d.r.conn.Name, "RUNNING on one running worker", false, func(s harness.ConnectorStatus) bool {
		id = -1
		for i := range d.r.workers {
			if harness.WorkerID(i) == s.Connector.WorkerID {
				id = i
			}
		}
		if !s.Running() || id < 0 || id == not || !d.r.workers[id].Running() {
			return false
		}
		for _, task := range s.Tasks {
			t := -1
			for i := range d.r.workers {
				if harness.WorkerID(i) == task.WorkerID {
					t = i
				}
			}
			if t < 0 || t == not || !d.r.workers[t].Running() {
				return false
			}
		}
		return len(s.Tasks) > 0
	})
	// Checks read through the owner: another worker answers GET
	// …/offsets by starting a sink plugin per call.
	d.r.f = d.r.workers[id]
	return id
}

var leaderEpoch = regexp.MustCompile(`leading the cluster.*leader_epoch[=":]+\s*(\d+)`)

// leader is the running worker that claimed the cluster last: the highest
// leader_epoch of a "leading the cluster" line in the workers' logs.
func (d *distSoak) leader() int {
	d.t.Helper()
	best, bestEpoch := -1, int64(-1)
	for i, w := range d.r.workers {
		if !w.Running() {
			continue
		}
		for _, m := range leaderEpoch.FindAllStringSubmatch(w.Log(), -1) {
			if e, err := strconv.ParseInt(m[1], 10, 64); err == nil && e > bestEpoch {
				best, bestEpoch = i, e
			}
		}
	}
	if best < 0 {
		d.t.Fatalf("no running worker logged \"leading the cluster\"")
	}
	return best
}
