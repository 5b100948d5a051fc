package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

// The crash kit: what TestCrashExactlyOnce, TestBrokerRestartExactlyOnce
// and the soak (TestCrashSoak) share. A rig is one topic, one Kafka →
// hash → Iceberg connector (two tasks, a commit a second, a Postgres
// catalog) and a feeder producing known Avro records into the topic while
// floe runs; after every crash, the rig waits for floe's committed
// frontier to reach the topic's end offsets and reads the table with an
// independent engine, which must hold every produced record exactly once.

// crashValueSchema is the records' Avro value schema. region routes a
// record to the tables: every record goes to the "all" table, one in
// rareEvery (region "rare") also to the "rare" table.
const crashValueSchema = `{"type": "record", "name": "Reading", "namespace": "e2e.crash", "fields": [
	{"name": "id", "type": "long"},
	{"name": "amount", "type": "long"},
	{"name": "region", "type": "string"},
	{"name": "note", "type": "string"}]}`

// rareEvery makes the "rare" table's records rare: about one a second at
// the crash test's rate, so most checkpoints bring that table nothing and
// its committed frontier lags the "all" table's. After a crash floe
// resumes from the older of the two and the "all" table must skip what it
// holds: the per-table frontier of multi-table routing, under crashes.
const rareEvery = 997

// crashAmount is record id's amount: a value the table's checksum must
// add up to, independent of the id.
func crashAmount(id int64) int64 { return (id*7919 + 13) % 1_000_003 }

// crashRegion is record id's region.
func crashRegion(id int64) string {
	if id%rareEvery == 0 {
		return "rare"
	}
	return "common"
}

// crashProcess is the process a crash kills.
type crashProcess string

const (
	procHost   crashProcess = "host"
	procSink   crashProcess = "sink"   // floe-plugin-iceberg
	procSource crashProcess = "source" // floe-plugin-kafka
	// procHostNow is the host, restarted at once after its kill, while
	// its orphaned plugins may still run (zombies).
	procHostNow crashProcess = "host-now"
)

// binary is the process's executable name.
func (p crashProcess) binary() string {
	switch p {
	case procSink:
		return "floe-plugin-iceberg"
	case procSource:
		return "floe-plugin-kafka"
	}
	return "floe"
}

// crashPoint is one sdk.CrashPoint floe's code reaches, with the range of
// hits to crash at (a random one is picked per cycle): late enough that
// the process is in full flow, early enough that it comes within seconds.
type crashPoint struct {
	name   string
	proc   crashProcess
	lo, hi int64
	// what the point proves when the table is right afterwards.
	proves string
}

// crashPoints lists every crash point in floe's code.
var crashPoints = []crashPoint{
	{"host.after-flush", procHost, 1, 5,
		"host dies between phase 1 (files written, flushed) and phase 2: the files stay orphans, the records are read again"},
	{"host.before-commit", procHost, 1, 5,
		"host dies with a checkpoint handed to the committer but not sent to the sink"},
	{"host.after-commit", procHost, 1, 5,
		"host dies after the table commit, before the source's Commit and the offset store: the table's frontier wins"},
	{"iceberg.writing", procSink, 10, 80,
		"sink dies while its writers write data files: the host drops the uncommitted checkpoints and rewinds to the table"},
	{"iceberg.commit.before-catalog", procSink, 1, 5,
		"sink dies with the commit staged, not sent to the catalog"},
	{"iceberg.commit.after-catalog", procSink, 1, 5,
		"sink dies after the catalog commit, before answering: the host never learns the commit landed and must not redo it"},
	{"kafka.after-read", procSource, 10, 60,
		"source dies after handing batches on: the host reopens its tasks at its accepted frontier"},
	{"kafka.after-commit", procSource, 1, 5,
		"source dies right after committing group offsets"},
}

// crashCycle is one crash: a crash point, or a kill -9 at a random moment
// of the host, the sink or the source plugin.
type crashCycle struct {
	point *crashPoint // nil: a random-time kill of proc
	proc  crashProcess
	// at: the crash point's hit; for a kill, the delay after which it
	// comes.
	at    int64
	delay time.Duration
}

func (c crashCycle) String() string {
	if c.point != nil {
		return fmt.Sprintf("crash point %s:%d", c.point.name, c.at)
	}
	if c.proc == procHostNow {
		return fmt.Sprintf("kill -9 floe after %s, restart at once", c.delay.Round(time.Millisecond))
	}
	return fmt.Sprintf("kill -9 %s after %s", c.proc.binary(), c.delay.Round(time.Millisecond))
}

// kind is the cycle's kind for summaries: the point's name or kill-<proc>.
func (c crashCycle) kind() string {
	if c.point != nil {
		return c.point.name
	}
	return "kill-" + string(c.proc)
}

// pointCycle arms p at a random hit in its range.
func pointCycle(rng *rand.Rand, p *crashPoint) crashCycle {
	return crashCycle{point: p, proc: p.proc, at: p.lo + rng.Int64N(p.hi-p.lo+1)}
}

// killCycle kills proc after a random delay in [lo, hi).
func killCycle(rng *rand.Rand, proc crashProcess, lo, hi time.Duration) crashCycle {
	return crashCycle{proc: proc, delay: lo + time.Duration(rng.Int64N(int64(hi-lo)))}
}

// crashSeed returns FLOE_CRASH_SEED or a fresh seed, logged so a failing
// run can be replayed.
func crashSeed(t *testing.T) uint64 {
	if s := os.Getenv("FLOE_CRASH_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FLOE_CRASH_SEED=%q: %v", s, err)
		}
		return seed
	}
	return rand.Uint64()
}

// rigOptions configures a rig.
type rigOptions struct {
	env        harness.Env
	partitions int
	// initial records are produced before floe starts; rate records a
	// second follow while it runs.
	initial int
	rate    int
	name    string
	// maintenance adds the iceberg-maintenance plugin, compacting often.
	maintenance bool
	// lake, when set, puts the tables in its object store: behind its
	// REST catalog, or (postgresS3) in the Postgres catalog with an
	// s3:// warehouse. Unset: the Postgres catalog, a local warehouse.
	lake       *harness.Lake
	postgresS3 bool
	// restToken, with lake and its REST catalog, authenticates floe and
	// the readers with the catalog's static bearer token
	// (iceberg.catalog.token) instead of OAuth2 client credentials.
	restToken bool
	// exampleFile, with lake, takes the catalog keys (iceberg.catalog.*)
	// from that file of configs/, pointed at the services.
	exampleFile string
	// extra connector keys, set last.
	extra map[string]string
	// workers, when set, runs the connector on a cluster of that many
	// `floe distributed` workers (created through the first) instead of
	// one `floe standalone`.
	workers int
}

// rig is a topic, a connector, floe running it and a feeder.
type rig struct {
	t     *testing.T
	env   harness.Env
	opts  rigOptions
	topic string
	conn  harness.Connector
	// all holds every record; rare the records of region "rare".
	all, rare harness.TableRef
	// f is the floe process: with opts.workers, a running worker that
	// checks read through (any worker answers for every connector).
	f *harness.Floe
	// workers are the cluster's, by index (opts.workers).
	workers []*harness.Floe
	feed    *feeder
	crashes int // crash files handed out
}

// newRig creates the topic and the schema, produces the initial records,
// starts floe and the feeder, and waits for the connector to run.
func newRig(t *testing.T, ctx context.Context, o rigOptions) *rig {
	t.Helper()
	env := o.env
	r := &rig{t: t, env: env, opts: o, topic: harness.UniqueName("e2e_" + o.name)}
	if err := harness.CreateTopic(ctx, env, r.topic, o.partitions); err != nil {
		t.Fatal(err)
	}
	schemaID, err := harness.RegisterSchema(ctx, env, r.topic+"-value", crashValueSchema)
	if err != nil {
		t.Fatal(err)
	}
	r.feed = newFeeder(t, env, r.topic, o.partitions, schemaID, o.rate)
	t.Cleanup(r.feed.close)
	if err := r.feed.produceNow(ctx, o.initial); err != nil {
		t.Fatal(err)
	}

	namespace := harness.UniqueName("e2e_" + o.name)
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	r.all = harness.TableRef{CatalogURI: env.PostgresURL, Warehouse: warehouse, Name: namespace + ".all_readings"}
	r.rare = harness.TableRef{CatalogURI: env.PostgresURL, Warehouse: warehouse, Name: namespace + ".rare_readings"}
	catalogKeys := map[string]string{
		"iceberg.catalog.type":      "sql",
		"iceberg.catalog.uri":       env.PostgresURL,
		"iceberg.catalog.warehouse": warehouse,
	}
	switch {
	case o.lake != nil && o.postgresS3:
		warehouse = "s3://" + o.lake.S3Bucket + "/" + namespace
		catalogKeys = o.lake.PostgresS3Keys(env.PostgresURL, warehouse)
		if o.exampleFile != "" {
			catalogKeys = exampleCatalogKeys(t, env, o.exampleFile)
			warehouse = catalogKeys["iceberg.catalog.warehouse"]
		}
		r.all = o.lake.SQLTable(env.PostgresURL, warehouse, namespace+".all_readings")
		r.rare = o.lake.SQLTable(env.PostgresURL, warehouse, namespace+".rare_readings")
	case o.lake != nil:
		catalogKeys = o.lake.RESTCatalogKeys()
		if o.exampleFile != "" {
			catalogKeys = exampleCatalogKeys(t, env, o.exampleFile)
		}
		r.all = o.lake.RESTTable(namespace + ".all_readings")
		r.rare = o.lake.RESTTable(namespace + ".rare_readings")
		if o.restToken {
			delete(catalogKeys, "iceberg.catalog.credential")
			catalogKeys["iceberg.catalog.token"] = o.lake.RESTToken
			for _, ref := range []*harness.TableRef{&r.all, &r.rare} {
				ref.Credential, ref.Token = "", o.lake.RESTToken
			}
		}
	}
	r.conn = harness.Connector{Name: o.name, Config: map[string]string{
		"connector.class":            "iceberg",
		"source":                     "kafka",
		"topics":                     r.topic,
		"kafka.bootstrap.servers":    env.KafkaBootstrap,
		"schema.registry.url":        env.SchemaRegistryURL,
		"consumer.auto.offset.reset": "earliest",
		// A killed source leaves its members in the group until their
		// session times out; the broker's minimum keeps recoveries short.
		"kafka.session.timeout.ms":                      "6000",
		"kafka.heartbeat.interval.ms":                   "1000",
		"tasks.max":                                     "2",
		"partitioner":                                   "hash",
		"commit.interval.ms":                            "1000",
		"iceberg.tables":                                r.all.Name + "," + r.rare.Name,
		"iceberg.tables.route-field":                    "region",
		"iceberg.table." + r.all.Name + ".route-regex":  ".*",
		"iceberg.table." + r.rare.Name + ".route-regex": "rare",
		"plugin.restart.backoff.ms":                     "200",
		"plugin.restart.max.attempts":                   "10",
	}}
	for k, v := range catalogKeys {
		r.conn.Config[k] = v
	}
	for k, v := range o.extra {
		r.conn.Config[k] = v
	}
	if o.maintenance {
		r.conn.Config["maintenance"] = "iceberg-maintenance"
		r.conn.Config["maintenance.poll.interval.ms"] = "2000"
		r.conn.Config["maintenance.rewrite-data-files.trigger.data-file-count"] = "40"
		r.conn.Config["maintenance.rewrite-data-files.min-interval.ms"] = "5000"
	}
	if o.workers > 0 {
		keys := harness.ClusterKeys(env)
		for i := range o.workers {
			_, w := harness.StartWorker(t, env, keys, i)
			r.workers = append(r.workers, w)
		}
		r.f = r.workers[0]
		harness.CreateWhenLed(t, ctx, r.f, r.conn)
	} else {
		r.f = harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{r.conn}})
	}
	r.f.WaitStatus(ctx, o.name, "connector RUNNING", false, harness.ConnectorStatus.Running)
	r.feed.resume()
	return r
}

// exampleCatalogKeys reads the iceberg.catalog.* keys of a connector file
// of configs/, pointed at env's services.
func exampleCatalogKeys(t *testing.T, env harness.Env, file string) map[string]string {
	t.Helper()
	conn := harness.LoadConnectorFile(t, repoFile(t, env, file))
	config, missing := harness.LocalizeExample(env, conn.Config)
	if len(missing) > 0 {
		t.Fatalf("%s needs %s", file, strings.Join(missing, ", "))
	}
	keys := map[string]string{}
	for k, v := range config {
		if strings.HasPrefix(k, "iceberg.catalog.") {
			keys[k] = v
		}
	}
	return keys
}

// crashFile returns a fresh path for a crash file.
func (r *rig) crashFile() string {
	r.crashes++
	return filepath.Join(r.f.Dir, fmt.Sprintf("crash-%03d", r.crashes))
}

// pluginRestarts is the connector's plugin restart count now.
func (r *rig) pluginRestarts(ctx context.Context) int64 {
	r.t.Helper()
	st, err := r.f.API.Status(ctx, r.opts.name)
	if err != nil {
		r.t.Fatalf("status of %s: %v", r.opts.name, err)
	}
	if st.Floe == nil {
		return 0
	}
	return st.Floe.PluginRestarts
}

// waitPluginRestarted waits up to two minutes until floe runs the
// plugin again after its process (pid) died, and checks that the log
// written since byte logFrom of the current floe process's log says that
// process was killed by a signal. When strict, floe itself must have
// restarted the plugin (its restart count passed before); otherwise it
// may also have replaced it otherwise: a crash point can fire in the
// connector floe restores from its data dir at start-up, which the
// connector file then reconfigures (stopped, started afresh).
func (r *rig) waitPluginRestarted(ctx context.Context, proc crashProcess, pid int, before int64, logFrom int, strict bool) {
	r.t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	r.f.WaitStatus(wctx, r.opts.name, proc.binary()+" running again", false, func(s harness.ConnectorStatus) bool {
		if !s.Running() || s.Floe == nil {
			return false
		}
		if s.Floe.PluginRestarts > before {
			return true
		}
		if strict {
			return false
		}
		for _, p := range r.f.Plugins() {
			if p.Name == proc.binary() && p.PID != pid {
				return true
			}
		}
		return false
	})
	component := map[crashProcess]string{procSink: "iceberg", procSource: "kafka"}[proc]
	exited := fmt.Sprintf(" id=%d error=\"signal: killed\"", pid)
	found := false
	for _, line := range strings.Split(r.f.Log()[logFrom:], "\n") {
		if strings.Contains(line, "plugin process exited") && strings.Contains(line, " plugin="+component+" ") &&
			(pid == 0 && strings.Contains(line, "signal: killed") || pid != 0 && strings.Contains(line, exited)) {
			found = true
		}
	}
	if !found {
		r.t.Errorf("floe runs %s again, but its log has no line `plugin process exited` with `signal: killed` for plugin %s (pid %d)", proc.binary(), component, pid)
	}
}

// crash runs one cycle up to the moment floe runs again without a crash
// point armed: the crash happened (checked), and floe or its plugin was
// restarted.
func (r *rig) crash(ctx context.Context, c crashCycle) {
	r.t.Helper()
	f := r.f
	if c.point == nil {
		// A kill at a random moment of a running, ingesting floe.
		time.Sleep(c.delay)
		switch c.proc {
		case procHost:
			f.Kill()
			f.Restart()
		case procHostNow:
			orphans := f.KillHost()
			f.Restart()
			f.WaitGone(orphans)
		default:
			before, logFrom := r.pluginRestarts(ctx), len(f.Log())
			killed := f.KillPlugin(c.proc.binary())
			r.waitPluginRestarted(ctx, c.proc, killed[0].PID, before, logFrom, true)
		}
		return
	}
	// Arm the point for one run of floe: a graceful restart (SIGTERM,
	// final commit) with the point in the environment of floe and so of
	// its plugins.
	file := r.crashFile()
	f.SetEnv(harness.CrashEnv(fmt.Sprintf("%s:%d", c.point.name, c.at), file)...)
	f.RestartNoWait()
	f.SetEnv()
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	got := f.WaitCrash(wctx, file)
	if got.Point != c.point.name || got.Exe != c.proc.binary() || got.Hit != c.at {
		r.t.Fatalf("crash file %s: point %s hit %d in %s, want %s hit %d in %s", file, got.Point, got.Hit, got.Exe, c.point.name, c.at, c.proc.binary())
	}
	if c.proc == procHost {
		if got.PID != f.PID() {
			r.t.Fatalf("crash file %s: pid %d, but floe's pid is %d", file, got.PID, f.PID())
		}
		f.WaitKilled(wctx)
		f.Restart() // without the point
		return
	}
	// The plugin died; floe restarts it with the same environment, and
	// the crash file keeps the point from firing again. The count of
	// plugin restarts began at 0 with this floe process.
	r.waitPluginRestarted(ctx, c.proc, got.PID, 0, 0, false)
}

// checkResult is one exactly-once check.
type checkResult struct {
	// Of the "all" table (every record).
	produced, rows, distinct int64
	// lost and duplicated add up both tables' (the "rare" one only when
	// it was read).
	lost, duplicated int64
	rareRows         int64 // -1: not read
	took             time.Duration
}

// check pauses the feeder, waits until floe's committed frontier reaches
// the topic's end offsets, reads the tables with engine (the "rare" one
// only when rare) and checks that each holds every record routed to it
// exactly once: rows = distinct (_source_partition, _source_offset) =
// records produced for it, and the sums of id, amount and
// _source_offset are those of the records produced for it; the "all"
// table's floe frontier is the end offsets. The feeder resumes
// afterwards.
func (r *rig) check(ctx context.Context, engine harness.Engine, rare bool) checkResult {
	r.t.Helper()
	start := time.Now()
	prod, err := r.feed.pause(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	defer r.feed.resume()
	// What floe must hold is what the topic holds. The producer's count
	// says the same unless deliveries failed (a broker restart can time
	// some out): their fate is unknown to the producer, not to the topic.
	prod, ends := r.topicTally(ctx, prod)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	waitFrontier(r.t, wctx, r.f, r.opts.name, r.topic, ends)

	res := checkResult{produced: prod.all.records, rareRows: -1}
	read, lost, dup := r.checkTable(engine, r.all, prod.all)
	res.rows, res.lost, res.duplicated = read.Rows, lost, dup
	if read.Distinct != nil {
		res.distinct = *read.Distinct
	}
	var lake harness.Lake
	if r.opts.lake != nil {
		lake = *r.opts.lake
	}
	md := harness.LoadMetadataIn(r.t, lake, read.Metadata)
	frontier, _, err := md.Frontier(r.opts.name)
	if err != nil {
		r.t.Fatal(err)
	}
	for p, e := range ends {
		if got := frontier[fmt.Sprintf("%s/%d", r.topic, p)]; got != e {
			r.t.Errorf("%s: its floe.offsets for %s/%d is %d, the partition ends at %d", r.all.Name, r.topic, p, got, e)
		}
	}
	if rare {
		read, lost, dup := r.checkTable(engine, r.rare, prod.rare)
		res.rareRows = read.Rows
		res.lost += lost
		res.duplicated += dup
	}
	res.took = time.Since(start)
	return res
}

// checkTable reads one table and checks it holds the records of want
// exactly once; it returns the read and how many records are missing and
// doubled.
func (r *rig) checkTable(engine harness.Engine, ref harness.TableRef, want tally) (read harness.TableRead, lost, duplicated int64) {
	r.t.Helper()
	read = harness.ReadTable(r.t, r.env, engine, ref, harness.ReadOptions{
		ChecksumCols: []string{"id", "amount", "_source_offset"},
		DistinctCols: []string{"_source_partition", "_source_offset"},
	})
	var distinct int64
	if read.Distinct != nil {
		distinct = *read.Distinct
	}
	lost, duplicated = want.records-distinct, read.Rows-distinct
	if read.Rows != want.records || distinct != want.records {
		r.t.Errorf("%s holds %d rows, %d distinct (_source_partition, _source_offset); %d records were produced for it: %d lost, %d duplicated",
			ref.Name, read.Rows, distinct, want.records, lost, duplicated)
	}
	checkChecksums(r.t, read, map[string]string{
		"id":             strconv.FormatInt(want.idSum, 10),
		"amount":         strconv.FormatInt(want.amountSum, 10),
		"_source_offset": strconv.FormatInt(want.offsetSum, 10),
	})
	return read, lost, duplicated
}

// tally sums records: their count, ids, amounts and offsets (record id is
// at offset id / partitions of partition id % partitions as long as every
// delivery succeeded: the feeder produces in id order, idempotently, into
// an empty topic).
type tally struct {
	records, idSum, amountSum, offsetSum int64
}

func (t *tally) add(id int64, partitions int) { t.addAt(id, id/int64(partitions)) }

func (t *tally) addAt(id, offset int64) {
	t.records++
	t.idSum += id
	t.amountSum += crashAmount(id)
	t.offsetSum += offset
}

// topicTally reads the whole topic and tallies what it holds, with each
// record's real offset. With every delivery confirmed it must equal what
// the producer counted (else the producer, not floe, misbehaved); after
// failed deliveries the topic is the truth and the difference is logged.
// It returns the topic's tally and end offsets.
func (r *rig) topicTally(ctx context.Context, confirmed produced) (produced, map[int32]int64) {
	r.t.Helper()
	ends, err := harness.EndOffsets(ctx, r.env, r.topic)
	if err != nil {
		r.t.Fatal(err)
	}
	var total int64
	for _, e := range ends {
		total += e
	}
	msgs, err := harness.Consume(ctx, r.env, r.topic, int(total))
	if err != nil {
		r.t.Fatal(err)
	}
	var got produced
	for _, m := range msgs {
		if m.Offset >= ends[m.Partition] {
			continue // produced after the end offsets were read
		}
		if len(m.Value) < 5 {
			r.t.Fatalf("%s/%d@%d: a value of %d bytes is not a framed Avro record", r.topic, m.Partition, m.Offset, len(m.Value))
		}
		var rec struct {
			ID     int64  `avro:"id"`
			Region string `avro:"region"`
		}
		if err := avro.Unmarshal(r.feed.codec, m.Value[5:], &rec); err != nil {
			r.t.Fatalf("%s/%d@%d: %v", r.topic, m.Partition, m.Offset, err)
		}
		got.all.addAt(rec.ID, m.Offset)
		if rec.Region == "rare" {
			got.rare.addAt(rec.ID, m.Offset)
		}
	}
	undelivered, firstErr := r.feed.undelivered()
	switch {
	case undelivered == 0 && got != confirmed:
		r.t.Fatalf("the topic holds %+v, the producer confirmed %+v with no failed delivery: a producer problem, not floe's", got.all, confirmed.all)
	case undelivered > 0:
		r.t.Logf("feeder: %d deliveries failed (first: %v); the topic holds %d records, %d confirmed: checking against the topic",
			undelivered, firstErr, got.all.records, confirmed.all.records)
	}
	return got, ends
}

// produced is what the feeder delivered, in all and to region "rare".
type produced struct {
	all, rare tally
}

// feeder produces records with ids 0, 1, 2, … at a steady rate, record id
// to partition id % partitions, through one idempotent producer (acks=all,
// retries until delivered), and keeps count of what the broker
// confirmed. A record whose delivery failed is counted apart: its fate is
// unknown, so checks then compare the table with the topic's records.
type feeder struct {
	t          *testing.T
	p          *ckafka.Producer
	topic      string
	partitions int
	schemaID   int32
	codec      avro.Schema
	rate       int

	mu        sync.Mutex
	cond      *sync.Cond
	running   bool // producing at rate
	idle      bool // the producing goroutine is between ticks, not sending
	next      int64
	sent      int64
	done      produced
	failed    int64
	firstErr  error
	closed    bool
	loopDone  chan struct{}
	evDone    chan struct{}
	closeOnce sync.Once
}

func newFeeder(t *testing.T, env harness.Env, topic string, partitions int, schemaID int32, rate int) *feeder {
	t.Helper()
	p, err := ckafka.NewProducer(&ckafka.ConfigMap{
		"bootstrap.servers":     env.KafkaBootstrap,
		"broker.address.family": "v4",
		"acks":                  "all",
		"enable.idempotence":    true,
		"linger.ms":             5,
		// Keep retrying through a broker restart (up to half a minute on
		// two busy cores), but not for long past it: a record stuck longer
		// fails, and the checks read the topic instead.
		"message.timeout.ms":        90_000,
		"go.delivery.reports":       true,
		"go.delivery.report.fields": "key",
		// Connection errors while a test stops the broker are expected;
		// a record that is not delivered fails the check anyway.
		"log_level": 2,
	})
	if err != nil {
		t.Fatalf("feeder: producer: %v", err)
	}
	fd := &feeder{t: t, p: p, topic: topic, partitions: partitions, schemaID: schemaID,
		codec: avro.MustParse(crashValueSchema), rate: rate, idle: true,
		loopDone: make(chan struct{}), evDone: make(chan struct{})}
	fd.cond = sync.NewCond(&fd.mu)
	go fd.deliveries()
	go fd.loop()
	return fd
}

// send produces record id (the caller counts it in sent).
func (fd *feeder) send(id int64) error {
	payload, err := avro.Marshal(fd.codec, map[string]any{"id": id, "amount": crashAmount(id), "region": crashRegion(id),
		"note": "note-" + strconv.FormatInt(id, 10)})
	if err != nil {
		return err
	}
	msg := &ckafka.Message{
		TopicPartition: ckafka.TopicPartition{Topic: &fd.topic, Partition: int32(id % int64(fd.partitions))},
		Key:            []byte(strconv.FormatInt(id, 10)),
		Value:          harness.Frame(fd.schemaID, payload),
	}
	for {
		err := fd.p.Produce(msg, nil)
		var kerr ckafka.Error
		if err == nil || !errors.As(err, &kerr) || kerr.Code() != ckafka.ErrQueueFull {
			return err
		}
		fd.p.Flush(100)
	}
}

// deliveries counts delivery reports.
func (fd *feeder) deliveries() {
	defer close(fd.evDone)
	for ev := range fd.p.Events() {
		m, ok := ev.(*ckafka.Message)
		if !ok {
			continue
		}
		id, _ := strconv.ParseInt(string(m.Key), 10, 64)
		fd.mu.Lock()
		if m.TopicPartition.Error != nil {
			fd.failed++
			if fd.firstErr == nil {
				fd.firstErr = fmt.Errorf("record %d to %v: %w", id, m.TopicPartition, m.TopicPartition.Error)
			}
		} else {
			fd.done.all.add(id, fd.partitions)
			if crashRegion(id) == "rare" {
				fd.done.rare.add(id, fd.partitions)
			}
		}
		fd.cond.Broadcast()
		fd.mu.Unlock()
	}
}

// loop sends rate records a second, in ticks of 50 ms, while running.
func (fd *feeder) loop() {
	defer close(fd.loopDone)
	const tick = 50 * time.Millisecond
	per := max(1, fd.rate*int(tick)/int(time.Second))
	for {
		fd.mu.Lock()
		for !fd.running && !fd.closed {
			fd.idle = true
			fd.cond.Broadcast()
			fd.cond.Wait()
		}
		if fd.closed {
			fd.idle = true
			fd.cond.Broadcast()
			fd.mu.Unlock()
			return
		}
		fd.idle = false
		first := fd.next
		fd.next += int64(per)
		fd.sent += int64(per)
		fd.mu.Unlock()
		for id := first; id < first+int64(per); id++ {
			if err := fd.send(id); err != nil {
				fd.mu.Lock()
				fd.failed++
				if fd.firstErr == nil {
					fd.firstErr = fmt.Errorf("produce record %d: %w", id, err)
				}
				fd.mu.Unlock()
			}
		}
		time.Sleep(tick)
	}
}

// produceNow produces n records at once (the feeder paused) and waits
// for their delivery.
func (fd *feeder) produceNow(ctx context.Context, n int) error {
	fd.mu.Lock()
	first := fd.next
	fd.next += int64(n)
	fd.sent += int64(n)
	fd.mu.Unlock()
	for id := first; id < first+int64(n); id++ {
		if err := fd.send(id); err != nil {
			return fmt.Errorf("feeder: %w", err)
		}
	}
	_, err := fd.pause(ctx)
	return err
}

func (fd *feeder) resume() {
	fd.mu.Lock()
	fd.running = true
	fd.cond.Broadcast()
	fd.mu.Unlock()
}

// pause stops producing and waits until every record sent is confirmed
// or failed, and returns what was delivered (see [feeder.undelivered]).
func (fd *feeder) pause(ctx context.Context) (produced, error) {
	fd.mu.Lock()
	fd.running = false
	for !fd.idle {
		fd.cond.Wait()
	}
	fd.mu.Unlock()
	for {
		fd.p.Flush(200)
		fd.mu.Lock()
		settled := fd.done.all.records+fd.failed >= fd.sent
		done := fd.done
		fd.mu.Unlock()
		if settled {
			return done, nil
		}
		if ctx.Err() != nil {
			return done, fmt.Errorf("feeder: %d of %d records delivered: %w", done.all.records, fd.sent, ctx.Err())
		}
	}
}

// undelivered returns how many records failed delivery so far, and the
// first failure. Their fate is unknown to the producer (a timed-out record
// may be in the topic or not): checks compare with the topic itself.
func (fd *feeder) undelivered() (int64, error) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	return fd.failed, fd.firstErr
}

func (fd *feeder) close() {
	fd.closeOnce.Do(func() {
		fd.mu.Lock()
		fd.closed, fd.running = true, false
		fd.cond.Broadcast()
		fd.mu.Unlock()
		<-fd.loopDone
		fd.p.Flush(5000)
		fd.p.Close()
		<-fd.evDone
	})
}
