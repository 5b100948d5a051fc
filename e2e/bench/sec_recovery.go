package bench

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// recoveryTarget is a process the recovery section kills with SIGKILL.
type recoveryTarget struct {
	name string
	// binary is the plugin's executable; "" for the host.
	binary string
}

// recoveryTargets are killed in this order, round after round. The host
// comes first in each round: its restart starts every plugin afresh, so
// each plugin kill is its process's first death since then and floe
// restarts it after plugin.restart.backoff.ms, never a doubled backoff
// (the count of consecutive crashes resets only after a process lived
// 60 s, and kills of one process come closer than that).
var recoveryTargets = []recoveryTarget{
	{name: "host"},
	{name: "source", binary: "floe-plugin-kafka"},
	{name: "sink", binary: "floe-plugin-iceberg"},
	{name: "partitioner", binary: "floe-plugin-partitioners"},
}

// recoveryKeys are what the recovery connector adds to kafkaConnector's:
// the Postgres SQL catalog the e2e crash tests use, and their consumer
// group timeouts. A member killed with its source stays in the group
// until its session times out, and the broker's minimum session keeps
// that short; librdkafka's default (45 s) would dominate every source and
// host kill.
func recoveryKeys(env harness.Env, warehouse string) map[string]string {
	return map[string]string{
		"partitioner":                 "hash",
		"iceberg.catalog.type":        "sql",
		"iceberg.catalog.uri":         env.PostgresURL,
		"iceberg.catalog.warehouse":   warehouse,
		"kafka.session.timeout.ms":    "6000",
		"kafka.heartbeat.interval.ms": "1000",
	}
}

// killSample is one kill's timeline, each duration from the kill.
type killSample struct {
	// Back is when floe ran the killed process again: for the host,
	// GET /health answered; for a plugin, a new process of its binary
	// runs under floe.
	Back time.Duration
	// First is the first growth of the committed frontier after Back.
	First time.Duration
	// CatchUp is when the committed frontier first covered every record
	// handed to the producer before the kill.
	CatchUp time.Duration
}

// brokerSample is one broker restart's timeline.
type brokerSample struct {
	Signal syscall.Signal
	Down   time.Duration // from the stop until the start began
	Start  time.Duration // from the start until the broker logged "Kafka Server started" (back)
	// First is from back to the first growth of the committed frontier
	// after it. (Records read before the stop may commit while the
	// broker is down, late: the checkpoint waits out the source's
	// bounded Commit of group offsets.)
	First time.Duration
	// Written is from back until the topic's end offsets first passed
	// the frontier at back: the load producer's first new record (its
	// reconnect backoff decides when it writes again). Negative when it
	// was not seen.
	Written time.Duration
	// CatchUp is from back until the frontier covered every record
	// handed to the producer before back.
	CatchUp time.Duration
}

// Recovery is the recovery section (issue 15): under a paced load,
// kill -9 of the host (restarted at once), the source, the sink and the
// partitioner plugin, each o.RecoveryKills times, and the time until the
// table's committed frontier holds every record produced before the
// kill; restarts of the broker and the time from its return to the first
// commit; then every record must be in the table exactly once.
func Recovery(t *T, o Options, rep *Report) {
	shared := harness.Require(t, harness.FloeBinary, harness.SchemaRegistry, harness.Postgres, harness.Readers,
		harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	rep.Heading(2, "7. recovery (issue 15)")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Hour)
	defer cancel()

	// The reader of this checkout: the services' env file names the one
	// of the checkout that started them, which may be gone by the end of
	// the section (worktrees come and go on a shared machine).
	if own := filepath.Join(shared.RepoDir, "e2e", "readers", "read_table.py"); fileExists(own) {
		shared.ReadTable = own
	}
	// A private broker (the shared one's other users must not lose it),
	// for the whole section: the kills and the restarts of the broker.
	broker := harness.StartBroker(t, shared)
	env := broker.Env(shared)
	topic := harness.UniqueName("bench_recovery")
	id, g := benchTopic(t, env, o, topic, nil)
	table := harness.UniqueName("bench_recovery") + ".events"
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	conn := kafkaConnector(env, o, topic, table, 2, time.Second)
	maps.Copy(conn.Config, recoveryKeys(env, warehouse))
	for k, v := range o.RecoveryConfig {
		if v == "" {
			delete(conn.Config, k)
		} else {
			conn.Config[k] = v
		}
	}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}, Worker: o.Worker})
	f.WaitStatus(ctx, conn.Name, "connector RUNNING", false, harness.ConnectorStatus.Running)

	parts := o.KafkaPartitions
	pc := &pacer{Gen: g, SchemaID: id, Partitions: int64(parts), Rate: o.RecoveryRate}
	pctx, pcancel := context.WithCancel(ctx)
	type produceResult struct {
		n   int
		err error
	}
	produced := make(chan produceResult, 1)
	go func() {
		n, err := pc.produce(pctx, env.KafkaBootstrap, topic)
		produced <- produceResult{n, err}
	}()
	// A failed section stops the producer before the broker goes.
	t.Cleanup(func() {
		pc.stop()
		pcancel()
		<-produced
	})
	fw := watchFrontier(ctx, f.API, conn.Name, topic, parts, 100*time.Millisecond)
	t.Cleanup(fw.Stop)
	rc := &recoveryRun{t: t, o: o, f: f, fw: fw, pc: pc, env: env, name: conn.Name, parts: int64(parts)}

	rep.Para("Topic: %d partitions on a private single-broker Kafka (`harness.StartBroker`, so its restarts disturb no one else), fed by one librdkafka producer "+
		"(acks=all, idempotent) paced at %s records/s for the whole section. floe: `kafka` → `hash` → `iceberg`, `tasks.max=2`, `commit.interval.ms=1000`, "+
		"a Postgres SQL catalog and a local warehouse; keys beyond the bench's kafka connector: %s; floe's defaults otherwise (`plugin.restart.backoff.ms=1000`). "+
		"**Catch-up** of a kill: from the SIGKILL until the connector's committed frontier (`GET /connectors/{c}/offsets`, the last table commit, polled every 100 ms "+
		"by a goroutine that goes on while floe is down) covers every record handed to the producer before the kill (record n is at offset n / %d of partition n %% %d). "+
		"Kills come in rounds of host, source (`floe-plugin-kafka`), sink (`floe-plugin-iceberg`), partitioner (`floe-plugin-partitioners`): %d rounds, each kill %s after the previous "+
		"caught up plus a random part of a commit interval; the host is restarted as soon as it is gone (its orphaned plugins exit by themselves), and floe restarts a dead plugin itself. "+
		"*No kill* is the same measurement at moments without a kill: the commit cadence every catch-up includes. "+
		"**Broker restart**: the broker stopped (SIGTERM and kill -9 in turn), held down %s, started; *back* is its log's `Kafka Server started` (KRaft logs it once the broker is unfenced); "+
		"first commit = the first growth of the frontier after back.",
		parts, Num(o.RecoveryRate), joinKeys(recoveryKeysShown(conn.Config)), parts, parts, o.RecoveryKills, o.RecoverySteady, o.RecoveryBrokerDown)

	var failure error
	// Warm-up: the consumer group's first join, the first commits.
	if _, err := rc.waitCovered(time.Now(), pc.Handed()+int64(o.RecoveryRate), 2*time.Minute); err != nil {
		failure = fmt.Errorf("warm-up: %w", err)
	}
	var baseline []killSample
	for i := 0; i < o.RecoveryKills && failure == nil; i++ {
		rc.steady()
		at, n := time.Now(), pc.Handed()
		s, err := rc.waitCovered(at, n, o.RecoveryTimeout)
		if err != nil {
			failure = fmt.Errorf("no kill %d: %w", i+1, err)
			break
		}
		baseline = append(baseline, killSample{CatchUp: s.At.Sub(at)})
		t.Logf("no kill %d: caught up %s", i+1, s.At.Sub(at).Round(time.Millisecond))
	}
	kills := map[string][]killSample{}
	for round := 0; round < o.RecoveryKills && failure == nil; round++ {
		for _, target := range recoveryTargets {
			rc.steady()
			s, err := rc.kill(target)
			if err != nil {
				failure = fmt.Errorf("kill %d of the %s: %w", round+1, target.name, err)
				break
			}
			kills[target.name] = append(kills[target.name], s)
			t.Logf("kill %d of the %s: back %s, first commit %s, caught up %s", round+1, target.name,
				s.Back.Round(time.Millisecond), s.First.Round(time.Millisecond), s.CatchUp.Round(time.Millisecond))
		}
	}
	var restarts []brokerSample
	for i := 0; i < o.RecoveryBrokerRestarts && failure == nil; i++ {
		sig := syscall.SIGTERM
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		rc.steady()
		s, err := rc.restartBroker(broker, sig)
		if err != nil {
			failure = fmt.Errorf("broker restart %d: %w", i+1, err)
			break
		}
		restarts = append(restarts, s)
		t.Logf("broker restart %d (%v): down %s, start %s, first new record in the topic %s, first commit %s after back, caught up %s after back", i+1, sig,
			s.Down.Round(time.Millisecond), s.Start.Round(time.Millisecond), s.Written.Round(time.Millisecond), s.First.Round(time.Millisecond), s.CatchUp.Round(time.Millisecond))
	}

	rows := [][]string{}
	for _, target := range recoveryTargets {
		what := "kill -9 host, restarted at once → caught up"
		if target.binary != "" {
			what = fmt.Sprintf("kill -9 %s (`%s`) → caught up", target.name, target.binary)
		}
		rows = append(rows, secondsRow(what, catchUps(kills[target.name]), "p50 ≤ 5 s", 0.5))
	}
	rows = append(rows, secondsRow("no kill (baseline) → caught up", catchUps(baseline), "", 0))
	var firsts, afterWrite, brokerCatch []float64
	for _, s := range restarts {
		firsts = append(firsts, s.First.Seconds())
		if s.Written >= 0 {
			afterWrite = append(afterWrite, max(0, s.First-s.Written).Seconds())
		}
		brokerCatch = append(brokerCatch, s.CatchUp.Seconds())
	}
	rows = append(rows, secondsRow("broker restart: back → first commit", firsts, "every restart ≤ 5 s (max)", 1))
	rows = append(rows, secondsRow("broker restart: first new record in the topic → first commit", afterWrite, "", 0))
	rows = append(rows, secondsRow("broker restart: back → caught up", brokerCatch, "", 0))
	rep.Table([]string{"what", "n", "p50 s", "p99 s", "max s", "target", "verdict"}, rows)
	rep.Para("Load average at the end of the kills and restarts: %s (2 cores shared with other sessions: a restarted process's start-up competes for them).", LoadAvg())

	rows = [][]string{}
	for _, target := range recoveryTargets {
		ss := kills[target.name]
		var back, first []float64
		for _, s := range ss {
			back, first = append(back, s.Back.Seconds()), append(first, s.First.Seconds())
		}
		rows = append(rows, []string{target.name, strconv.Itoa(len(ss)), F(Median(back), 2), F(Median(first), 2), F(Median(catchUps(ss)), 2)})
	}
	rep.Para("Where a kill's time goes (medians, seconds from the kill): *running again* is, for the host, GET /health answering after the restart; for a plugin, a new process of its binary under floe. " +
		"*First commit* is the frontier's first growth after that.")
	rep.Table([]string{"killed", "kills", "running again p50 s", "first commit p50 s", "caught up p50 s"}, rows)
	if len(restarts) > 0 {
		rows = [][]string{}
		for i, s := range restarts {
			written := "not seen"
			if s.Written >= 0 {
				written = F(s.Written.Seconds(), 2)
			}
			rows = append(rows, []string{strconv.Itoa(i + 1), signalName(s.Signal), F(s.Down.Seconds(), 1), F(s.Start.Seconds(), 1), written, F(s.First.Seconds(), 2), F(s.CatchUp.Seconds(), 2)})
		}
		rep.Para("Broker restarts (seconds): held down from the stop to the start; the start until back; then, from back, the load producer's first new record in the topic " +
			"(its end offsets passed the frontier), the first commit and the catch-up of what the producer queued meanwhile.")
		rep.Table([]string{"restart", "stopped by", "down s", "start → back s", "back → first new record s", "back → first commit s", "back → caught up s"}, rows)
	}
	if failure != nil {
		t.Fatalf("%v", failure)
	}

	// Every record once.
	pc.stop()
	res := <-produced
	produced <- res // for the cleanup
	ends, err := harness.EndOffsets(ctx, env, topic)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var total, offsetSum int64
	for p := range parts {
		e := ends[int32(p)]
		total += e
		offsetSum += e * (e - 1) / 2
		if want := pacerEnd(pc.Handed(), int64(parts), p); e != want {
			t.Logf("partition %d ends at %d; the producer's order puts %d records there (delivered %d of %d: %v)", p, e, want, res.n, pc.Handed(), res.err)
		}
	}
	if _, err := rc.waitFrontier(ends, 3*time.Minute); err != nil {
		t.Fatalf("after the producer stopped: %v", err)
	}
	fw.Stop()
	f.Stop()
	read := harness.ReadTable(t, env, harness.DuckDB, harness.TableRef{CatalogURI: env.PostgresURL, Warehouse: warehouse, Name: table},
		harness.ReadOptions{ChecksumCols: []string{"_source_offset"}, DistinctCols: []string{"_source_partition", "_source_offset"}})
	var distinct int64
	if read.Distinct != nil {
		distinct = *read.Distinct
	}
	lost, dup := total-distinct, read.Rows-distinct
	sum, err := read.Sum("_source_offset")
	sumOK := err == nil && sum.IsInt64() && sum.Int64() == offsetSum
	verdict := "PASS"
	if lost != 0 || dup != 0 || !sumOK {
		verdict = "MISS"
	}
	rep.Para("Afterwards, with the producer stopped and the frontier at the topic's end offsets, DuckDB read the table (through the Postgres catalog): " +
		"rows, distinct (`_source_partition`, `_source_offset`), and the sum of `_source_offset`, which must be that of every offset below each partition's end.")
	rep.Table([]string{"records in the topic", "rows", "distinct", "lost", "duplicated", "offset sum as produced", "target", "verdict"}, [][]string{{
		Num(float64(total)), Num(float64(read.Rows)), Num(float64(distinct)), Num(float64(lost)), Num(float64(dup)), fmt.Sprint(sumOK),
		"none lost, none duplicated", verdict}})
	t.Logf("recovery: %d records, %d rows, %d distinct: lost %d, duplicated %d", total, read.Rows, distinct, lost, dup)
}

// recoveryKeysShown are the connector's keys the report names: those of
// recoveryKeys and the --recovery-config ones, without the addresses.
func recoveryKeysShown(cfg map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		switch {
		case k == "iceberg.catalog.uri", k == "iceberg.catalog.warehouse":
		case strings.HasPrefix(k, "kafka.") && k != "kafka.bootstrap.servers", k == "iceberg.catalog.type", k == "partitioner",
			strings.HasPrefix(k, "plugin."), strings.HasPrefix(k, "consumer.") && k != "consumer.group.id":
			out[k] = v
		}
	}
	return out
}

// secondsRow is a row of the recovery table: n, p50, p99, max of xs
// (seconds) and, when target is set, PASS when the q-quantile is at
// most 5 s.
func secondsRow(what string, xs []float64, target string, q float64) []string {
	verdict := "–"
	if target != "" {
		switch {
		case len(xs) == 0:
			verdict = "UNKNOWN"
		case Quantile(xs, q) <= 5:
			verdict = "PASS"
		default:
			verdict = "MISS"
		}
	} else {
		target = "–"
	}
	return []string{what, strconv.Itoa(len(xs)), F(Quantile(xs, 0.5), 2), F(Quantile(xs, 0.99), 2), F(Max(xs), 2), target, verdict}
}

func catchUps(ss []killSample) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = s.CatchUp.Seconds()
	}
	return out
}

func signalName(s syscall.Signal) string {
	if s == syscall.SIGKILL {
		return "kill -9"
	}
	return "SIGTERM"
}

// recoveryRun is the recovery section's floe under load.
type recoveryRun struct {
	t     *T
	o     Options
	f     *harness.Floe
	fw    *frontierWatch
	pc    *pacer
	env   harness.Env // the private broker's
	name  string
	parts int64
}

// steady waits between measurements: o.RecoverySteady and a random part
// of the commit interval, so a kill falls anywhere in a checkpoint.
func (r *recoveryRun) steady() {
	time.Sleep(r.o.RecoverySteady + rand.N(time.Second))
}

// kill kills target and measures its recovery.
func (r *recoveryRun) kill(target recoveryTarget) (killSample, error) {
	f := r.f
	var s killSample
	if target.binary == "" {
		at, n := time.Now(), r.pc.Handed()
		orphans := f.KillHost()
		f.Restart() // at once, as a process supervisor would; returns once GET /health answers
		s.Back = time.Since(at)
		s, err := r.finish(at, n, s, true)
		if err == nil {
			f.WaitGone(orphans) // they noticed their host's death long ago
		}
		return s, err
	}
	before := map[int]bool{}
	for _, p := range f.Plugins() {
		before[p.PID] = true
	}
	at, n := time.Now(), r.pc.Handed()
	f.KillPlugin(target.binary)
	for {
		if p, ok := r.pluginRunning(target.binary, before); ok {
			s.Back = time.Since(at)
			r.t.Logf("%s running again as pid %d", target.binary, p)
			break
		}
		if time.Since(at) > r.o.RecoveryTimeout {
			return s, fmt.Errorf("floe did not run %s again within %s", target.binary, r.o.RecoveryTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return r.finish(at, n, s, false)
}

// finish waits for the first commit after s.Back and the catch-up of the
// n records handed over before the kill at at; host says the host was
// killed.
func (r *recoveryRun) finish(at time.Time, n int64, s killSample, host bool) (killSample, error) {
	back := at.Add(s.Back)
	from := r.fw.At(back)
	if host {
		// A restarted host answers with the last commit it stored, which
		// may be newer than the last sample before the kill.
		var err error
		if from, err = r.fw.Wait(back, r.o.RecoveryTimeout, func(frontierSample) bool { return true }); err != nil {
			return s, fmt.Errorf("no frontier from the restarted floe: %w", err)
		}
	}
	first, err := r.fw.Wait(from.At, r.o.RecoveryTimeout, func(x frontierSample) bool { return x.Sum > from.Sum })
	if err != nil {
		return s, fmt.Errorf("no commit after floe ran again: %w", err)
	}
	s.First = first.At.Sub(at)
	caught, err := r.waitCovered(at, n, r.o.RecoveryTimeout)
	if err != nil {
		return s, err
	}
	s.CatchUp = caught.At.Sub(at)
	return s, nil
}

// pluginRunning returns a plugin process of binary under floe whose pid
// is not in before.
func (r *recoveryRun) pluginRunning(binary string, before map[int]bool) (int, bool) {
	host := r.f.PID()
	for _, p := range r.f.Plugins() {
		if p.PPID == host && p.Name == binary && !before[p.PID] && p.State != 'Z' {
			return p.PID, true
		}
	}
	return 0, false
}

// waitCovered waits for the first frontier sample from at on that covers
// the first n records of the pacer.
func (r *recoveryRun) waitCovered(at time.Time, n int64, timeout time.Duration) (frontierSample, error) {
	s, err := r.fw.Wait(at, timeout, func(x frontierSample) bool {
		for p := range int(r.parts) {
			if x.Ends[p] < pacerEnd(n, r.parts, p) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return s, fmt.Errorf("the committed frontier did not cover the %d records produced by then: %w", n, err)
	}
	return s, nil
}

// waitFrontier waits until the frontier is ends.
func (r *recoveryRun) waitFrontier(ends map[int32]int64, timeout time.Duration) (frontierSample, error) {
	return r.fw.Wait(time.Now(), timeout, func(x frontierSample) bool {
		for p := range int(r.parts) {
			if x.Ends[p] != ends[int32(p)] {
				return false
			}
		}
		return true
	})
}

// restartBroker stops the broker with sig, keeps it down for
// o.RecoveryBrokerDown, starts it and measures from its return.
func (r *recoveryRun) restartBroker(b *harness.Broker, sig syscall.Signal) (brokerSample, error) {
	s := brokerSample{Signal: sig}
	stopped := time.Now()
	b.Stop(sig)
	time.Sleep(time.Until(stopped.Add(r.o.RecoveryBrokerDown)))
	began := time.Now()
	s.Down = began.Sub(stopped)
	b.Start()
	back, n := time.Now(), r.pc.Handed()
	s.Start = back.Sub(began)
	from := r.fw.At(back).Sum
	written := r.watchWritten(back, from)
	first, err := r.fw.Wait(back, r.o.RecoveryTimeout, func(x frontierSample) bool { return x.Sum > from })
	if err != nil {
		return s, fmt.Errorf("no commit after the broker was back: %w", err)
	}
	s.First = first.At.Sub(back)
	s.Written = <-written
	caught, err := r.waitCovered(back, n, r.o.RecoveryTimeout)
	if err != nil {
		return s, err
	}
	s.CatchUp = caught.At.Sub(back)
	return s, nil
}

// watchWritten polls the topic's end offsets from back on until their
// sum passes from, and sends how long after back that was (negative
// after r.o.RecoveryTimeout).
func (r *recoveryRun) watchWritten(back time.Time, from int64) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		for time.Since(back) < r.o.RecoveryTimeout {
			ctx, cancel := context.WithTimeout(r.t.Context(), time.Second)
			ends, err := harness.EndOffsets(ctx, r.env, r.fw.topic)
			cancel()
			var sum int64
			for _, e := range ends {
				sum += e
			}
			if err == nil && sum > from {
				out <- time.Since(back)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		out <- -1
	}()
	return out
}

// frontierSample is one successful GET /connectors/{c}/offsets.
type frontierSample struct {
	At   time.Time
	Ends []int64 // committed offset per partition of the topic
	Sum  int64
}

// frontierWatch polls a connector's committed frontier in its own
// goroutine, also while floe is down (those polls fail and leave no
// sample), so that a measurement sees the first sample after any moment.
type frontierWatch struct {
	api         *harness.Client
	name, topic string
	parts       int

	// paused skips polls (see Pause).
	paused atomic.Bool

	mu      sync.Mutex
	samples []frontierSample
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// watchFrontier polls every interval until Stop or until ctx ends.
func watchFrontier(ctx context.Context, api *harness.Client, name, topic string, parts int, every time.Duration) *frontierWatch {
	w := &frontierWatch{api: api, name: name, topic: topic, parts: parts, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			w.poll(ctx)
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *frontierWatch) poll(ctx context.Context) {
	if w.paused.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	offs, err := w.api.Offsets(ctx, w.name)
	if err != nil {
		return
	}
	at := time.Now()
	s := frontierSample{At: at, Ends: make([]int64, w.parts)}
	for _, o := range offs.Offsets {
		topic, p, v, ok := o.Kafka()
		if !ok || topic != w.topic || p < 0 || int(p) >= w.parts {
			continue
		}
		s.Ends[p] = v
		s.Sum += v
	}
	w.mu.Lock()
	w.samples = append(w.samples, s)
	w.mu.Unlock()
}

// At is the last sample taken at or before t (zero when none).
func (w *frontierWatch) At(t time.Time) frontierSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.samples) - 1; i >= 0; i-- {
		if !w.samples[i].At.After(t) {
			return w.samples[i]
		}
	}
	return frontierSample{}
}

// Wait returns the first sample taken after from that satisfies ok,
// waiting for it up to timeout from now.
func (w *frontierWatch) Wait(from time.Time, timeout time.Duration, ok func(frontierSample) bool) (frontierSample, error) {
	deadline := time.Now().Add(timeout)
	i := 0
	for {
		w.mu.Lock()
		for ; i < len(w.samples); i++ {
			if s := w.samples[i]; s.At.After(from) && ok(s) {
				w.mu.Unlock()
				return s, nil
			}
		}
		var last frontierSample
		if len(w.samples) > 0 {
			last = w.samples[len(w.samples)-1]
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			return last, fmt.Errorf("not within %s (last frontier %v at %s)", timeout, last.Ends, last.At.Format("15:04:05.000"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pause stops (true) or resumes (false) the polls without ending the
// goroutine, so that a measurement can keep a worker's CPU its own.
func (w *frontierWatch) Pause(p bool) { w.paused.Store(p) }

// Stop ends the polling.
func (w *frontierWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
