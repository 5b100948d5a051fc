package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/e2e/harness"
	"github.com/floehq/floe/plugins/datagen/generate"
)

// FloeRun is one floe process running one connector, watched: /metrics
// polled, floe's and its plugins' memory and CPU sampled.
type FloeRun struct {
	F       *harness.Floe
	Name    string
	Metrics *MetricWatch
	Procs   *ProcWatch
	Started time.Time
}

// StartRun starts floe standalone with conn and the watchers.
func StartRun(t *T, env harness.Env, o Options, conn harness.Connector, metricEvery time.Duration) *FloeRun {
	conn.Config = maps.Clone(conn.Config)
	maps.Copy(conn.Config, o.Connector)
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}, Worker: o.Worker})
	r := &FloeRun{F: f, Name: conn.Name, Started: time.Now()}
	r.Procs = WatchProcs(f.PID(), 200*time.Millisecond)
	r.Metrics = WatchMetrics(f.API, conn.Name, metricEvery)
	t.Cleanup(func() { r.Procs.Stop(); r.Metrics.Stop() })
	return r
}

// Stop stops the watchers, then floe (SIGTERM: a final commit, exit 0).
func (r *FloeRun) Stop() {
	r.Procs.Stop()
	r.Metrics.Stop()
	r.F.Stop()
}

// Status is the connector's status now.
func (r *FloeRun) Status(ctx context.Context) (harness.ConnectorStatus, error) {
	return r.F.API.Status(ctx, r.Name)
}

// WaitRunning waits until the connector and its tasks run.
func (r *FloeRun) WaitRunning(ctx context.Context) {
	r.F.WaitStatus(ctx, r.Name, "connector RUNNING", false, harness.ConnectorStatus.Running)
}

// waitMetric waits until the newest /metrics sample satisfies ok and
// returns it with the processes' CPU readings at that moment.
func (r *FloeRun) waitMetric(ctx context.Context, what string, ok func(MetricSample) bool) (MetricSample, map[int]ProcSample) {
	var s MetricSample
	var cpu map[int]ProcSample
	r.F.WaitFor(ctx, what, func(ctx context.Context) (bool, string, error) {
		s = r.Metrics.Last()
		cpu = r.Procs.CPU()
		return ok(s), fmt.Sprintf("records in %.0f, commits %.0f", s.RecordsIn, s.Commits), nil
	})
	return s, cpu
}

// schemaJSON reads the benchmark schema.
func schemaJSON(t *T, o Options) string {
	b, err := os.ReadFile(o.SchemaFile)
	if err != nil {
		t.Fatalf("benchmark schema: %v", err)
	}
	return string(b)
}

// datagenKeys are the datagen settings every benchmark connector states
// explicitly, so the benchmark's own generator (datagenGenerator) makes
// exactly the records the plugin makes, whatever the plugin's defaults.
func datagenKeys(o Options, partitions int, skew string, zipfS float64, keys int) map[string]string {
	if skew == "" {
		skew = string(generate.Uniform)
	}
	if zipfS == 0 {
		zipfS = generate.DefaultZipfS
	}
	if keys == 0 {
		keys = generate.DefaultKeyCardinality
	}
	return map[string]string{
		"datagen.schema.file":       o.SchemaFile,
		"datagen.partitions":        strconv.Itoa(partitions),
		"datagen.seed":              strconv.FormatInt(o.Seed, 10),
		"datagen.key.field":         "customer_id",
		"datagen.key.skew":          skew,
		"datagen.key.zipf.s":        strconv.FormatFloat(zipfS, 'g', -1, 64),
		"datagen.key.cardinality":   strconv.Itoa(keys),
		"datagen.timestamp.start":   generate.DefaultTimestampStart.Format(time.RFC3339),
		"datagen.timestamp.step.ms": strconv.FormatInt(generate.DefaultTimestampStep.Milliseconds(), 10),
	}
}

// datagenGenerator is the generator of a connector config made with
// datagenKeys.
func datagenGenerator(t *T, o Options, cfg map[string]string) *generate.Generator {
	s, err := generate.Parse(schemaJSON(t, o))
	if err != nil {
		t.Fatalf("%v", err)
	}
	num := func(k string) int64 {
		n, err := strconv.ParseInt(cfg[k], 10, 64)
		if err != nil {
			t.Fatalf("config %s=%q: %v", k, cfg[k], err)
		}
		return n
	}
	zipf, _ := strconv.ParseFloat(cfg["datagen.key.zipf.s"], 64)
	start, _ := time.Parse(time.RFC3339, cfg["datagen.timestamp.start"])
	g, err := generate.New(s, generate.Options{
		Seed:           uint64(num("datagen.seed")),
		KeyField:       cfg["datagen.key.field"],
		KeyCardinality: int(num("datagen.key.cardinality")),
		KeySkew:        generate.Skew(cfg["datagen.key.skew"]),
		ZipfS:          zipf,
		TimestampStart: start,
		TimestampStep:  time.Duration(num("datagen.timestamp.step.ms")) * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return g
}

// merge returns the union of maps, later ones winning.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// cpuTable renders per-process CPU seconds over a window, biggest first,
// with shares of the total and CPU-µs per record.
func cpuTable(cpu map[string]time.Duration, records float64) ([]string, [][]string) {
	var total time.Duration
	names := make([]string, 0, len(cpu))
	for n, d := range cpu {
		total += d
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(cpu[b] - cpu[a]) })
	rows := [][]string{}
	for _, n := range names {
		rows = append(rows, []string{ShortName(n), F(cpu[n].Seconds(), 2), Pct(cpu[n].Seconds() / total.Seconds()),
			F(cpu[n].Seconds()*1e6/records, 2)})
	}
	rows = append(rows, []string{"**total**", F(total.Seconds(), 2), "100 %", F(total.Seconds()*1e6/records, 2)})
	return []string{"process", "CPU-s", "share", "CPU-µs / record"}, rows
}

func sumCPU(cpu map[string]time.Duration) time.Duration {
	var total time.Duration
	for _, d := range cpu {
		total += d
	}
	return total
}

// procMemTable renders the processes' peak RSS (VmHWM), their own
// memory's peak, and what each held when their summed RSS peaked.
func procMemTable(procs []ProcSample) ([]string, [][]string) {
	rows := [][]string{}
	mib := func(kb int64) string { return F(float64(kb)/1024, 0) }
	for _, p := range procs {
		rows = append(rows, []string{ShortName(p.Name), strconv.Itoa(p.PID), mib(p.HWMKB), mib(p.PeakAnonKB),
			mib(p.AtPeakRSSKB), mib(p.AtPeakAnonKB), mib(p.AtPeakRSSKB - p.AtPeakAnonKB)})
	}
	return []string{"process", "pid", "VmHWM MiB", "peak anon + shmem MiB",
		"RSS at the summed peak MiB", "of it anon + shmem", "of it file pages"}, rows
}

func joinKeys(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "`" + k + "=" + m[k] + "`"
	}
	return strings.Join(parts, ", ")
}
