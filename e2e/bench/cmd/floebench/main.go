// Command floebench runs floe's benchmarks against the real services and
// prints Markdown tables; e2e/bench/run (make bench) is its front end.
//
//	floebench [flags] datagen|kafka|freshness|partitioners|maintenance|lake|recovery|all …
//
// Every flag can also be set in the environment as FLOE_BENCH_<FLAG>
// (upper case, dashes as underscores): FLOE_BENCH_QUICK=1,
// FLOE_BENCH_FRESH_DURATION=10m. See e2e/bench/README.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/floehq/floe/e2e/bench"
	"github.com/floehq/floe/e2e/harness"
)

var sections = []string{"datagen", "kafka", "freshness", "partitioners", "maintenance", "lake", "recovery", "distributed", "paced"}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	env := harness.LoadEnv()
	if env.RepoDir == "" {
		fmt.Fprintln(os.Stderr, "floebench: run it inside the floe repository (e2e/bench/run does)")
		return 2
	}
	quick := os.Getenv("FLOE_BENCH_QUICK") == "1" || os.Getenv("FLOE_BENCH_QUICK") == "true"
	for _, a := range args {
		if a == "--quick" || a == "-quick" || a == "--quick=true" || a == "-quick=true" {
			quick = true
		}
	}
	o := bench.Defaults(env.RepoDir, quick)
	fs := flag.NewFlagSet("floebench", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "usage: floebench [flags] %s|all …\n\nflags (also FLOE_BENCH_<FLAG> in the environment):\n", strings.Join(sections, "|"))
		fs.PrintDefaults()
	}
	fs.BoolVar(&o.Quick, "quick", o.Quick, "short durations: each section a few minutes")
	fs.IntVar(&o.Reps, "reps", o.Reps, "repetitions of each throughput measurement (medians are quoted)")
	fs.Int64Var(&o.DatagenRecords, "datagen-records", o.DatagenRecords, "datagen: records per floe run")
	fs.IntVar(&o.RawRecords, "raw-records", o.RawRecords, "kafka: records per raw-limit run; datagen: per chunk of its run (which writes as many as floe)")
	fs.DurationVar(&o.CommitInterval, "commit-interval", o.CommitInterval, "datagen, kafka: commit.interval.ms")
	fs.Int64Var(&o.KafkaRecords, "kafka-records", o.KafkaRecords, "kafka: records preloaded into the topic")
	fs.IntVar(&o.KafkaPartitions, "kafka-partitions", o.KafkaPartitions, "kafka, freshness, lake, recovery: topic partitions")
	fs.IntVar(&o.KafkaTasks, "kafka-tasks", o.KafkaTasks, "kafka: tasks.max, and the bare consumers and raw-limit goroutines")
	fs.DurationVar(&o.FreshDuration, "fresh-duration", o.FreshDuration, "freshness: length of the 1 s-commit run (commit latency series)")
	fs.DurationVar(&o.FreshShortDuration, "fresh-short-duration", o.FreshShortDuration, "freshness: length of the 10 s-commit run")
	fs.Float64Var(&o.FreshRate, "fresh-rate", o.FreshRate, "freshness: records/s to produce (0: half of the rate the producer and floe sustain together, probed)")
	fs.DurationVar(&o.FreshWarmup, "fresh-warmup", o.FreshWarmup, "freshness: rows produced this soon after the start are left out")
	fs.Int64Var(&o.FreshCalibRecords, "fresh-calibration-records", o.FreshCalibRecords, "freshness: records of the max-throughput measurement when the kafka section did not run")
	fs.DurationVar(&o.LakeDuration, "lake-duration", o.LakeDuration, "lake: producing time of each run")
	fs.Float64Var(&o.LakeRate, "lake-rate", o.LakeRate, "lake: records/s to produce (0: a quarter of floe's measured max)")
	fs.DurationVar(&o.PartDuration, "part-duration", o.PartDuration, "partitioners: length of each run")
	fs.DurationVar(&o.PartInterval, "part-interval", o.PartInterval, "partitioners: commit.interval.ms")
	fs.IntVar(&o.PartReps, "part-reps", o.PartReps, "partitioners: runs of each partitioner (interleaved)")
	fs.Float64Var(&o.PartZipfS, "part-zipf-s", o.PartZipfS, "partitioners: Zipf exponent of the keys")
	fs.StringVar(&o.PartitionBy, "partition-by", o.PartitionBy, "partitioners, maintenance: the table's partition spec")
	fs.DurationVar(&o.MaintDuration, "maint-duration", o.MaintDuration, "maintenance: length of each run")
	fs.DurationVar(&o.MaintSample, "maint-sample", o.MaintSample, "maintenance: how often files and manifests are counted")
	fs.Float64Var(&o.MaintDatagenCap, "maint-rate", o.MaintDatagenCap, "maintenance: datagen.rate of both runs, the seed's 30,000 by default (0: as fast as floe goes)")
	fs.Func("maint-config", "maintenance: key=value[,key=value…] added to (or, with an empty value, removed from) the with-maintenance run's keys", func(v string) error {
		return setKeys(o.MaintConfig, v)
	})
	fs.IntVar(&o.ScanRuns, "scan-runs", o.ScanRuns, "maintenance: full-scan runs per engine and table")
	fs.IntVar(&o.RecoveryKills, "recovery-kills", o.RecoveryKills, "recovery: kill -9s of each process (host, source, sink, partitioner), and no-kill baselines")
	fs.IntVar(&o.RecoveryBrokerRestarts, "recovery-broker-restarts", o.RecoveryBrokerRestarts, "recovery: restarts of the (private) broker")
	fs.Float64Var(&o.RecoveryRate, "recovery-rate", o.RecoveryRate, "recovery: records/s produced throughout")
	fs.IntVar(&o.DistKills, "dist-kills", o.DistKills, "distributed: kill -9s of the worker that runs the connector")
	fs.Float64Var(&o.DistRate, "dist-rate", o.DistRate, "distributed: records/s produced throughout")
	fs.DurationVar(&o.DistCostWindow, "dist-cost-window", o.DistCostWindow, "distributed: each steady window of the cost (3 workers, 1 worker)")
	fs.IntVar(&o.DistRebalances, "dist-rebalances", o.DistRebalances, "distributed: joins and leaves (each) of a fourth worker")
	fs.IntVar(&o.DistConnectors, "dist-connectors", o.DistConnectors, "distributed: connectors during the rebalances (>= 4 so that a join moves one)")
	fs.DurationVar(&o.RecoveryBrokerDown, "recovery-broker-down", o.RecoveryBrokerDown, "recovery: how long the broker stays down")
	fs.Func("recovery-config", "recovery: key=value[,key=value…] added to (or, with an empty value, removed from) the connector's keys", func(v string) error {
		return setKeys(o.RecoveryConfig, v)
	})
	fs.Float64Var(&o.PacedRate, "paced-rate", o.PacedRate, "paced: records/s produced throughout")
	fs.DurationVar(&o.PacedWindow, "paced-window", o.PacedWindow, "paced: the measured steady window")
	fs.Func("worker", "every section: worker config key=value[,key=value…] of every floe run (e.g. plugin.transport.tls=true)", func(v string) error {
		return setKeys(o.Worker, v)
	})
	fs.Func("connector", "sections started through StartRun: connector key=value[,key=value…] added to the connector (e.g. batch.linger.ms=300)", func(v string) error {
		return setKeys(o.Connector, v)
	})
	fs.BoolVar(&o.Profile, "profile", o.Profile, "datagen, kafka: perf-profile floe and its plugins (unstripped builds) during the second run")
	fs.IntVar(&o.ProfileSeconds, "profile-seconds", o.ProfileSeconds, "length of the perf recording")
	out := fs.String("out", "", "results file (default bench-results/<date>.md, appended)")
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := os.LookupEnv("FLOE_BENCH_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))); ok {
			_ = f.Value.Set(v)
		}
	})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	want := fs.Args()
	if len(want) == 0 {
		fs.Usage()
		return 2
	}
	if slices.Contains(want, "all") {
		want = sections
	}
	for _, s := range want {
		if !slices.Contains(sections, s) {
			fmt.Fprintf(os.Stderr, "floebench: unknown section %q (%s or all)\n", s, strings.Join(sections, ", "))
			return 2
		}
	}
	if *out == "" {
		*out = filepath.Join(o.ResultsDir, time.Now().Format("2006-01-02")+".md")
	}

	rep := bench.NewReport(os.Stdout)
	mode := "full"
	if o.Quick {
		mode = "quick"
	}
	rep.Heading(1, "floe benchmarks, %s (%s)", time.Now().Format("2006-01-02 15:04 MST"), mode)
	rep.Para("Command: `%s`. floe %s, %s, %d CPUs, load average at start %s.",
		strings.Join(append([]string{"floebench"}, bench.NeutralArgs(env.RepoDir, args)...), " "), gitDescribe(env.RepoDir), runtime.Version(), runtime.NumCPU(), bench.LoadAvg())

	state := &bench.State{}
	failed := false
	for _, s := range want {
		start := time.Now()
		err := bench.Run(s, os.Stderr, func(t *bench.T) {
			switch s {
			case "datagen":
				bench.Datagen(t, o, rep)
			case "kafka":
				bench.Kafka(t, o, rep, state)
			case "freshness":
				bench.Freshness(t, o, rep, state)
			case "partitioners":
				bench.Partitioners(t, o, rep)
			case "maintenance":
				bench.Maintenance(t, o, rep)
			case "lake":
				bench.Lake(t, o, rep, state)
			case "recovery":
				bench.Recovery(t, o, rep)
			case "paced":
				bench.Paced(t, o, rep)
			case "distributed":
				bench.Distributed(t, o, rep)
			}
		})
		if err != nil {
			failed = true
			rep.Failure(s, err)
		}
		rep.Para("_%s took %s._", s, time.Since(start).Round(time.Second))
	}

	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "floebench: %v\n", err)
		return 1
	}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		_, err = f.WriteString(rep.String() + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "floebench: write %s: %v\n", *out, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "floebench: results appended to %s\n", *out)
	if failed {
		return 1
	}
	return 0
}

// setKeys applies a flag's key=value[,key=value…] to m: an empty value
// deletes the key.
func setKeys(m map[string]string, v string) error {
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", kv)
		}
		if val == "" {
			delete(m, k)
		} else {
			m[k] = val
		}
	}
	return nil
}

func gitDescribe(repo string) string {
	cmd := exec.Command("git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = repo
	b, err := cmd.Output()
	if err != nil {
		return "(unknown version)"
	}
	return strings.TrimSpace(string(b))
}
