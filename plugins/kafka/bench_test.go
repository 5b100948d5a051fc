package kafka

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/plugins/kafka/kafkatest"
	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// benchPartitions is the preloaded topic's partition count.
const benchPartitions = 6

// benchTopic is the preloaded topic, made once per test binary run.
type benchTopic struct {
	once    sync.Once
	name    string
	records int
	bytes   int64 // value bytes, Confluent header included
	err     error
}

var preloaded benchTopic

// preload fills a fresh topic with FLOE_KAFKA_BENCH_RECORDS (default 1 M)
// datagen orders records (about 200 bytes of Avro each), Confluent-framed,
// spread over 6 partitions. Set FLOE_KAFKA_BENCH_TOPIC to reuse a topic
// preloaded by an earlier run (with FLOE_KAFKA_BENCH_RECORDS records).
func preload(b *testing.B, env kafkatest.Env) *benchTopic {
	preloaded.once.Do(func() {
		n := 1_000_000
		if v, err := strconv.Atoi(os.Getenv("FLOE_KAFKA_BENCH_RECORDS")); err == nil && v > 0 {
			n = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		schemaJSON, _ := generate.ShapeSchema(generate.ShapeOrders)
		schema, err := generate.Parse(schemaJSON)
		if err != nil {
			preloaded.err = err
			return
		}
		gen, err := generate.New(schema, generate.Options{})
		if err != nil {
			preloaded.err = err
			return
		}
		preloaded.records = n
		if topic := os.Getenv("FLOE_KAFKA_BENCH_TOPIC"); topic != "" {
			preloaded.name = topic
			for i := range n {
				preloaded.bytes += int64(len(gen.AppendAvro(nil, i%benchPartitions, int64(i/benchPartitions))) + 5)
			}
			return
		}
		topic := kafkatest.UniqueName("bench-orders")
		if preloaded.err = kafkatest.CreateTopic(ctx, env.Bootstrap, topic, benchPartitions); preloaded.err != nil {
			return
		}
		id, err := kafkatest.Register(ctx, env.RegistryURL, topic+"-value", schemaJSON)
		if err != nil {
			preloaded.err = err
			return
		}
		start := time.Now()
		var bytes int64
		delivered, err := kafkatest.Produce(ctx, env.Bootstrap, topic, benchPartitions, func(yield func(kafkatest.Record) bool) {
			var payload []byte
			for i := range n {
				p, o := i%benchPartitions, int64(i/benchPartitions)
				payload = gen.AppendAvro(payload[:0], p, o)
				v := kafkatest.Frame(id, payload)
				bytes += int64(len(v))
				if !yield(kafkatest.Record{Key: gen.AppendKey(nil, p, o), Value: v}) {
					return
				}
			}
		}, ckafka.ConfigMap{"compression.type": "lz4"})
		if err != nil || delivered != n {
			preloaded.err = err
			return
		}
		preloaded.name, preloaded.bytes = topic, bytes
		b.Logf("preloaded %s: %d records, %.1f MB of values (%.0f B/record) in %v", topic, n, float64(bytes)/1e6, float64(bytes)/float64(n), time.Since(start).Round(time.Millisecond))
	})
	if preloaded.err != nil {
		b.Fatalf("preload: %v", preloaded.err)
	}
	return &preloaded
}

// BenchmarkConsume reads a preloaded topic of 1 M orders records (6
// partitions) twice: with a bare librdkafka consumer that only touches the
// message bytes, and through one kafka source task's Read loop (buffer,
// batching, Avro decoding into Arrow). Each reports records/s and MB/s of
// values, timed from the first record to the last. Run it with
// -benchtime=1x: one iteration reads the whole topic.
//
//	. /tmp/floe-services/env
//	go test -run '^$' -bench BenchmarkConsume -benchtime=1x ./plugins/kafka/
func BenchmarkConsume(b *testing.B) {
	env := kafkatest.Services(b)
	topic := preload(b, env)
	report := func(b *testing.B, elapsed, cpu time.Duration) {
		secs := elapsed.Seconds()
		records := float64(topic.records * b.N)
		b.ReportMetric(records/secs, "records/s")
		b.ReportMetric(float64(topic.bytes*int64(b.N))/secs/1e6, "MB/s")
		b.ReportMetric(float64(cpu.Microseconds())/records, "cpu-µs/record")
		b.ReportMetric(0, "ns/op")
	}

	b.Run("librdkafka", func(b *testing.B) {
		var elapsed, cpu time.Duration
		for range b.N {
			c0 := cpuTime()
			elapsed += rawConsume(b, env, topic)
			cpu += cpuTime() - c0
		}
		report(b, elapsed, cpu)
	})

	b.Run("task", func(b *testing.B) {
		var elapsed, cpu time.Duration
		for range b.N {
			c0 := cpuTime()
			elapsed += taskConsume(b, env, topic)
			cpu += cpuTime() - c0
		}
		report(b, elapsed, cpu)
	})
}

// cpuTime is the process's user and system CPU time so far, librdkafka's
// threads included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rawConsume reads every record of the topic with a bare consumer
// (assigned, no group join) and returns the time from the first record to
// the last.
func rawConsume(b *testing.B, env kafkatest.Env, topic *benchTopic) time.Duration {
	c, err := ckafka.NewConsumer(&ckafka.ConfigMap{
		"bootstrap.servers": env.Bootstrap, "group.id": kafkatest.UniqueName("bench-raw"),
		"enable.auto.commit": false, "broker.address.family": "v4",
		"fetch.queue.backoff.ms": 100, // as the source sets it
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	parts := make([]ckafka.TopicPartition, benchPartitions)
	for p := range parts {
		parts[p] = ckafka.TopicPartition{Topic: &topic.name, Partition: int32(p), Offset: ckafka.OffsetBeginning}
	}
	if err := c.Assign(parts); err != nil {
		b.Fatal(err)
	}
	var first time.Time
	var n, sum int
	deadline := time.Now().Add(10 * time.Minute)
	for n < topic.records {
		if time.Now().After(deadline) {
			b.Fatalf("read %d of %d records in 10 minutes", n, topic.records)
		}
		switch e := c.Poll(100).(type) {
		case *ckafka.Message:
			if first.IsZero() {
				first = time.Now()
			}
			n++
			sum += len(e.Value) + len(e.Key)
		case ckafka.Error:
			b.Logf("consumer: %v", e)
		}
	}
	elapsed := time.Since(first)
	if sum == 0 {
		b.Fatal("no bytes")
	}
	return elapsed
}

// benchHost admits every schema and answers no positions.
type benchHost struct{}

func (benchHost) StartPositions(context.Context, []string) (map[string]int64, error) {
	return nil, nil
}
func (benchHost) PartitionsRevoked(context.Context, map[string]int64) error { return nil }
func (benchHost) AdmitSchema(context.Context, sdk.Schema) error             { return nil }
func (benchHost) DeadLetter(_ context.Context, d []sdk.DeadLetter) error {
	return nil
}

// taskConsume reads every record of the topic through one task's Read
// loop and returns the time from the first batch to the last.
func taskConsume(b *testing.B, env kafkatest.Env, topic *benchTopic) time.Duration {
	st, err := source{}.Open(context.Background(), sdk.SourceOpenRequest{
		Connector: "bench", Tasks: 1, Host: benchHost{},
		Config: sdk.NewConfig(map[string]string{
			KeyTopics: topic.name, KeyBootstrapServers: env.Bootstrap, KeyRegistryURL: env.RegistryURL,
			KeyConsumerGroupID: kafkatest.UniqueName("bench-task"), "kafka.broker.address.family": "v4",
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close(context.Background()) }()
	var first time.Time
	var rows, skipped int64
	deadline := time.Now().Add(10 * time.Minute)
	for rows+skipped < int64(topic.records) {
		if time.Now().After(deadline) {
			b.Fatalf("read %d of %d records in 10 minutes", rows, topic.records)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		batches, err := st.Read(ctx, 8)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if len(batches) > 0 && first.IsZero() {
			first = time.Now()
		}
		for _, bt := range batches {
			skipped += bt.Skipped
			if bt.Records != nil {
				rows += bt.Records.NumRows()
				bt.Records.Release()
			}
		}
	}
	elapsed := time.Since(first)
	if skipped > 0 {
		b.Fatalf("%d records skipped", skipped)
	}
	return elapsed
}

// BenchmarkRead measures the task's own work per record, without Kafka:
// orders records already in the buffer, Read turning them into batches
// (schema lookup, Avro decoding into Arrow, metadata columns). Compare
// with BenchmarkConsume/task to see what the consumer costs.
func BenchmarkRead(b *testing.B) {
	schemaJSON, _ := generate.ShapeSchema(generate.ShapeOrders)
	schema, err := generate.Parse(schemaJSON)
	if err != nil {
		b.Fatal(err)
	}
	gen, err := generate.New(schema, generate.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	topic := "orders"
	msgs := make([]*ckafka.Message, n)
	var bytes int64
	for i := range msgs {
		v := kafkatest.Frame(1, gen.AppendAvro(nil, 0, int64(i)))
		bytes += int64(len(v))
		msgs[i] = &ckafka.Message{
			TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: 0, Offset: ckafka.Offset(i)},
			Key:            gen.AppendKey(nil, 0, int64(i)), Value: v,
			Timestamp: time.UnixMilli(1_700_000_000_000), TimestampType: ckafka.TimestampCreateTime,
		}
	}
	dec, err := newDecoderFromJSON(schemaJSON)
	if err != nil {
		b.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	set := settings{batchSize: defaultBatchSize, linger: 0, maxBytes: 1 << 40, keyFormat: KeyFormatString, nullValues: NullValuesDLQ}
	tk := &task{log: slog.New(slog.DiscardHandler), host: benchHost{}, set: set, mem: mem, epoch: time.Now()}
	tk.schemas = &schemaCache{host: benchHost{}, log: tk.log, mem: mem, byID: map[int32]*valueSchema{1: newValueSchema(mem, 1, dec)}, now: time.Now}
	tp := topicPartition{topic, 0}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		tk.buf = newBuffer(set.batchSize, 0)
		tk.buf.assign([]topicPartition{tp}, []int64{0})
		recs := make([]polled, n)
		for i, m := range msgs {
			recs[i] = tk.toPolled(m)
		}
		tk.buf.add(recs)
		var rows int64
		for rows < n {
			bs, err := tk.Read(context.Background(), 8)
			if err != nil {
				b.Fatal(err)
			}
			for _, bt := range bs {
				rows += bt.Records.NumRows()
				bt.Records.Release()
			}
		}
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(n*b.N)/secs, "records/s")
	b.ReportMetric(float64(bytes*int64(b.N))/secs/1e6, "MB/s")
	b.ReportMetric(0, "ns/op")
}

func newDecoderFromJSON(schemaJSON string) (*schemas.Decoder, error) {
	s, err := generate.Parse(schemaJSON)
	if err != nil {
		return nil, err
	}
	return schemas.NewDecoder(s)
}
