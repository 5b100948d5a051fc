package bench

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// lakeCatalog is one catalog and store the lake section ingests into.
type lakeCatalog struct {
	name string
	keys map[string]string // connector keys; nil: the embedded defaults
	s3   bool              // the object store's request log counts its requests
}

// lakeResult is one lake run's figures.
type lakeResult struct {
	catalog   lakeCatalog
	rate      float64
	commits   int
	commitDur []float64 // seconds, after the warm-up
	commitAll []float64 // seconds, every commit
	fresh     []float64 // seconds, one per sampled row after the warm-up
	s3        map[string]int
	s3Total   int
	// serverCommit and serverLoad are the REST catalog's own time per
	// table commit (POST) and table load (GET), seconds.
	serverCommit, serverLoad []float64
	loadsPerCommit           float64
	// floeS3 and serverS3 are the store's time serving floe's commit
	// requests (manifests and manifest lists) and the catalog's
	// (metadata.json), seconds in all.
	floeS3, serverS3 float64
	maintS3          map[string]map[string]int // per maintenance task: S3 requests of one run, by op
}

// maintenanceTasks are the iceberg-maintenance tasks the lake section runs
// once each after ingestion, in this order.
var maintenanceTasks = []string{"rewrite-data-files", "expire-snapshots", "rewrite-manifests", "delete-orphan-files", "delete-metadata-files"}

// Lake is the lake section (issue 13): commit latency and freshness at
// 1 s commits on the REST catalog + S3 against the embedded SQLite
// catalog + local files in the same run, at a quarter of floe's max
// rate; the object store's requests per commit and per maintenance run.
func Lake(t *T, o Options, rep *Report, st *State) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.SchemaRegistry, harness.Plugin("kafka"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"), harness.Plugin("iceberg-maintenance"), harness.LakeServices)
	rep.Heading(2, "6. lake: REST catalog + S3 against the embedded catalog (issue 13)")
	rate, source := o.LakeRate, "--lake-rate"
	if rate == 0 {
		var maxRate float64
		maxRate, source = maxKafkaRate(t, env, o, rep, st)
		rate, source = maxRate/4, "a quarter of "+source
	}
	rep.Para("Producer: one librdkafka producer paced at **%s records/s** (%s) into a new %d-partition topic for %s per run; floe: `kafka` → `hash` → `iceberg`, `tasks.max=2`, "+
		"`commit.interval.ms=1000`, no maintenance during ingestion. Runs: the embedded defaults (SQLite catalog, local warehouse), then the REST catalog (Iceberg's REST server, OAuth2) "+
		"with its warehouse in versitygw's S3 API, both on this machine. "+
		"Freshness of a row = the first `/metrics` poll (every 100 ms) whose `floe_records_out_total` covers the row's place in the production order − its produce time "+
		"(every 100th row; records are spread evenly over the partitions and each commit covers a prefix of each), rows of the first %s left out. "+
		"Commit latency: each commit's duration from `floe_commit_duration_seconds`, the commits of the same first %s left out (every commit's p99 follows the target). S3 requests are the store's request log lines during the run; "+
		"after ingestion, `floe maintain --once --force <task>` runs each maintenance task once on the REST table and its requests are counted alone.",
		Num(rate), source, o.KafkaPartitions, o.LakeDuration, o.FreshWarmup, o.FreshWarmup)

	runs := []lakeResult{
		lakeRun(t, env, o, rate, lakeCatalog{name: "embedded SQLite + local files"}),
		lakeRun(t, env, o, rate, lakeCatalog{name: "REST catalog + S3", keys: env.Lake.RESTCatalogKeys(), s3: true}),
	}
	var rows [][]string
	for _, r := range runs {
		perCommit := "–"
		if r.catalog.s3 && r.commits > 0 {
			perCommit = fmt.Sprintf("%s (%s)", F(float64(r.s3Total)/float64(r.commits), 1), opsPer(r.s3, r.commits))
		}
		rows = append(rows, []string{r.catalog.name, Num(r.rate), fmt.Sprint(r.commits),
			F(Quantile(r.commitDur, 0.5)*1000, 1), F(Quantile(r.commitDur, 0.99)*1000, 1),
			F(Quantile(r.fresh, 0.5), 3), F(Quantile(r.fresh, 0.99), 3), perCommit})
	}
	rep.Table([]string{"catalog + store", "produced rec/s", "commits", "commit p50 ms", "commit p99 ms", "freshness p50 s", "freshness p99 s", "S3 requests per commit (by op)"}, rows)
	local, rest := runs[0], runs[1]
	lp99, rp99 := Quantile(local.commitDur, 0.99), Quantile(rest.commitDur, 0.99)
	rep.Target("commit p99 on REST + S3 within 3× of local", fmt.Sprintf("%s ms vs %s ms (%s×) over the %d and %d commits after the warm-up",
		F(rp99*1000, 1), F(lp99*1000, 1), F(rp99/lp99, 2), len(rest.commitDur), len(local.commitDur)),
		rp99 <= 3*lp99, len(rest.commitDur) > 0 && len(local.commitDur) > 0)
	ap99, alp99 := Quantile(rest.commitAll, 0.99), Quantile(local.commitAll, 0.99)
	rep.Para("Every commit, the warm-up's included: REST + S3 p50 %s ms, p99 %s ms; local p50 %s ms, p99 %s ms (%s×).",
		F(Quantile(rest.commitAll, 0.5)*1000, 1), F(ap99*1000, 1), F(Quantile(local.commitAll, 0.5)*1000, 1), F(alp99*1000, 1), F(ap99/alp99, 2))
	rep.Para("Where a REST + S3 commit's time goes: the REST catalog's own handling of the %d table commits (POST, which reads the current metadata.json from S3 and writes the next) "+
		"took p50 %s ms, p99 %s ms; floe loaded the table %s times per commit, each load p50 %s ms, p99 %s ms in the server. The rest of a commit is floe's side: "+
		"its manifest and manifest list PUT to S3 and the HTTP round trips. Both servers share this machine's 2 cores with floe, its plugins, Kafka and the registry.",
		len(rest.serverCommit), F(Quantile(rest.serverCommit, 0.5)*1000, 1), F(Quantile(rest.serverCommit, 0.99)*1000, 1),
		F(rest.loadsPerCommit, 1), F(Quantile(rest.serverLoad, 0.5)*1000, 1), F(Quantile(rest.serverLoad, 0.99)*1000, 1))
	if n := float64(rest.commits); n > 0 && len(rest.serverCommit) > 0 {
		commit, post := Mean(rest.commitAll)*1000, Mean(rest.serverCommit)*1000
		floeS3, serverS3 := rest.floeS3/n*1000, rest.serverS3/n*1000
		rep.Para("A REST + S3 commit's mean (every commit) %s ms, by who spends it: the REST catalog %s ms (its S3 requests for metadata.json %s ms of it), "+
			"the store serving floe's manifest and manifest list %s ms, and %s ms in floe (the sink's planning and encoding, iceberg-go reading the catalog's answer, "+
			"the host's call to the sink plugin) and on the way (HTTP round trips); the local commit's mean was %s ms.",
			F(commit, 1), F(post, 1), F(serverS3, 1), F(floeS3, 1), F(commit-post-floeS3, 1), F(Mean(local.commitAll)*1000, 1))
	}
	fp99 := Quantile(rest.fresh, 0.99)
	rep.Target("freshness p99 ≤ 2.5 s on REST + S3 at a quarter of max rate", F(fp99, 3)+" s", fp99 <= 2.5, len(rest.fresh) > 0)
	rep.Para("")
	var mrows [][]string
	for _, task := range maintenanceTasks {
		ops := rest.maintS3[task]
		n := 0
		for _, c := range ops {
			n += c
		}
		mrows = append(mrows, []string{task, fmt.Sprint(n), opsPer(ops, 1)})
	}
	rep.Para("S3 requests of one maintenance run per task on the REST table after ingestion (%d commits, small files, every snapshot kept):", rest.commits)
	rep.Table([]string{"task", "S3 requests", "by op"}, mrows)
}

// opsPer formats request counts by op, divided by n.
func opsPer(ops map[string]int, n int) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		parts = append(parts, fmt.Sprintf("%s %s", op, F(float64(ops[op])/float64(n), 1)))
	}
	return strings.Join(parts, ", ")
}

// lakeRun produces at rate for o.LakeDuration into a new topic that floe
// ingests into c with 1 s commits, and measures; on the object store it
// then runs each maintenance task once and counts its requests.
func lakeRun(t *T, env harness.Env, o Options, rate float64, c lakeCatalog) lakeResult {
	ctx, cancel := context.WithTimeout(t.Context(), o.LakeDuration+15*time.Minute)
	defer cancel()
	res := lakeResult{catalog: c}
	topic := harness.UniqueName("bench_lake")
	id, g := benchTopic(t, env, o, topic, freshTopicConfig)
	table := harness.UniqueName("bench") + ".lake"
	conn := kafkaConnector(env, o, topic, table, 2, time.Second)
	maps.Copy(conn.Config, c.keys)
	var s3From, restFrom int64
	if c.s3 {
		s3From, restFrom = env.Lake.S3LogSize(t), env.Lake.RESTLogSize(t)
	}
	run := StartRun(t, env, o, conn, 100*time.Millisecond)
	run.WaitRunning(ctx)

	pc := &pacer{Gen: g, SchemaID: id, Partitions: int64(o.KafkaPartitions), Rate: rate, For: o.LakeDuration, StampEvery: 100}
	t.Logf("%s: producing at %.0f records/s for %s", c.name, rate, o.LakeDuration)
	produced, err := pc.produce(ctx, env.KafkaBootstrap, topic)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	start, stamps := pc.Start, pc.Stamps
	res.rate = float64(produced) / time.Since(start).Seconds()
	run.F.WaitStatus(ctx, conn.Name, "every produced record committed", false, func(s harness.ConnectorStatus) bool {
		return s.Floe != nil && s.Floe.RecordsOut >= int64(produced)
	})
	time.Sleep(300 * time.Millisecond) // a /metrics poll or two past the last commit
	samples := run.Metrics.Samples()
	run.Stop()
	res.commitAll, _ = CommitDurations(samples)
	// Commit latency in the steady state: the commits after the warm-up
	// that freshness leaves out too (a fresh REST server still compiles
	// its JSON code then, a fresh table holds nothing).
	warm := len(samples)
	for i, s := range samples {
		if !s.At.Before(start.Add(o.FreshWarmup)) {
			warm = i
			break
		}
	}
	res.commitDur, _ = CommitDurations(samples[warm:])
	res.commits = int(samples[len(samples)-1].Commits)
	res.fresh = rowFreshness(samples, stamps, 100, start.Add(o.FreshWarmup))
	if !c.s3 {
		return res
	}
	reqs := env.Lake.S3Requests(t, s3From)
	res.s3 = harness.CountOps(reqs)
	for _, n := range res.s3 {
		res.s3Total += n
	}
	for _, q := range reqs {
		switch {
		case strings.HasSuffix(q.Path, ".metadata.json"):
			res.serverS3 += q.Took.Seconds()
		case strings.Contains(q.Path, "/metadata/") && strings.HasSuffix(q.Path, ".avro"):
			res.floeS3 += q.Took.Seconds()
		}
	}
	tablePath := "/tables/" + strings.SplitN(table, ".", 2)[1]
	for _, q := range env.Lake.CatalogRequests(t, restFrom) {
		switch {
		case !strings.HasSuffix(q.Path, tablePath):
		case q.Method == "POST":
			res.serverCommit = append(res.serverCommit, q.Took.Seconds())
		case q.Method == "GET":
			res.serverLoad = append(res.serverLoad, q.Took.Seconds())
		}
	}
	if n := len(res.serverCommit); n > 0 {
		res.loadsPerCommit = float64(len(res.serverLoad)) / float64(n)
	}
	res.maintS3 = map[string]map[string]int{}
	dir := t.TempDir()
	file := filepath.Join(dir, "maintain.json")
	conn.Config["maintenance"] = "iceberg-maintenance"
	conn.Config["maintenance.tables"] = table
	harness.WriteConnectorFile(t, file, conn)
	for _, task := range maintenanceTasks {
		from := env.Lake.S3LogSize(t)
		out := harness.RunFloe(t, env, dir, 5*time.Minute, "maintain", file, "--once", "--json",
			"--plugin-path", env.PluginDir(), "--data-dir", filepath.Join(dir, "data"), "--force", task)
		if out.Code != 0 {
			t.Fatalf("floe maintain --force %s exited %d:\n%s", task, out.Code, out.Output())
		}
		res.maintS3[task] = harness.CountOps(env.Lake.S3Requests(t, from))
	}
	return res
}

// rowFreshness returns, for every sampled row produced after from, the
// seconds from its produce time (stamps[i] is row i*every's) to the first
// sample whose committed count covers it.
func rowFreshness(samples []MetricSample, stamps []time.Time, every int, from time.Time) []float64 {
	var out []float64
	s := 0
	for i, at := range stamps {
		row := float64(i * every)
		for s < len(samples) && samples[s].RecordsOut <= row {
			s++
		}
		if s == len(samples) {
			break
		}
		if at.Before(from) {
			continue
		}
		out = append(out, samples[s].At.Sub(at).Seconds())
	}
	return out
}
