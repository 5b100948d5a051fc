package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// freshRun is one freshness run's result.
type freshRun struct {
	Interval time.Duration
	Duration time.Duration
	Rate     float64 // produced records / producing time
	Produced int64
	Drain    time.Duration // from the producer's end until all committed
	Latency  *MsHistogram  // rows after the warm-up, to the commit's visibility
	// SnapLatency is the same rows against their snapshot's timestamp
	// (rows of expired snapshots left out).
	SnapLatency *MsHistogram
	First100    *MsHistogram // rows of the first 100 commits after the warm-up
	Last100     *MsHistogram // rows of the last 100 commits
	Commits     int
	CommitDur   []float64 // seconds, in commit order
	Merged      int
	Lags        []float64 // floe_commit_lag_seconds after each commit
	Gaps        []float64 // seconds between consecutive visible commits after the warm-up
	// ReadLags are, per /metrics sample after the warm-up, the seconds
	// since the newest record floe had read was stamped: producer,
	// broker and the source's buffer.
	ReadLags []float64
	Files    Files
	// ManifestsAt100 is the number of data manifests of the 100th
	// commit's snapshot (0 with fewer commits).
	ManifestsAt100 int
}

// Freshness is section 3 (issue 4): per-row latency from the produce
// timestamp to visibility in a committed snapshot, at half of the rate
// the producer and floe sustain together (sustainedRate), with 1 s and
// 10 s commits; commit latency over a long run.
func Freshness(t *T, o Options, rep *Report, st *State) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.SchemaRegistry, harness.Plugin("kafka"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Plugin("iceberg-maintenance"))
	rep.Heading(2, "3. freshness (issue 4)")

	rate, source := o.FreshRate, "--fresh-rate"
	var steps []sustainStep
	if rate == 0 {
		maxRate, from := maxKafkaRate(t, env, o, rep, st)
		var sustained float64
		sustained, steps = sustainedRate(t, env, o, maxRate)
		rate = sustained / 2
		source = fmt.Sprintf("half of the %s rec/s that the producer and floe sustain together on this machine, probed down from %s", Num(sustained), from)
		if !steps[len(steps)-1].Held {
			source = fmt.Sprintf("half of %s rec/s, the probe's last step, which did not hold either (producer and floe sustained no step of the probe from %s)", Num(sustained), from)
		}
	}
	rep.Para("Producer: one librdkafka producer (`kafkatest.Produce`, acks=all, idempotent, linger 20 ms) paced at **%s records/s** (%s), each record stamped with `time.Now()` as its Kafka timestamp, "+
		"into a new %d-partition topic (%s: the broker keeps minutes, not the run); floe: `kafka` → `hash` → `iceberg`, `tasks.max=2`, with the maintenance plugin expiring snapshots (%s; no compaction). "+
		"Latency of a row = the time its commit became visible − its `_source_timestamp` (read back from every live data file with iceberg-go + Parquet). "+
		"A commit is visible once the catalog holds it; the bench takes the first `/metrics` poll (every 100 ms) whose `floe_commits_total` counts it, so a row's latency is at most one poll too high; "+
		"a file's commit is found by its data sequence number, which survives expiry. The snapshot's own timestamp is taken when the commit is planned, before its metadata is written: "+
		"latency against it is shown too (snapshot p99), over the rows of snapshots that were not expired, so with expiry only about the last minute's. Rows produced in the first %s are left out (consumer-group join). "+
		"Commit latency: each commit's duration from floe's `floe_commit_duration_seconds` (its `_sum` growth between `/metrics` polls every 100 ms).",
		Num(rate), source, o.KafkaPartitions, joinKeys(freshTopicConfig), maintKeys(), o.FreshWarmup)

	if len(steps) > 0 {
		rows := make([][]string, len(steps))
		for i, s := range steps {
			rows[i] = []string{Num(s.Target), Num(s.Produced), Num(s.Read), F(s.Behind, 1), fmt.Sprint(s.Held)}
		}
		rep.Para("Sustainable rate: one floe run (1 s commits, `tasks.max=2`) ingests a new topic while the same producer produces for %s per step, from floe's max down by a factor %.1f a step, floe catching up in between; "+
			"a step holds when the producer reached %.0f %% of the rate asked and floe was at most %.0f s of production behind at its end.",
			o.SustainStep, sustainShrink, 100*sustainReach, sustainBehind)
		rep.Table([]string{"asked rec/s", "produced rec/s", "floe read rec/s", "behind s at the end", "held"}, rows)
	}
	runs := []freshRun{
		freshnessRun(t, env, o, rate, time.Second, o.FreshDuration),
		freshnessRun(t, env, o, rate, 10*time.Second, o.FreshShortDuration),
	}
	rows := [][]string{}
	for _, r := range runs {
		rows = append(rows, []string{strconv.FormatInt(r.Interval.Milliseconds(), 10), r.Duration.String(), Num(r.Rate), Num(float64(r.Latency.N())),
			F(r.Latency.Quantile(0.5)/1000, 3), F(r.Latency.Quantile(0.99)/1000, 3), F(r.Latency.Max()/1000, 3), strconv.Itoa(r.Commits), F(r.Drain.Seconds(), 1),
			F(Quantile(r.Lags, 0.5), 2), F(Quantile(r.Lags, 0.99), 2), F(r.SnapLatency.Quantile(0.99)/1000, 3),
			F(Quantile(r.Gaps, 0.5), 2), F(Quantile(r.Gaps, 0.99), 2), F(Quantile(r.Gaps, 1), 2),
			F(Quantile(r.ReadLags, 0.5), 2), F(Quantile(r.ReadLags, 0.99), 2), F(Quantile(r.ReadLags, 1), 2)})
	}
	rep.Table([]string{"commit.interval.ms", "run", "produced rec/s", "rows measured", "p50 s", "p99 s", "max s", "commits", "drain s after producing stopped",
		"floe commit lag p50 s", "p99 s", "snapshot p99 s", "commit spacing p50 s", "p99 s", "max s", "read lag p50 s", "p99 s", "max s"}, rows)
	rep.Para("Commit lag is floe's own `floe_commit_lag_seconds` read after each commit: the age of the oldest batch the commit covered, from when the host received it. " +
		"A row's latency minus that is time spent before floe had it (producer linger, broker, the source's fetch and batching). " +
		"Commit spacing is the time between consecutive visible commits: at an interval of 1 s, a long gap is a late barrier, a slow flush or a slow commit, and every row of the next commit waits for it. " +
		"Read lag is, at each `/metrics` poll, how long ago the newest record floe had read was produced (producer linger, broker, the source's fetch and buffer, and the host's backpressure): " +
		"when it grows past the commit interval, rows wait before floe, not in its checkpoints.")
	one := runs[0]
	p99 := one.Latency.Quantile(0.99) / 1000
	rep.Target("p99 ≤ 2 s at commit.interval.ms=1000", F(p99, 3)+" s", p99 <= 2, one.Latency.N() > 0)
	rep.Para("")

	// Commit latency over the long run.
	d := one.CommitDur
	n := len(d)
	if n == 0 {
		rep.Para("No commit durations were observed.")
		return
	}
	k := min(100, n)
	first, last := d[:k], d[n-k:]
	fp50, fp99, lp50, lp99 := Quantile(first, 0.5)*1000, Quantile(first, 0.99)*1000, Quantile(last, 0.5)*1000, Quantile(last, 0.99)*1000
	overlap := ""
	if n < 2*k {
		overlap = fmt.Sprintf(" With %d commits the first and the last %d overlap: this run is too short to show a trend.", n, k)
	}
	rep.Para("Commit latency of the %s run at 1 s commits (%d commits observed, counted from floe's start, warm-up included; %d were merged into a shared poll and averaged). "+
		"Freshness of the first window counts the first %d commits after the warm-up.%s", one.Duration, n, one.Merged, k, overlap)
	rep.Table([]string{"commits", "p50 ms", "p99 ms", "freshness p50 s", "freshness p99 s"}, [][]string{
		{fmt.Sprintf("first %d", k), F(fp50, 1), F(fp99, 1), F(one.First100.Quantile(0.5)/1000, 3), F(one.First100.Quantile(0.99)/1000, 3)},
		{fmt.Sprintf("last %d", k), F(lp50, 1), F(lp99, 1), F(one.Last100.Quantile(0.5)/1000, 3), F(one.Last100.Quantile(0.99)/1000, 3)},
	})
	flat := lp50 <= 1.5*fp50 && lp99 <= 1.5*max(fp99, fp50*2)
	rep.Target("commit latency flat from the first to the last 100 commits (last p50 ≤ 1.5 × first p50, last p99 ≤ 1.5 × the larger of first p99 and 2 × first p50: a 100-commit p99 is nearly its max)",
		fmt.Sprintf("p50 %s → %s ms, p99 %s → %s ms", F(fp50, 1), F(lp50, 1), F(fp99, 1), F(lp99, 1)), flat, n >= 2*k)
	rep.Para("")
	at100 := "–"
	if one.ManifestsAt100 > 0 {
		at100 = strconv.Itoa(one.ManifestsAt100)
	}
	rep.Para("What every commit carries along at the end of the run: %d snapshots in metadata.json (%s, rewritten by every commit; expiry bounds it), "+
		"%d data manifests in the manifest list (%s at the 100th commit; the sink turns manifest merging on, and iceberg-go merges a bin of manifests once it holds `commit.manifest.min-count-to-merge` = 100 by default), %d data files (%s). "+
		"The machine's load (other sessions) also changes over a run; this is one run.",
		one.Files.Snapshots, MB(float64(one.Files.MetadataBytes)), one.Files.Manifests, at100, one.Files.DataFiles, MB(float64(one.Files.Bytes)))
}

// maxKafkaRate is floe's max kafka → iceberg rate: section 2's median
// when it ran, else measured now on o.FreshCalibRecords preloaded records;
// source says which.
func maxKafkaRate(t *T, env harness.Env, o Options, rep *Report, st *State) (rate float64, source string) {
	if st.KafkaRate > 0 {
		return st.KafkaRate, "section 2's median floe rate"
	}
	t.Logf("measuring floe's max kafka → iceberg rate on %d records", o.FreshCalibRecords)
	kt := preload(t, env, o, o.FreshCalibRecords)
	var fr floeThroughput
	for _, err := range t.Retry(2, "max-rate run", func(t *T) { fr, _ = kafkaFloeRun(t, env, o, kt, false) }) {
		rep.Para("**A floe run failed and was run again:** %s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	// Later sections reuse it rather than measure again.
	st.KafkaRate = fr.Rate()
	return fr.Rate(), fmt.Sprintf("floe's max measured now (%s rec/s over %s preloaded records, `commit.interval.ms=%d`, one run)",
		Num(fr.Rate()), Num(float64(o.FreshCalibRecords)), o.CommitInterval.Milliseconds())
}

// freshnessRun produces at rate for d into a new topic that floe ingests
// with the given commit interval, and measures.
func freshnessRun(t *T, env harness.Env, o Options, rate float64, interval, d time.Duration) freshRun {
	ctx, cancel := context.WithTimeout(t.Context(), d+30*time.Minute)
	defer cancel()
	res := freshRun{Interval: interval, Duration: d, Latency: NewMsHistogram(600_000), First100: NewMsHistogram(600_000), Last100: NewMsHistogram(600_000),
		SnapLatency: NewMsHistogram(600_000)}
	topic := harness.UniqueName("bench_fresh")
	// The topic keeps minutes, not the run: at half of floe's max a
	// 30-minute run would put tens of GB in the broker. floe reads
	// within seconds, and latency is read back from the table.
	id, g := benchTopic(t, env, o, topic, freshTopicConfig)
	const table = "bench.fresh"
	conn := kafkaConnector(env, o, topic, table, 2, interval)
	maps.Copy(conn.Config, freshMaintenance)
	run := StartRun(t, env, o, conn, 100*time.Millisecond)
	run.WaitRunning(ctx)

	pc := &pacer{Gen: g, SchemaID: id, Partitions: int64(o.KafkaPartitions), Rate: rate, For: d, StampEvery: 1000}
	t.Logf("producing at %.0f records/s for %s (commit.interval.ms=%d)", rate, d, interval.Milliseconds())
	got, err := pc.produce(ctx, env.KafkaBootstrap, topic)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	stopped := time.Now()
	start, stamps := pc.Start, pc.Stamps
	res.Produced = int64(got)
	res.Rate = float64(pc.Handed()) / stopped.Sub(start).Seconds()
	run.F.WaitStatus(ctx, conn.Name, "every produced record committed", false, func(s harness.ConnectorStatus) bool {
		return s.Floe != nil && s.Floe.RecordsOut >= res.Produced
	})
	res.Drain = time.Since(stopped)
	time.Sleep(300 * time.Millisecond) // a /metrics poll or two past the last commit
	samples := run.Metrics.Samples()
	run.Stop()
	res.CommitDur, res.Merged = CommitDurations(samples)
	res.ReadLags = readLags(samples, stamps, start.Add(o.FreshWarmup))
	res.Lags = CommitLags(samples)

	// Per-row latency from the table.
	cat, err := OpenEmbedded(ctx, run.F.DataDir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer func() { _ = cat.Close() }()
	tbl, err := cat.Load(ctx, table)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if res.Files, err = Inspect(ctx, tbl); err != nil {
		t.Fatalf("%v", err)
	}
	commits, err := Commits(tbl, conn.Name) // those not expired
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(commits) >= 100 {
		if snap := tbl.SnapshotByID(commits[99].SnapshotID); snap != nil {
			if fs, err := tbl.FS(ctx); err == nil {
				if ms, err := snap.Manifests(fs); err == nil {
					res.ManifestsAt100 = len(ms)
				}
			}
		}
	}
	// Visibility of each commit: the first /metrics sample that counts
	// it (floe_commits_total rises once the sink's catalog commit
	// returned), so at most one poll (100 ms) late. A snapshot's own
	// timestamp is taken when iceberg-go plans it, before the manifest
	// list, metadata.json and the catalog write, so it flatters.
	visible := commitTimes(samples)
	snapAt := map[int64]time.Time{}
	for _, c := range commits {
		snapAt[c.SnapshotID] = c.At
	}
	files, err := LiveFiles(ctx, tbl)
	if err != nil {
		t.Fatalf("%v", err)
	}
	// A file's data sequence number is its commit's (the table has no
	// other writer in this run, and expiry keeps it), so the rank of the
	// distinct numbers is the commit's ordinal, also for snapshots that
	// maintenance expired.
	var seqs []int64
	for _, f := range files {
		seqs = append(seqs, f.Seq)
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	ordinal := map[int64]int{}
	for i, s := range seqs {
		ordinal[s] = i
	}
	res.Commits = len(seqs)
	useMetrics := len(visible) == len(seqs)
	if !useMetrics {
		t.Logf("/metrics counted %d commits, the table holds %d: latency falls back to snapshot timestamps", len(visible), len(seqs))
	}
	commitAt := func(f LiveFile) (time.Time, bool) {
		if useMetrics {
			return visible[ordinal[f.Seq]], true
		}
		at, ok := snapAt[f.SnapshotID]
		return at, ok
	}
	warm := start.Add(o.FreshWarmup).UnixMicro()
	// Rows per commit ordinal, for the windows of the first and last 100
	// commits after the warm-up.
	firstAfterWarm := len(seqs)
	perCommitMax := make([]int64, len(seqs))
	slices.SortFunc(files, func(a, b LiveFile) int { return cmp.Compare(a.Seq, b.Seq) })
	var rows int64
	for _, f := range files {
		at, ok := commitAt(f)
		if !ok {
			t.Fatalf("data file %s was added by snapshot %d, which is no commit of %s", f.Path, f.SnapshotID, conn.Name)
		}
		ord := ordinal[f.Seq]
		visUs := at.UnixMicro()
		snapUs, hasSnap := int64(0), false
		if sa, ok := snapAt[f.SnapshotID]; ok {
			snapUs, hasSnap = sa.UnixMicro(), true
		}
		err := ReadTimestamps(ctx, f.Path, "_source_timestamp", func(us int64) {
			rows++
			if us < warm {
				return
			}
			firstAfterWarm = min(firstAfterWarm, ord)
			ms := (visUs - us) / 1000
			res.Latency.Add(ms)
			perCommitMax[ord] = max(perCommitMax[ord], ms)
			if hasSnap {
				res.SnapLatency.Add((snapUs - us) / 1000)
			}
			if ord >= len(seqs)-100 {
				res.Last100.Add(ms)
			}
		})
		if err != nil {
			t.Fatalf("%v", err)
		}
	}
	// Second pass for the first 100 commits after the warm-up (known now).
	for _, f := range files {
		ord := ordinal[f.Seq]
		if ord < firstAfterWarm || ord >= firstAfterWarm+100 {
			continue
		}
		at, _ := commitAt(f)
		visUs := at.UnixMicro()
		if err := ReadTimestamps(ctx, f.Path, "_source_timestamp", func(us int64) {
			if us >= warm {
				res.First100.Add((visUs - us) / 1000)
			}
		}); err != nil {
			t.Fatalf("%v", err)
		}
	}
	// Where the tail comes from: the spacing of visible commits (a late
	// barrier, a slow flush or commit shows as a long gap) against the
	// oldest row of the commits with the worst latency.
	if useMetrics && firstAfterWarm < len(seqs) {
		for i := firstAfterWarm + 1; i < len(visible); i++ {
			res.Gaps = append(res.Gaps, visible[i].Sub(visible[i-1]).Seconds())
		}
		worst := make([]int, 0, len(seqs))
		for i := firstAfterWarm; i < len(seqs); i++ {
			worst = append(worst, i)
		}
		slices.SortFunc(worst, func(a, b int) int { return cmp.Compare(perCommitMax[b], perCommitMax[a]) })
		for _, i := range worst[:min(5, len(worst))] {
			gap := time.Duration(0)
			if i > 0 {
				gap = visible[i].Sub(visible[i-1])
			}
			t.Logf("commit %d at +%s: oldest row %d ms, %s after the previous commit",
				i, visible[i].Sub(start).Round(time.Millisecond), perCommitMax[i], gap.Round(time.Millisecond))
		}
	}
	if rows != res.Produced {
		t.Errorf("the table holds %d rows, %d were produced", rows, res.Produced)
	}
	if res.Latency.Negative() > 0 {
		t.Logf("%d rows had a snapshot timestamp before their produce timestamp (counted as 0 ms)", res.Latency.Negative())
	}
	t.Logf("interval %s: %d rows measured, p50 %.0f ms, p99 %.0f ms", interval, res.Latency.N(), res.Latency.Quantile(0.5), res.Latency.Quantile(0.99))
	return res
}

// freshTopicConfig bounds the freshness topic to about 5 minutes of
// records, in segments small enough to be deleted on time.
var freshTopicConfig = map[string]string{
	"retention.ms":  "300000",
	"segment.bytes": "134217728",
	"segment.ms":    "120000",
}

// freshMaintenance is what the freshness runs add to the connector: the
// maintenance plugin expiring snapshots the way a user at 1 s commits
// would configure it, so that metadata.json (rewritten by every commit)
// stops growing. Compaction and manifest rewrites stay off: they would
// replace the data files whose rows are measured, and the sink's
// manifest merging keeps the manifest list short.
var freshMaintenance = map[string]string{
	"maintenance":                             "iceberg-maintenance",
	"maintenance.poll.interval.ms":            "5000",
	"maintenance.rewrite-data-files.enabled":  "false",
	"maintenance.rewrite-manifests.enabled":   "false",
	"maintenance.delete-orphan-files.enabled": "false",
	// A minute of time travel: about 60 snapshots at 1 s commits,
	// expired once there are 90, at most every 15 s.
	"maintenance.expire-snapshots.trigger.snapshot-count": "90",
	"maintenance.expire-snapshots.min-interval.ms":        "15000",
	"maintenance.expire-snapshots.retain-last":            "10",
	"maintenance.expire-snapshots.max-age.ms":             "60000",
	"process.maintenance.cpus":                            "1",
}

// commitTimes returns, for the k-th commit since floe started, the time
// of the first /metrics sample that counted it.
// readLags returns, for each sample after from, how long ago the last
// record floe had read by then was produced (stamps holds every 1000th
// record's timestamp; records are spread evenly over the partitions, so
// the count read stands for a position in the production order).
func readLags(samples []MetricSample, stamps []time.Time, from time.Time) []float64 {
	var out []float64
	for _, s := range samples {
		i := int(s.RecordsIn) / 1000
		if s.At.Before(from) || s.RecordsIn == 0 || i >= len(stamps) {
			continue
		}
		out = append(out, s.At.Sub(stamps[i]).Seconds())
	}
	return out
}

// maintKeys lists freshMaintenance for the report.
func maintKeys() string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(freshMaintenance)) {
		kv = append(kv, fmt.Sprintf("`%s=%s`", k, freshMaintenance[k]))
	}
	return strings.Join(kv, ", ")
}

func commitTimes(samples []MetricSample) []time.Time {
	var out []time.Time
	for _, s := range samples {
		for len(out) < int(s.Commits+0.5) {
			out = append(out, s.At)
		}
	}
	return out
}
