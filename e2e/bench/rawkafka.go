package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// ConsumeResult is one run of the bare consumer.
type ConsumeResult struct {
	Records int64
	Bytes   int64 // message values
	// Wall runs from the first message any consumer received to the last
	// one (group join excluded, as it is for floe's window).
	Wall time.Duration
	// CPU is this process's CPU time from subscribing to the end.
	CPU time.Duration
	// Checksum folds every value byte, so the bytes are read.
	Checksum uint64
}

// Rate is records per second.
func (r ConsumeResult) Rate() float64 { return float64(r.Records) / r.Wall.Seconds() }

// RawConsume reads topic from the beginning with consumers librdkafka
// consumers in one new consumer group (subscribe, cooperative-sticky,
// manual commit off, as floe's kafka source configures its consumers,
// one per task) until they received want messages between them, touching
// every value byte. It is the broker-and-client limit floe's kafka source
// runs under.
func RawConsume(ctx context.Context, bootstrap, topic string, consumers int, want int64) (ConsumeResult, error) {
	group := fmt.Sprintf("floebench-raw-%d", time.Now().UnixNano())
	var (
		count, bytes atomic.Int64
		sum          atomic.Uint64
		firstNs      atomic.Int64
		lastNs       atomic.Int64
		errOnce      sync.Once
		firstErr     error
	)
	cpu0 := SelfCPU()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range consumers {
		c, err := ckafka.NewConsumer(&ckafka.ConfigMap{
			"bootstrap.servers":             bootstrap,
			"broker.address.family":         "v4",
			"group.id":                      group,
			"client.id":                     fmt.Sprintf("%s-%d", group, i),
			"auto.offset.reset":             "earliest",
			"enable.auto.commit":            false,
			"enable.auto.offset.store":      false,
			"enable.partition.eof":          false,
			"partition.assignment.strategy": "cooperative-sticky",
			// floe's source: half its 64 MiB buffer, and its fetch
			// backoff (librdkafka's 1 s default idles a consumer whose
			// queue filled, and this one's does in a backlog too).
			"queued.max.messages.kbytes": 32 << 10,
			"fetch.queue.backoff.ms":     100,
		})
		if err != nil {
			return ConsumeResult{}, fmt.Errorf("raw consumer: %w", err)
		}
		if err := c.Subscribe(topic, nil); err != nil {
			_ = c.Close()
			return ConsumeResult{}, fmt.Errorf("raw consumer: subscribe %s: %w", topic, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = c.Close() }()
			var local uint64
			for ctx.Err() == nil && count.Load() < want {
				ev := c.Poll(100)
				switch e := ev.(type) {
				case *ckafka.Message:
					if e.TopicPartition.Error != nil {
						errOnce.Do(func() { firstErr = e.TopicPartition.Error })
						cancel()
						return
					}
					now := time.Now().UnixNano()
					firstNs.CompareAndSwap(0, now)
					for _, b := range e.Value {
						local = local*31 + uint64(b)
					}
					bytes.Add(int64(len(e.Value)))
					if count.Add(1) >= want {
						lastNs.Store(now)
						cancel()
					}
				case ckafka.Error:
					if e.IsFatal() {
						errOnce.Do(func() { firstErr = e })
						cancel()
						return
					}
				}
			}
			sum.Add(local)
		}()
	}
	wg.Wait()
	res := ConsumeResult{Records: count.Load(), Bytes: bytes.Load(), CPU: SelfCPU() - cpu0, Checksum: sum.Load()}
	if firstErr != nil {
		return res, fmt.Errorf("raw consumer: %w", firstErr)
	}
	if res.Records < want {
		return res, fmt.Errorf("raw consumer: got %d of %d messages: %w", res.Records, want, ctx.Err())
	}
	res.Wall = time.Duration(lastNs.Load() - firstNs.Load())
	return res, nil
}
