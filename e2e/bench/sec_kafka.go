package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/floehq/floe/e2e/harness"
	"github.com/floehq/floe/host/worker"
	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/plugins/kafka/kafkatest"
)

// kafkaTopic is a preloaded topic: record i of the preload went to
// partition i % Partitions at offset i / Partitions, its value the
// Confluent-framed AppendAvro bytes of generator position (partition,
// offset).
type kafkaTopic struct {
	Name       string
	Partitions int
	Records    int64
	AvroBytes  int64 // payloads without the 5-byte header
	gen        *generate.Generator
}

// benchTopic creates topic (with the given topic configs), registers the
// benchmark's schema as its value subject and returns the schema id and a
// generator of its records.
func benchTopic(t *T, env harness.Env, o Options, topic string, topicConfig map[string]string) (int32, *generate.Generator) {
	ctx := t.Context()
	if err := harness.CreateTopicWith(ctx, env, topic, o.KafkaPartitions, topicConfig); err != nil {
		t.Fatalf("%v", err)
	}
	js := schemaJSON(t, o)
	id, err := harness.RegisterSchema(ctx, env, topic+"-value", js)
	if err != nil {
		t.Fatalf("%v", err)
	}
	s, err := generate.Parse(js)
	if err != nil {
		t.Fatalf("%v", err)
	}
	g, err := generate.New(s, generate.Options{Seed: uint64(o.Seed), KeyField: "customer_id"})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return id, g
}

// preload creates a topic and produces n generated records into it.
func preload(t *T, env harness.Env, o Options, n int64) kafkaTopic {
	ctx := t.Context()
	topic := harness.UniqueName("bench_kafka")
	id, g := benchTopic(t, env, o, topic, nil)
	kt := kafkaTopic{Name: topic, Partitions: o.KafkaPartitions, Records: n, gen: g}
	parts := int64(o.KafkaPartitions)
	var payload []byte
	records := func(yield func(kafkatest.Record) bool) {
		for i := range n {
			p, off := int(i%parts), i/parts
			payload = g.AppendAvro(payload[:0], p, off)
			kt.AvroBytes += int64(len(payload))
			r := kafkatest.Record{Partition: int32(p), Key: g.AppendLastKey(nil), Value: harness.Frame(id, payload)}
			if !yield(r) {
				return
			}
		}
	}
	start := time.Now()
	got, err := kafkatest.Produce(ctx, env.KafkaBootstrap, topic, 0, records, harness.KafkaConfig{"linger.ms": 50, "compression.type": "none"})
	if err != nil {
		t.Fatalf("preload %s: %v", topic, err)
	}
	if int64(got) != n {
		t.Fatalf("preload %s: %d of %d delivered", topic, got, n)
	}
	t.Logf("preloaded %d records (%.1f MB Avro) into %s in %s", n, float64(kt.AvroBytes)/1e6, topic, time.Since(start).Round(time.Millisecond))
	return kt
}

// payloads returns the raw limit's input from the topic's records: the
// first perPartition records of every partition, split over workers as
// floe's tasks split the partitions (partition p to task p % workers).
func (kt kafkaTopic) payloads(workers, perPartition int) []*Payloads {
	out := make([]*Payloads, workers)
	for w := range out {
		out[w] = &Payloads{}
	}
	for p := range kt.Partitions {
		w := out[p%workers]
		for o := range int64(perPartition) {
			w.buf = kt.gen.AppendAvro(w.buf, p, o)
			w.ends = append(w.ends, len(w.buf))
		}
	}
	return out
}

// kafkaConnector is a kafka → iceberg connector of topic.
func kafkaConnector(env harness.Env, o Options, topic, table string, tasks int, interval time.Duration) harness.Connector {
	return harness.Connector{Name: harness.UniqueName("bench_kafka"), Config: map[string]string{
		"connector.class":         "iceberg",
		"source":                  "kafka",
		"topics":                  topic,
		"kafka.bootstrap.servers": env.KafkaBootstrap,
		"schema.registry.url":     env.SchemaRegistryURL,
		// A new group per run: every run reads the topic from the start.
		"consumer.group.id":                     harness.UniqueName("floebench"),
		"consumer.auto.offset.reset":            "earliest",
		"tasks.max":                             strconv.Itoa(tasks),
		"commit.interval.ms":                    strconv.FormatInt(interval.Milliseconds(), 10),
		"iceberg.tables":                        table,
		"iceberg.tables.target-file-size-bytes": strconv.FormatInt(o.TargetFileSize, 10),
	}}
}

// kafkaFloeRun runs floe over the whole topic once. The window runs from
// the first /metrics sample with records read to the first with every
// record read (the consumer group join before it is not throughput);
// Drain is from that start until the last record is committed.
func kafkaFloeRun(t *T, env harness.Env, o Options, kt kafkaTopic, profile bool) (floeThroughput, time.Duration) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	conn := kafkaConnector(env, o, kt.Name, "bench.kafka_events", o.KafkaTasks, o.CommitInterval)
	run := StartRun(t, env, o, conn, 200*time.Millisecond)
	total := float64(kt.Records)
	start, cpu0 := run.waitMetric(ctx, "the first records", func(s MetricSample) bool { return s.RecordsIn > 0 })
	var prof string
	if profile {
		// The whole topic takes seconds at quick sizes: stay inside the window.
		secs := o.ProfileSeconds
		if o.Quick {
			secs = min(secs, 5)
		}
		prof = profileNow(t, o, run, secs)
	}
	end, cpu1 := run.waitMetric(ctx, "every record read", func(s MetricSample) bool { return s.RecordsIn >= total })
	run.F.WaitStatus(ctx, conn.Name, "every record committed", false, func(s harness.ConnectorStatus) bool {
		return s.Floe != nil && float64(s.Floe.RecordsOut) >= total
	})
	drained := time.Since(start.At)
	res := floeThroughput{
		Records: end.RecordsIn - start.RecordsIn,
		Wall:    end.At.Sub(start.At),
		CPU:     CPUDelta(cpu0, cpu1),
		Profile: prof,
	}
	res.AvroBytes = res.Records * float64(kt.AvroBytes) / total
	res.PeakRSSKB = run.Procs.PeakSumKB()
	res.PeakAnonKB = run.Procs.PeakAnonSumKB()
	res.PeakAt = run.Procs.PeakAt()
	res.Procs = run.Procs.Procs()
	run.Stop()
	res.CommittedRate = committedRate(t, run.F.DataDir, "bench.kafka_events", conn.Name, kt.Records)
	return res, drained
}

// Kafka is section 2 (issue 3): floe kafka → iceberg against the bare
// consumer and the raw decode+encode limit, on the same preloaded topic.
func Kafka(t *T, o Options, rep *Report, st *State) {
	env := harness.Require(t, harness.FloeBinary, harness.Kafka, harness.SchemaRegistry, harness.Plugin("kafka"),
		harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := t.Context()
	rep.Heading(2, "2. kafka → iceberg (issues 3, 14)")
	kt := preload(t, env, o, o.KafkaRecords)
	tasks := o.KafkaTasks
	rawPer := min(o.RawRecords, int(kt.Records)) / kt.Partitions
	work := kt.payloads(tasks, rawPer)
	if o.Profile {
		dir := t.TempDir()
		if err := BuildUnstripped(ctx, env.RepoDir, dir); err != nil {
			t.Fatalf("%v", err)
		}
		env.BinDir = dir
	}
	rep.Para("Topic: %d partitions, %s records of `%s` (%.1f Avro bytes/record, Confluent-framed, schema in the registry), preloaded with `kafkatest.Produce`. "+
		"floe: `kafka` → `hash` → `iceberg`, `tasks.max=%d`, `commit.interval.ms=%d`, a new consumer group per run; window from the first record read to the last (`/metrics` every 200 ms); "+
		"\"drain\" is from the first record read until all are committed. Bare consumer: %d librdkafka consumers in one new group (subscribe, cooperative-sticky, the source's queue size), "+
		"every value byte read, first to last message. Raw decode+encode: %s of the same records (the first %s of each partition, partition p to goroutine p %% %d) → `schemas.Decoder` → Arrow → "+
		"`table.WriteRecords` (zstd), %d goroutines. MB/s count Avro payload bytes. %d interleaved repetitions; medians.",
		kt.Partitions, Num(float64(kt.Records)), "event.avsc", float64(kt.AvroBytes)/float64(kt.Records), tasks, o.CommitInterval.Milliseconds(),
		tasks, Num(float64(rawPer*kt.Partitions)), Num(float64(rawPer)), tasks, tasks, o.Reps)

	var floeRuns []floeThroughput
	var drains []float64
	var consumes []ConsumeResult
	var raws []RawResult
	rows := [][]string{}
	var rConsume, rRaw, rMin []float64
	var failures []error
	for i := range o.Reps {
		var fr floeThroughput
		var drain time.Duration
		failures = append(failures, t.Retry(2, fmt.Sprintf("floe run %d", i+1), func(t *T) {
			fr, drain = kafkaFloeRun(t, env, o, kt, o.Profile && i == min(1, o.Reps-1))
		})...)
		floeRuns = append(floeRuns, fr)
		drains = append(drains, drain.Seconds())

		cr, err := RawConsume(ctx, env.KafkaBootstrap, kt.Name, tasks, kt.Records)
		if err != nil {
			t.Fatalf("%v", err)
		}
		consumes = append(consumes, cr)

		dir, err := os.MkdirTemp("", "floebench-raw-")
		if err != nil {
			t.Fatalf("%v", err)
		}
		raw, err := NewRawTable(ctx, dir, kt.gen.Schema())
		if err != nil {
			t.Fatalf("%v", err)
		}
		rr, err := raw.Run(ctx, work, 5000, o.TargetFileSize)
		_ = raw.Close()
		_ = os.RemoveAll(dir)
		if err != nil {
			t.Fatalf("%v", err)
		}
		raws = append(raws, rr)
		rc, rw := fr.Rate()/cr.Rate(), fr.Rate()/rr.Rate()
		rConsume, rRaw, rMin = append(rConsume, rc), append(rRaw, rw), append(rMin, fr.Rate()/min(cr.Rate(), rr.Rate()))
		t.Logf("rep %d: floe %.0f rec/s, consume %.0f, decode+encode %.0f", i+1, fr.Rate(), cr.Rate(), rr.Rate())
		rows = append(rows, []string{strconv.Itoa(i + 1), Num(fr.Rate()), F(fr.MBps(), 1), F(fr.CPUPerMillion(), 1), F(drain.Seconds(), 1),
			Num(cr.Rate()), F(cr.CPU.Seconds()*1e6/float64(cr.Records), 1),
			Num(rr.Rate()), F(rr.CPU.Seconds()*1e6/float64(rr.Records), 1),
			F(rc, 2), F(rw, 2), F(rMin[i], 2)})
	}
	med := func(f func(i int) float64) float64 {
		xs := make([]float64, o.Reps)
		for i := range xs {
			xs[i] = f(i)
		}
		return Median(xs)
	}
	floeRate := med(func(i int) float64 { return floeRuns[i].Rate() })
	st.KafkaRate = floeRate
	rows = append(rows, []string{"**median**", Num(floeRate), F(med(func(i int) float64 { return floeRuns[i].MBps() }), 1),
		F(med(func(i int) float64 { return floeRuns[i].CPUPerMillion() }), 1), F(Median(drains), 1),
		Num(med(func(i int) float64 { return consumes[i].Rate() })), F(med(func(i int) float64 { return consumes[i].CPU.Seconds() * 1e6 / float64(consumes[i].Records) }), 1),
		Num(med(func(i int) float64 { return raws[i].Rate() })), F(med(func(i int) float64 { return raws[i].CPU.Seconds() * 1e6 / float64(raws[i].Records) }), 1),
		F(Median(rConsume), 2), F(Median(rRaw), 2), F(Median(rMin), 2)})
	rep.Table([]string{"rep", "floe rec/s", "floe MB/s", "floe CPU-s / M rec", "floe drain s", "consume rec/s", "consume CPU-s / M", "decode+encode rec/s", "d+e CPU-s / M",
		"floe / consume", "floe / d+e", "floe / smaller"}, rows)
	var cpuRatio []float64
	for i := range floeRuns {
		rawPerRec := consumes[i].CPU.Seconds()/float64(consumes[i].Records) + raws[i].CPU.Seconds()/float64(raws[i].Records)
		cpuRatio = append(cpuRatio, rawPerRec*1e6/floeRuns[i].CPUPerMillion())
	}
	rep.Target("per CPU-second: bare consume + decode+encode CPU per record ÷ floe's ≥ 0.75 (all floe processes; the broker's CPU is in neither; issue 14)",
		F(Median(cpuRatio), 2), Median(cpuRatio) >= 0.75, true)
	rep.Target("floe ≥ 0.85 × the bare consume rate (records/s, median of the interleaved triples; issue 14)", F(Median(rConsume), 2), Median(rConsume) >= 0.85, true)
	rep.Para("")

	reportFailures(rep, failures)
	// Memory: the median run's peak.
	mid := medianIndex(len(floeRuns), func(i int) float64 { return floeRuns[i].Rate() })
	var peaks, anon []float64
	for _, fr := range floeRuns {
		peaks = append(peaks, float64(fr.PeakRSSKB)/1024)
		anon = append(anon, float64(fr.PeakAnonKB)/1024)
	}
	rep.Para("Peak RSS of floe + all plugin processes (VmRSS summed, sampled every 200 ms): %s MiB per run (max %s MiB); of which their own memory "+
		"(RssAnon + RssShmem, summed; the rest is pages of the binaries the kernel can drop and read again): %s MiB (max %s MiB). "+
		"Batches in shared memory files that no process maps are in neither (at most the in-flight batches). Per process, rep %d (whose summed RSS peaked %s after floe started):",
		joinFloats(peaks, 0), F(Max(peaks), 0), joinFloats(anon, 0), F(Max(anon), 0), mid+1, floeRuns[mid].PeakAt.Round(100*time.Millisecond))
	h, r := procMemTable(floeRuns[mid].Procs)
	rep.Table(h, r)
	defaultBudget := memoryBudget(o) == worker.DefaultMemoryMaxBytes
	if kt.Partitions == 100 && o.KafkaTasks == 8 {
		rep.Target("peak RSS ≤ 1 GiB on a 100-partition topic with tasks.max=8 at the default memory budget (issue 14)",
			F(Max(peaks), 0)+" MiB", Max(peaks) <= 1024, defaultBudget)
	} else {
		rep.Target(fmt.Sprintf("peak RSS ≤ 512 MiB on the 6-partition bench topic at the default memory budget (issue 14; this topic: %d partitions)", kt.Partitions),
			F(Max(peaks), 0)+" MiB", Max(peaks) <= 512, kt.Partitions == 6 && defaultBudget)
	}
	budgetTarget(rep, o, Max(peaks))
	rep.Para("")
	h, r = cpuTable(floeRuns[mid].CPU, floeRuns[mid].Records)
	rep.Para("CPU by process over rep %d's window:", mid+1)
	rep.Table(h, r)
	for _, fr := range floeRuns {
		if fr.Profile != "" {
			rep.Para("perf profile of floe and its plugins (from the first record read, `perf record -e cpu-clock -F 499 -g`, unstripped builds of the same code):\n\n%s", fr.Profile)
		}
	}
}

func joinFloats(xs []float64, decimals int) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += F(x, decimals)
	}
	return s
}
