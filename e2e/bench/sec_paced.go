package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/floehq/floe/e2e/harness"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/host/worker"
)

// pacedRun is the paced section's measurement.
type pacedRun struct {
	Produced  float64 // records/s handed to the producer over the window
	Read      float64 // records/s floe read over the window
	Window    time.Duration
	CPU       map[string]time.Duration
	Records   float64 // records floe read in the window
	Commits   float64 // commits in the window
	PeakRSSKB int64
	PeakAnon  int64 // KB, summed RssAnon + RssShmem
	Procs     []ProcSample
	Load      string // load average at the end of the window
	Profile   string // perf profile taken after the window (--profile)
}

// Cores is floe's CPU (all its processes) per second of the window.
func (r pacedRun) Cores() float64 {
	var total time.Duration
	for _, d := range r.CPU {
		total += d
	}
	return total.Seconds() / r.Window.Seconds()
}

// CPUPerMillion is floe's CPU-seconds per million records read.
func (r pacedRun) CPUPerMillion() float64 {
	var total time.Duration
	for _, d := range r.CPU {
		total += d
	}
	return total.Seconds() * 1e6 / r.Records
}

// Paced is the paced section (issue 14): the cost of floe at a steady,
// modest rate with 1 s commits, what a user comparing it with a JVM sink
// on the same box sees when the topic is not a backlog.
func Paced(t *T, o Options, rep *Report) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.SchemaRegistry, harness.Plugin("kafka"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	rep.Heading(2, "9. paced: CPU at a steady rate (issue 14)")
	rep.Para("Producer: one librdkafka producer (`kafkatest.Produce`, acks=all, idempotent, linger 20 ms) paced at **%s records/s** of `event.avsc` into a new %d-partition topic (%s), "+
		"for the whole section. floe: `kafka` → `hash` → `iceberg`, `tasks.max=2`, `commit.interval.ms=%d`, floe's defaults otherwise%s. "+
		"After the first commit and %s of warm-up, the CPU of floe and all its plugin processes (`/proc/<pid>/stat`, every 200 ms) over a %s window; `/metrics` is polled once a second only "+
		"(serving it is floe's CPU too). *Cores* = CPU-seconds ÷ wall seconds of the window.",
		Num(o.PacedRate), o.KafkaPartitions, joinKeys(freshTopicConfig), o.PacedCommit.Milliseconds(), extraKeys(o), o.PacedWarmup, o.PacedWindow)

	if o.Profile {
		dir := t.TempDir()
		if err := BuildUnstripped(t.Context(), env.RepoDir, dir); err != nil {
			t.Fatalf("%v", err)
		}
		env.BinDir = dir
	}
	var r pacedRun
	failures := t.Retry(2, "paced run", func(t *T) { r = pacedMeasure(t, env, o) })
	reportFailures(rep, failures)
	rep.Table([]string{"produced rec/s", "floe read rec/s", "commits", "window s", "floe cores", "floe CPU-s / M rec", "peak RSS MiB", "peak anon + shmem MiB", "load average at the end"},
		[][]string{{Num(r.Produced), Num(r.Read), F(r.Commits, 0), F(r.Window.Seconds(), 0), F(r.Cores(), 3), F(r.CPUPerMillion(), 1),
			F(float64(r.PeakRSSKB)/1024, 0), F(float64(r.PeakAnon)/1024, 0), r.Load}})
	rep.Target(fmt.Sprintf("floe and its plugins ≤ 0.3 cores at %s rec/s with 1 s commits, in steady state", Num(o.PacedRate)),
		F(r.Cores(), 3)+" cores", r.Cores() <= 0.3, r.Records > 0 && r.Read >= 0.9*o.PacedRate)
	rep.Para("")
	h, rows := cpuTable(r.CPU, r.Records)
	rep.Para("CPU by process over the window:")
	rep.Table(h, rows)
	h, rows = procMemTable(r.Procs)
	rep.Table(h, rows)
	budgetTarget(rep, o, float64(r.PeakRSSKB)/1024)
	rep.Para("")
	if r.Profile != "" {
		rep.Para("perf profile of floe and its plugins (%d s right after the window, same load, `perf record -e cpu-clock -F 499 -g`, unstripped builds of the same code):\n\n%s", o.ProfileSeconds, r.Profile)
	}
}

// memoryBudget is the worker's memory.max.bytes in the bench's floe runs:
// the -worker flag's, or the default; 0 means none.
func memoryBudget(o Options) int64 {
	v, ok := o.Worker[worker.KeyMemoryMaxBytes]
	if !ok {
		return worker.DefaultMemoryMaxBytes
	}
	if strings.TrimSpace(v) == "0" {
		return 0
	}
	n, err := runtime.ParseBytes(v)
	if err != nil {
		return 0
	}
	return n
}

// budgetTarget prints the target that peak RSS stays within the memory
// budget plus 10 %.
func budgetTarget(rep *Report, o Options, peakMiB float64) {
	b := memoryBudget(o)
	limit := float64(b) / (1 << 20) * 1.1
	rep.Target(fmt.Sprintf("peak RSS of floe and its plugins ≤ memory.max.bytes + 10 %% (%s MiB; issue 14)", F(float64(b)/(1<<20), 0)),
		F(peakMiB, 0)+" MiB", peakMiB <= limit, b > 0)
}

// extraKeys lists the run's extra worker and connector keys for the
// text, or nothing.
func extraKeys(o Options) string {
	var parts []string
	if len(o.Worker) > 0 {
		parts = append(parts, "worker: "+joinKeys(o.Worker))
	}
	if len(o.Connector) > 0 {
		parts = append(parts, "connector: "+joinKeys(o.Connector))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func pacedMeasure(t *T, env harness.Env, o Options) pacedRun {
	ctx, cancel := context.WithTimeout(t.Context(), o.PacedWarmup+o.PacedWindow+10*time.Minute)
	defer cancel()
	topic := harness.UniqueName("bench_paced")
	id, g := benchTopic(t, env, o, topic, freshTopicConfig)
	conn := kafkaConnector(env, o, topic, "bench.paced", 2, o.PacedCommit)
	run := StartRun(t, env, o, conn, time.Second)
	run.WaitRunning(ctx)

	pc := &pacer{Gen: g, SchemaID: id, Partitions: int64(o.KafkaPartitions), Rate: o.PacedRate}
	produced := make(chan error, 1)
	go func() {
		_, err := pc.produce(ctx, env.KafkaBootstrap, topic)
		produced <- err
	}()
	defer func() {
		pc.stop()
		if err := <-produced; err != nil && ctx.Err() == nil {
			t.Errorf("produce: %v", err)
		}
	}()
	first, _ := run.waitMetric(ctx, "the first commit", func(s MetricSample) bool { return s.Commits > 0 })
	t.Logf("first commit %.1f s after the start; warming up for %s", first.At.Sub(run.Started).Seconds(), o.PacedWarmup)
	sleep(ctx, o.PacedWarmup)
	s0, cpu0 := run.Metrics.Last(), run.Procs.CPU()
	h0, t0 := pc.Handed(), time.Now()
	sleep(ctx, o.PacedWindow)
	s1, cpu1 := run.Metrics.Last(), run.Procs.CPU()
	h1, t1 := pc.Handed(), time.Now()
	if ctx.Err() != nil {
		t.Fatalf("paced run: %v", ctx.Err())
	}
	r := pacedRun{
		Window:    t1.Sub(t0),
		CPU:       CPUDelta(cpu0, cpu1),
		Produced:  float64(h1-h0) / t1.Sub(t0).Seconds(),
		Records:   s1.RecordsIn - s0.RecordsIn,
		Commits:   s1.Commits - s0.Commits,
		PeakRSSKB: run.Procs.PeakSumKB(),
		PeakAnon:  run.Procs.PeakAnonSumKB(),
		Procs:     run.Procs.Procs(),
		Load:      LoadAvg(),
	}
	r.Read = r.Records / s1.At.Sub(s0.At).Seconds()
	if o.Profile {
		r.Profile = profileNow(t, o, run, o.ProfileSeconds)
	}
	run.Stop()
	return r
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
