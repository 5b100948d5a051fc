package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// Distributed is the distributed section (issue 12): three `floe
// distributed` workers share a cluster; a kafka → iceberg connector
// ingests a paced topic. It measures the failover of a kill -9 of the
// worker that runs the connector (until the table's next commit), the
// longest commit gap of the connectors that stay put while a worker
// joins or leaves, and the cost of three workers against one: CPU per
// million records and the internal topics' bytes per minute.
func Distributed(t *T, o Options, rep *Report) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.SchemaRegistry, harness.Postgres,
		harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	rep.Heading(2, "8. distributed (issue 12)")
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()

	keys := harness.ClusterKeys(env)
	session, _ := strconv.Atoi(keys["session.timeout.ms"])
	d := &distRun{t: t, o: o, ctx: ctx, env: env, keys: keys, session: time.Duration(session) * time.Millisecond,
		workers: map[string]*harness.Floe{}, watches: map[string]*frontierWatch{}}
	for i := range 3 {
		id, w := harness.StartWorker(t, env, keys, i)
		d.workers[id] = w
	}
	d.topic = harness.UniqueName("bench_dist")
	schemaID, g := benchTopic(t, env, o, d.topic, nil)
	d.parts = o.KafkaPartitions
	d.warehouse = "file://" + filepath.Join(t.TempDir(), "warehouse")
	d.namespace = harness.UniqueName("bench_dist")
	first := d.connector(0)
	harness.CreateWhenLed(t, ctx, d.workers["worker-a"], first)

	pc := &pacer{Gen: g, SchemaID: schemaID, Partitions: int64(d.parts), Rate: o.DistRate}
	pctx, pcancel := context.WithCancel(ctx)
	produced := make(chan error, 1)
	go func() {
		_, err := pc.produce(pctx, env.KafkaBootstrap, d.topic)
		produced <- err
	}()
	t.Cleanup(func() {
		pc.stop()
		pcancel()
		if err := <-produced; err != nil {
			t.Logf("the producer: %v", err)
		}
	})
	// A watch of the connector's committed frontier through every
	// worker: a kill's measurement reads it through a survivor.
	for id, w := range d.workers {
		d.watches[id] = watchFrontier(ctx, w.API, first.Name, d.topic, d.parts, 100*time.Millisecond)
		t.Cleanup(d.watches[id].Stop)
	}

	rep.Para("Three `floe distributed` workers (`harness.StartWorker`: their own group.id and internal topics on the shared single broker, replication 1, "+
		"`session.timeout.ms=%d`, `heartbeat.interval.ms=%s`), each a real process with its plugin processes. "+
		"Connector: `kafka` → `hash` → `iceberg`, `tasks.max=2`, `commit.interval.ms=%d`, a Postgres SQL catalog, the source's consumer group at 6 s sessions "+
		"(keys %s), reading a %d-partition topic fed at %s records/s by one paced producer (`pace.go`) for the whole section. "+
		"The committed frontier (`GET /connectors/{c}/offsets`) is polled every 100 ms through every worker.",
		session, keys["heartbeat.interval.ms"], o.DistCommit.Milliseconds(), joinKeys(recoveryKeysShown(first.Config)), d.parts, Num(o.DistRate))

	var failure error
	owner, err := d.owner(first.Name, "")
	if err == nil {
		_, err = d.watches[d.survivor(owner)].Wait(time.Now(), 2*time.Minute, func(x frontierSample) bool { return x.Sum >= int64(o.DistRate) })
	}
	if err != nil {
		failure = fmt.Errorf("warm-up: %w", err)
	}
	var costs []distCost
	if failure == nil {
		c, err := d.cost(first.Name, "3 workers")
		costs = append(costs, c)
		failure = err
	}
	var moved, firsts []float64
	for i := 0; i < o.DistKills && failure == nil; i++ {
		s, err := d.failover(first.Name)
		if err != nil {
			failure = fmt.Errorf("kill %d: %w", i+1, err)
			break
		}
		moved, firsts = append(moved, s.Moved.Seconds()), append(firsts, s.First.Seconds())
		t.Logf("kill %d of %s: moved to %s in %s, first commit %s", i+1, s.Killed, s.To, s.Moved.Round(time.Millisecond), s.First.Round(time.Millisecond))
	}
	failLoad, costLoad := LoadAvg(), ""
	if failure == nil {
		// One worker: the two others leave (SIGTERM), the connector
		// ends up on worker-a.
		for _, id := range []string{"worker-b", "worker-c"} {
			d.workers[id].Stop()
		}
		if _, err := d.ownerIs(first.Name, "worker-a"); err != nil {
			failure = fmt.Errorf("one worker: %w", err)
		} else {
			c, err := d.cost(first.Name, "1 worker")
			costs = append(costs, c)
			failure = err
		}
		costLoad = LoadAvg()
		for _, id := range []string{"worker-b", "worker-c"} {
			d.workers[id].Restart()
		}
	}
	var events []distEvent
	var quiet distEvent
	if failure == nil {
		events, quiet, failure = d.rebalances(first)
	}

	limit := d.session + 2*o.DistCommit
	rep.Para("**Failover**: %d times, the worker that runs the connector is killed with SIGKILL (its plugins exit by themselves), %s after the connector committed on its worker plus a random part of a commit interval; "+
		"*moved* is when a survivor's `GET …/status` shows it RUNNING on another worker, *next commit* the first growth of the frontier (read through a survivor) after the kill "+
		"(polls go through the owner until the kill, then through one survivor, which reads the table; the next commit is the first growth past the survivor's first answer from 500 ms after the kill, too soon for any other worker to commit). The killed worker is restarted before the next kill. "+
		"Target: p99 ≤ session timeout + 2 commit intervals = %s.", len(firsts), o.RecoverySteady, limit)
	rep.Table([]string{"what", "n", "p50 s", "p99 s", "max s", "target", "verdict"}, [][]string{
		limitRow("kill -9 of the connector's worker → moved", moved, "", 0, 0),
		limitRow("kill -9 of the connector's worker → next commit", firsts, "p99 ≤ "+F(limit.Seconds(), 0)+" s", 0.99, limit.Seconds()),
	})
	rep.Para("Load average at the end of the kills: %s (2 cores shared with other sessions).", failLoad)

	if len(costs) > 0 {
		rows := [][]string{}
		for _, c := range costs {
			perM := "–"
			if c.Records > 0 {
				perM = F(c.CPU.Seconds()/(float64(c.Records)/1e6), 1)
			}
			rows = append(rows, []string{c.What, F(c.Window.Seconds(), 0), Num(float64(c.Records)), F(c.CPU.Seconds(), 1), F(c.OwnerCPU.Seconds(), 1),
				F((c.CPU - c.OwnerCPU).Seconds(), 1), perM, Num(c.perMinute("configs")), Num(c.perMinute("status")), Num(c.perMinute("offsets")),
				Num(c.perMinute("control")), c.perCommit(), "none (printed)", "–"})
		}
		rep.Para("**Cost**: over a steady window, polled only through the connector's worker (a poll through another worker is forwarded to it and would add that worker's REST work), the CPU time (`/proc/<pid>/stat`, user + system) of every worker process and its plugin processes, and the records the connector committed in it; " +
			"then the key and value bytes written to the cluster's internal topics in the window (read back from the topics, transaction markers not counted), per minute. " +
			"First with the three workers (before the kills), then with one (the two others stopped with SIGTERM, the connector on worker-a).")
		rep.Table([]string{"workers", "window s", "records", "CPU s, all", "CPU s, committer's worker", "CPU s, other workers", "CPU s / M records",
			"configs B/min", "status B/min", "offsets B/min", "control B/min", "control B/commit", "target", "verdict"}, rows)
		rep.Para("Load average after the one-worker window: %s.", costLoad)
	}

	if len(events) > 0 {
		rows := [][]string{}
		var gaps []float64
		for _, e := range events {
			gaps = append(gaps, e.Gap.Seconds())
			rows = append(rows, []string{e.What, strings.Join(e.Moved, ", "), strconv.Itoa(e.Stayed), F(e.Gap.Seconds(), 2), e.GapOf, F(e.Window.Seconds(), 1),
				"≤ " + F((3*o.DistCommit).Seconds(), 0) + " s", verdictLE(e.Gap.Seconds(), (3 * o.DistCommit).Seconds())})
		}
		rows = append(rows, []string{quiet.What, "–", strconv.Itoa(quiet.Stayed), F(quiet.Gap.Seconds(), 2), quiet.GapOf, F(quiet.Window.Seconds(), 1), "–", "–"})
		rep.Para("**Cooperative rebalance**: %d kafka → iceberg connectors (each its own consumer group on the same topic, the same keys) on the three workers; "+
			"a fourth worker joins, then leaves with SIGTERM, %d times each. For each event, the longest gap between commits (growths of the frontier, polled every 100 ms) "+
			"of each connector that did not move, from the event until the moved connector committed on its new worker plus 5 s (the gap open at the start counts from the last commit before it). "+
			"A quiet window of the same length without an event gives the cadence. Target: ≤ 3 commit intervals; max over the events %s s.",
			o.DistConnectors, o.DistRebalances, F(Max(gaps), 2))
		rep.Table([]string{"event", "moved", "connectors that stayed", "longest gap s", "of", "window s", "target", "verdict"}, rows)
		rep.Para("Load average at the end: %s.", LoadAvg())
	}
	if failure != nil {
		t.Fatalf("%v", failure)
	}
}

// limitRow is a table row of n, p50, p99 and max of xs (seconds) and,
// when target is set, PASS when the q-quantile is at most limit.
func limitRow(what string, xs []float64, target string, q, limit float64) []string {
	verdict := "–"
	if target != "" {
		verdict = "UNKNOWN"
		if len(xs) > 0 {
			verdict = verdictLE(Quantile(xs, q), limit)
		}
	} else {
		target = "–"
	}
	return []string{what, strconv.Itoa(len(xs)), F(Quantile(xs, 0.5), 2), F(Quantile(xs, 0.99), 2), F(Max(xs), 2), target, verdict}
}

func verdictLE(v, limit float64) string {
	if v <= limit {
		return "PASS"
	}
	return "MISS"
}

// distRun is the distributed section's cluster under load.
type distRun struct {
	t       *T
	o       Options
	ctx     context.Context
	env     harness.Env
	keys    map[string]string
	session time.Duration
	workers map[string]*harness.Floe
	// watches follow the first connector's frontier, one per worker.
	watches                     map[string]*frontierWatch
	topic, warehouse, namespace string
	parts                       int
}

// connector is the section's i-th connector: kafka → iceberg on the
// paced topic, its own consumer group and table.
func (d *distRun) connector(i int) harness.Connector {
	conn := kafkaConnector(d.env, d.o, d.topic, fmt.Sprintf("%s.events_%d", d.namespace, i), 2, d.o.DistCommit)
	conn.Name = fmt.Sprintf("%s-%d", d.namespace, i)
	maps.Copy(conn.Config, recoveryKeys(d.env, d.warehouse))
	return conn
}

// ids are the workers' ids, sorted.
func (d *distRun) ids() []string { return slices.Sorted(maps.Keys(d.workers)) }

// survivor is the first running worker that is not id.
func (d *distRun) survivor(id string) string {
	for _, w := range d.ids() {
		if w != id && d.workers[w].Running() {
			return w
		}
	}
	return ""
}

// owner waits until the connector is RUNNING with its committer and
// every task on running workers other than not, read through a running
// worker other than not, and returns the committer's worker (the
// connector's worker_id).
func (d *distRun) owner(name, not string) (string, error) {
	return d.waitOwner(name, not, func(string) bool { return true })
}

// ownerIs waits until the connector runs on worker id.
func (d *distRun) ownerIs(name, id string) (string, error) {
	return d.waitOwner(name, "", func(w string) bool { return w == id })
}

func (d *distRun) waitOwner(name, not string, ok func(string) bool) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	last := "no status"
	for time.Now().Before(deadline) {
		via := d.survivor(not)
		if via == "" {
			return "", fmt.Errorf("no running worker besides %s", not)
		}
		ctx, cancel := context.WithTimeout(d.ctx, 2*time.Second)
		st, err := d.workers[via].API.Status(ctx, name)
		cancel()
		if err != nil {
			last = err.Error()
		} else {
			last = st.Summary()
			id := st.Connector.WorkerID
			if st.Running() && id != not && d.workers[id] != nil && d.workers[id].Running() && ok(id) && d.tasksRunning(st, not) {
				return id, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("%s not RUNNING on one worker (other than %q) within 2 min: %s", name, not, last)
}

// tasksRunning reports whether every task runs on a running worker
// other than not.
func (d *distRun) tasksRunning(st harness.ConnectorStatus, not string) bool {
	for _, task := range st.Tasks {
		w := d.workers[task.WorkerID]
		if task.WorkerID == not || w == nil || !w.Running() {
			return false
		}
	}
	return len(st.Tasks) > 0
}

// failoverSample is one kill's timeline, from the SIGKILL.
type failoverSample struct {
	Killed, To string
	Moved      time.Duration // RUNNING on another worker
	First      time.Duration // the frontier's first growth after the kill
}

// failover kills the worker that runs name, measures until the next
// commit and restarts the killed worker.
func (d *distRun) failover(name string) (failoverSample, error) {
	var s failoverSample
	owner, err := d.owner(name, "")
	if err != nil {
		return s, err
	}
	// Polls go through the owner until the kill, then through one
	// survivor only, so the idle workers' CPU is theirs alone (see
	// frontierWatch.Pause).
	fw := d.watches[d.survivor(owner)]
	for id, w := range d.watches {
		w.Pause(id != owner)
	}
	defer func() {
		for _, w := range d.watches {
			w.Pause(false)
		}
	}()
	ow := d.watches[owner]
	// Steady: a commit on the owner, then a random part of a commit
	// interval so that the kill falls anywhere in a checkpoint.
	now := time.Now()
	base := ow.At(now).Sum
	if _, err := ow.Wait(now, d.o.RecoveryTimeout, func(x frontierSample) bool { return x.Sum > base }); err != nil {
		return s, fmt.Errorf("no commit on %s before the kill: %w", owner, err)
	}
	time.Sleep(d.o.RecoverySteady + rand.N(d.o.DistCommit))
	s.Killed = owner
	fw.Pause(false)
	at := time.Now()
	d.workers[owner].Kill()
	// The table's frontier as a survivor reads it (from the table) once
	// the kill settled: no other worker can commit this soon (the
	// session timeout is longer); the next growth is the new owner's.
	settled := at.Add(500 * time.Millisecond)
	time.Sleep(time.Until(settled))
	x0, err := fw.Wait(settled, d.o.RecoveryTimeout, func(frontierSample) bool { return true })
	if err != nil {
		return s, fmt.Errorf("no frontier through a survivor after the kill of %s: %w", owner, err)
	}
	to, err := d.owner(name, owner)
	if err != nil {
		return s, fmt.Errorf("after the kill of %s: %w", owner, err)
	}
	s.To, s.Moved = to, time.Since(at)
	first, err := fw.Wait(x0.At, d.o.RecoveryTimeout, func(x frontierSample) bool { return x.Sum > x0.Sum })
	if err != nil {
		return s, fmt.Errorf("no commit after the kill of %s: %w", owner, err)
	}
	s.First = first.At.Sub(at)
	d.workers[owner].Restart()
	return s, nil
}

// distCost is one steady window's cost.
type distCost struct {
	What          string
	Window        time.Duration
	Records       int64
	CPU, OwnerCPU time.Duration
	// Bytes are the internal topics' key and value bytes written in the
	// window, by topic kind (configs, status, offsets, control).
	Bytes map[string]int64
	// Commits are the connector's commits in the window.
	Commits int64
}

// perCommit is the control topic's bytes per commit.
func (c distCost) perCommit() string {
	if c.Commits == 0 {
		return "–"
	}
	return Num(float64(c.Bytes["control"]) / float64(c.Commits))
}

func (c distCost) perMinute(kind string) float64 {
	return float64(c.Bytes[kind]) / c.Window.Minutes()
}

// cost measures a steady window of o.DistCostWindow on the running
// workers: their processes' CPU, the connector's committed records, the
// internal topics' bytes.
func (d *distRun) cost(name, what string) (distCost, error) {
	c := distCost{What: what, Bytes: map[string]int64{}}
	owner, err := d.owner(name, "")
	if err != nil {
		return c, err
	}
	fw := d.watches[owner]
	// A commit on the owner first: the window starts in steady state.
	now := time.Now()
	base := fw.At(now).Sum
	if _, err := fw.Wait(now, d.o.RecoveryTimeout, func(x frontierSample) bool { return x.Sum > base }); err != nil {
		return c, fmt.Errorf("%s: no commit on %s: %w", what, owner, err)
	}
	// Only the owner's watch polls in the window, so the idle workers'
	// CPU is theirs alone (see frontierWatch.Pause).
	for id, w := range d.watches {
		w.Pause(id != owner)
		defer w.Pause(false)
	}
	time.Sleep(2 * time.Second)
	topics := map[string]string{"configs": d.keys["config.storage.topic"], "status": d.keys["status.storage.topic"], "offsets": d.keys["offset.storage.topic"],
		"control": d.keys["control.topic"]}
	ends0 := map[string]map[int32]int64{}
	for kind, topic := range topics {
		if ends0[kind], err = harness.EndOffsets(d.ctx, d.env, topic); err != nil {
			return c, err
		}
	}
	commits0 := d.commits(name, owner)
	start := time.Now()
	cpu0 := d.treeCPU()
	sum0 := fw.At(start).Sum
	time.Sleep(d.o.DistCostWindow)
	end := time.Now()
	cpu1 := d.treeCPU()
	sum1 := fw.At(end).Sum
	c.Window, c.Records = end.Sub(start), sum1-sum0
	c.Commits = d.commits(name, owner) - commits0
	for id := range cpu1 {
		delta := sumCPU(CPUDelta(cpu0[id], cpu1[id]))
		c.CPU += delta
		if id == owner {
			c.OwnerCPU = delta
		}
	}
	for kind, topic := range topics {
		ends1, err := harness.EndOffsets(d.ctx, d.env, topic)
		if err != nil {
			return c, err
		}
		rctx, cancel := context.WithTimeout(d.ctx, time.Minute)
		_, b, err := harness.TopicBytes(rctx, d.env, topic, ends0[kind], ends1)
		cancel()
		if err != nil {
			return c, err
		}
		c.Bytes[kind] = b
	}
	if d.ownerNow(name) != owner {
		return c, fmt.Errorf("%s: the connector moved off %s during the window", what, owner)
	}
	d.t.Logf("cost, %s: %d records in %s, CPU %s (%s on %s), internal bytes %v", what, c.Records, c.Window.Round(time.Millisecond),
		c.CPU.Round(10*time.Millisecond), c.OwnerCPU.Round(10*time.Millisecond), owner, c.Bytes)
	return c, nil
}

// commits is the connector's commit count as its committer's worker
// reports it (0 when it cannot be read).
func (d *distRun) commits(name, owner string) int64 {
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	st, err := d.workers[owner].API.Status(ctx, name)
	if err != nil || st.Floe == nil {
		return 0
	}
	return st.Floe.Commits
}

// ownerNow is the connector's worker now ("" when unknown).
func (d *distRun) ownerNow(name string) string {
	id, err := d.owner(name, "")
	if err != nil {
		return ""
	}
	return id
}

// treeCPU reads the CPU time of every running worker and its children
// (the plugin processes), by worker id and pid.
func (d *distRun) treeCPU() map[string]map[int]ProcSample {
	out := map[string]map[int]ProcSample{}
	for id, w := range d.workers {
		if !w.Running() {
			continue
		}
		m := map[int]ProcSample{}
		for _, pid := range append([]int{w.PID()}, Children(w.PID())...) {
			if s, err := ReadProc(pid); err == nil {
				m[pid] = s
			}
		}
		out[id] = m
	}
	return out
}

// distEvent is one join or leave and the commit gaps around it.
type distEvent struct {
	What   string
	Moved  []string // connectors whose worker changed
	Stayed int      // connectors whose worker did not
	Gap    time.Duration
	GapOf  string // the connector of the longest gap
	Window time.Duration
}

// rebalances adds o.DistConnectors-1 connectors beside first, then lets a
// fourth worker join and leave o.DistRebalances times each, measuring
// the commit gaps of the connectors that stay; and a quiet window.
func (d *distRun) rebalances(first harness.Connector) ([]distEvent, distEvent, error) {
	names := []string{first.Name}
	for i := 1; i < d.o.DistConnectors; i++ {
		conn := d.connector(i)
		harness.CreateWhenLed(d.t, d.ctx, d.workers["worker-a"], conn)
		names = append(names, conn.Name)
	}
	// Each connector is watched through the worker that runs it (through
	// another, every poll would start a sink plugin there; see
	// frontierWatch.Pause); a moved one gets a new watch on its new
	// worker.
	watches := map[string]*frontierWatch{}
	watchOn := func(n, id string) {
		if old := watches[n]; old != nil {
			old.Stop()
		}
		watches[n] = watchFrontier(d.ctx, d.workers[id].API, n, d.topic, d.parts, 100*time.Millisecond)
	}
	defer func() {
		for _, w := range watches {
			w.Stop()
		}
	}()
	// The first connector's watches poll through every worker; only its
	// owner's goes on.
	for _, w := range d.watches {
		w.Pause(true)
	}
	for _, n := range names {
		id, err := d.owner(n, "")
		if err != nil {
			return nil, distEvent{}, err
		}
		watchOn(n, id)
		fw := watches[n]
		if _, err := fw.Wait(time.Now(), 2*time.Minute, func(x frontierSample) bool { return x.Sum > 0 }); err != nil {
			return nil, distEvent{}, fmt.Errorf("%s: no first commit: %w", n, err)
		}
	}
	var events []distEvent
	var windows []time.Duration
	const joiner = 3
	joinerID := harness.WorkerID(joiner)
	for i := 0; i < 2*d.o.DistRebalances; i++ {
		time.Sleep(d.o.RecoverySteady)
		before, err := d.placement(names)
		if err != nil {
			return events, distEvent{}, err
		}
		at := time.Now()
		e := distEvent{What: "worker-d joins"}
		if i%2 == 0 {
			if w, ok := d.workers[joinerID]; ok {
				w.Restart()
			} else {
				_, d.workers[joinerID] = harness.StartWorker(d.t, d.env, d.keys, joiner)
			}
		} else {
			e.What = "worker-d leaves (SIGTERM)"
			d.workers[joinerID].Stop()
		}
		// Settled: the placement changed and the moved connector committed
		// on its new worker, plus 5 s; or 60 s without a move.
		var after map[string]string
		deadline := at.Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if after, err = d.placement(names); err == nil && !maps.Equal(before, after) && complete(after, names) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !complete(after, names) {
			why := fmt.Sprintf("%s: the connectors' placement was not complete within 60 s (last seen %v)", e.What, after)
			if err != nil {
				return events, distEvent{}, fmt.Errorf("%s: %w", why, err)
			}
			return events, distEvent{}, errors.New(why)
		}
		for _, n := range names {
			if after[n] != before[n] {
				e.Moved = append(e.Moved, fmt.Sprintf("%s (%s → %s)", n, before[n], after[n]))
				committer, _, _ := strings.Cut(after[n], ":")
				watchOn(n, committer)
				x, err := watches[n].Wait(time.Now(), 2*time.Minute, func(frontierSample) bool { return true })
				if err != nil {
					return events, distEvent{}, fmt.Errorf("%s: no frontier of %s through %s: %w", e.What, n, committer, err)
				}
				from := x.Sum
				if _, err := watches[n].Wait(time.Now(), 2*time.Minute, func(x frontierSample) bool { return x.Sum > from }); err != nil {
					return events, distEvent{}, fmt.Errorf("%s: %s moved and did not commit: %w", e.What, n, err)
				}
			}
		}
		time.Sleep(5 * time.Second)
		end := time.Now()
		e.Window = end.Sub(at)
		windows = append(windows, e.Window)
		for _, n := range names {
			if after[n] == before[n] {
				e.Stayed++
				if g := longestGap(watches[n], at, end); g > e.Gap {
					e.Gap, e.GapOf = g, n
				}
			}
		}
		d.t.Logf("%s: moved %v, %d stayed, longest gap %s (%s)", e.What, e.Moved, e.Stayed, e.Gap.Round(time.Millisecond), e.GapOf)
		events = append(events, e)
	}
	// The cadence: a quiet window as long as the longest event's.
	quiet := distEvent{What: "no event (quiet window)", Stayed: len(names)}
	time.Sleep(d.o.RecoverySteady)
	at := time.Now()
	quiet.Window = slices.Max(windows)
	time.Sleep(quiet.Window)
	for _, n := range names {
		if g := longestGap(watches[n], at, at.Add(quiet.Window)); g > quiet.Gap {
			quiet.Gap, quiet.GapOf = g, n
		}
	}
	return events, quiet, nil
}

// complete says every connector has a worker.
func complete(placed map[string]string, names []string) bool {
	for _, n := range names {
		if placed[n] == "" {
			return false
		}
	}
	return true
}

// placement is each connector's placement, read through worker-a: its
// committer's worker, then its tasks' workers in task order
// ("worker-a: worker-a worker-b"); a connector not RUNNING maps to "".
func (d *distRun) placement(names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		ctx, cancel := context.WithTimeout(d.ctx, 2*time.Second)
		st, err := d.workers["worker-a"].API.Status(ctx, n)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("status of %s: %w", n, err)
		}
		if st.Running() && d.tasksRunning(st, "") {
			ws := make([]string, len(st.Tasks))
			for i, task := range st.Tasks {
				ws[i] = task.WorkerID
			}
			out[n] = st.Connector.WorkerID + ": " + strings.Join(ws, " ")
		}
	}
	return out, nil
}

// longestGap is the longest time between commits (growths of the
// frontier) seen by fw in [from, to], counting the gap open at from from
// the last commit before it and the one open at to.
func longestGap(fw *frontierWatch, from, to time.Time) time.Duration {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	var last time.Time
	var prev int64 = -1
	var gap time.Duration
	for _, s := range fw.samples {
		if s.At.After(to) {
			break
		}
		if prev >= 0 && s.Sum > prev {
			if !s.At.Before(from) && !last.IsZero() {
				gap = max(gap, s.At.Sub(last))
			}
			last = s.At
		}
		prev = s.Sum
	}
	if !last.IsZero() {
		gap = max(gap, to.Sub(last))
	}
	return gap
}
