package bench

import (
	"context"
	"sync/atomic"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/e2e/harness"
	"github.com/floehq/floe/plugins/datagen/generate"
	"github.com/floehq/floe/plugins/kafka/kafkatest"
)

// pacer produces generated records into a topic at a steady rate, the
// producer of the freshness, lake and recovery sections. Record n goes to
// partition n % Partitions at offset n / Partitions (generator position
// (partition, offset)), is due n / Rate seconds after the first, and
// carries time.Now() as its Kafka timestamp when it is handed to the
// producer.
//
// Set the fields, then call [pacer.produce] once. Handed may be read
// from other goroutines while it runs; Start and Stamps only after it
// returned.
type pacer struct {
	Gen        *generate.Generator
	SchemaID   int32
	Partitions int64
	Rate       float64 // records/s
	// For is how long to produce; 0: until stop.
	For time.Duration
	// StampEvery keeps the timestamp of every StampEvery-th record in
	// Stamps (0: none).
	StampEvery int64

	Start  time.Time   // when the first record was due
	Stamps []time.Time // Stamps[i] is record i*StampEvery's timestamp

	handed atomic.Int64
	halt   atomic.Bool
}

// Handed is how many records were handed to the producer so far: with
// every delivery confirmed (the producer is idempotent and the topic was
// new), partition p then ends at the offset [pacerEnd] gives.
func (p *pacer) Handed() int64 { return p.handed.Load() }

// stop ends the production after the record in hand; produce then
// flushes and returns.
func (p *pacer) stop() { p.halt.Store(true) }

// produce produces into topic through one librdkafka producer
// (kafkatest.Produce: acks=all, idempotent, linger 20 ms) until For has
// passed, stop was called or ctx ended, and returns the number of
// records the broker confirmed.
func (p *pacer) produce(ctx context.Context, bootstrap, topic string) (int, error) {
	var payload []byte
	records := func(yield func(kafkatest.Record) bool) {
		p.Start = time.Now()
		for n := int64(0); ; n++ {
			due := time.Duration(float64(n) / p.Rate * 1e9)
			if p.For > 0 && due >= p.For || p.halt.Load() || ctx.Err() != nil {
				return
			}
			if wait := due - time.Since(p.Start); wait > time.Millisecond {
				time.Sleep(wait)
			}
			part, off := int(n%p.Partitions), n/p.Partitions
			payload = p.Gen.AppendAvro(payload[:0], part, off)
			now := time.Now()
			if p.StampEvery > 0 && n%p.StampEvery == 0 {
				p.Stamps = append(p.Stamps, now)
			}
			if !yield(kafkatest.Record{Partition: int32(part), Key: p.Gen.AppendLastKey(nil), Value: harness.Frame(p.SchemaID, payload), Timestamp: now}) {
				return
			}
			p.handed.Store(n + 1)
		}
	}
	return kafkatest.Produce(ctx, bootstrap, topic, 0, records, producerBackoff)
}

// producerBackoff caps the producer's reconnect backoff at floe's own
// (plugins/kafka): with librdkafka's default of 10 s the load producer,
// not floe, set the pace after a broker restart (measured: its first new
// record 9.5 s after the broker was back, floe's commit 1.0 s after that).
var producerBackoff = ckafka.ConfigMap{"reconnect.backoff.max.ms": 1000}

// pacerEnd is the end offset of partition part of parts once the first n
// records of a pacer are in the topic: the count of i < n with
// i % parts == part.
func pacerEnd(n, parts int64, part int) int64 {
	if n <= int64(part) {
		return 0
	}
	return (n - int64(part) + parts - 1) / parts
}
