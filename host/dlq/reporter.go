package dlq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/hashicorp/go-hclog"

	"github.com/floehq/floe/sdk"
)

// Reporter is one connector's dead-letter queue. Its methods are safe for
// concurrent use (source tasks report from their own goroutines).
type Reporter struct {
	cfg    Config
	logger hclog.Logger

	// mu guards the lazily created producer, so a connector that never
	// dead-letters never connects to Kafka.
	mu       sync.Mutex
	producer *kafka.Producer
	closed   bool
}

// NewReporter returns the connector's reporter. It connects to nothing yet:
// the producer and the topic are created on the first record to store.
func NewReporter(cfg Config, logger hclog.Logger) *Reporter {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Reporter{cfg: cfg, logger: logger}
}

// Config returns the reporter's settings.
func (r *Reporter) Config() Config { return r.cfg }

// Report handles records task could not read or write. It returns nil when
// they are stored in the dead-letter topic (acknowledged by the broker) or,
// without a topic, logged; the caller counts them as dead letters then. It
// returns an error naming the first record when errors.tolerance is none
// (the task must fail with it), or when the topic could not take them
// (the task fails too: skipping them would lose records). ctx bounds the
// wait for the broker.
func (r *Reporter) Report(ctx context.Context, o Origin, records []sdk.DeadLetter) error {
	if len(records) == 0 {
		return nil
	}
	if r.cfg.LogEnable {
		for _, rec := range records {
			r.log(o, rec)
		}
	}
	if !r.cfg.TolerateAll {
		rec := records[0]
		more := ""
		if len(records) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(records)-1)
		}
		return fmt.Errorf("record %s@%d failed at stage %s: %s%s; errors.tolerance is none, set it to all (with errors.deadletterqueue.topic.name) to skip such records",
			rec.Partition, rec.Offset, rec.Stage, rec.Reason, more)
	}
	if r.cfg.Topic == "" {
		if !r.cfg.LogEnable {
			// Connect drops them silently here; floe at least says so.
			r.logger.Warn("skipping records (errors.tolerance=all, no errors.deadletterqueue.topic.name)",
				"connector", o.Connector, "task", o.Task, "records", len(records),
				"first_partition", records[0].Partition, "first_offset", records[0].Offset, "reason", records[0].Reason)
		}
		return nil
	}
	p, err := r.ensureProducer(ctx)
	if err != nil {
		return err
	}
	return r.produce(ctx, p, o, records)
}

func (r *Reporter) log(o Origin, rec sdk.DeadLetter) {
	args := []any{"connector", o.Connector, "task", o.Task, "partition", rec.Partition,
		"offset", rec.Offset, "stage", rec.Stage, "reason", rec.Reason}
	if r.cfg.LogIncludeMessages {
		args = append(args, "key", string(rec.Key), "value", string(rec.Value))
	}
	r.logger.Error("error handling record", args...)
}

// produce sends the records and waits for every delivery report.
func (r *Reporter) produce(ctx context.Context, p *kafka.Producer, o Origin, records []sdk.DeadLetter) error {
	delivered := make(chan kafka.Event, len(records))
	for _, rec := range records {
		m := message(r.cfg.Topic, o, rec, r.cfg.ContextHeaders)
		for {
			err := p.Produce(m, delivered)
			if err == nil {
				break
			}
			var kerr kafka.Error
			if errors.As(err, &kerr) && kerr.Code() == kafka.ErrQueueFull {
				// The local queue drains as the broker acknowledges.
				select {
				case <-ctx.Done():
					return fmt.Errorf("dead-letter topic %s: %w", r.cfg.Topic, ctx.Err())
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			return fmt.Errorf("dead-letter topic %s: produce %s@%d: %w", r.cfg.Topic, rec.Partition, rec.Offset, err)
		}
	}
	var firstErr error
	for range records {
		select {
		case <-ctx.Done():
			return fmt.Errorf("dead-letter topic %s: waiting for the broker: %w", r.cfg.Topic, ctx.Err())
		case ev := <-delivered:
			m, ok := ev.(*kafka.Message)
			if !ok {
				continue
			}
			if err := m.TopicPartition.Error; err != nil && firstErr == nil {
				firstErr = fmt.Errorf("dead-letter topic %s: delivery failed: %w (check errors.deadletterqueue.producer.* and the broker)", r.cfg.Topic, err)
			}
		}
	}
	return firstErr
}

// ensureProducer creates the producer and the topic once.
func (r *Reporter) ensureProducer(ctx context.Context) (*kafka.Producer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("dead-letter queue: reporter is closed")
	}
	if r.producer != nil {
		return r.producer, nil
	}
	cm := kafka.ConfigMap{
		"client.id": "floe-dlq-" + r.cfg.Connector,
		"acks":      "all",
		"linger.ms": 5,
	}
	for k, v := range r.cfg.Producer {
		cm[k] = v
	}
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return nil, fmt.Errorf("dead-letter queue: create producer: %w (check errors.deadletterqueue.producer.*)", err)
	}
	// Drain events not tied to a delivery channel (errors, logs), so the
	// producer never blocks on a full events channel.
	go func() {
		for ev := range p.Events() {
			if e, ok := ev.(kafka.Error); ok {
				r.logger.Warn("dead-letter producer", "connector", r.cfg.Connector, "error", e.Error())
			}
		}
	}()
	if err := r.createTopic(ctx, p); err != nil {
		p.Close()
		return nil, err
	}
	r.producer = p
	return p, nil
}

// createTopic makes the dead-letter topic if it is missing.
func (r *Reporter) createTopic(ctx context.Context, p *kafka.Producer) error {
	admin, err := kafka.NewAdminClientFromProducer(p)
	if err != nil {
		return fmt.Errorf("dead-letter queue: admin client: %w", err)
	}
	defer admin.Close()
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Second)
	}
	// All topics: asking for one topic could auto-create it with the
	// broker's defaults instead of ours.
	md, err := admin.GetMetadata(nil, true, int(timeout.Milliseconds()))
	if err != nil {
		return fmt.Errorf("dead-letter queue: cannot reach Kafka at %s: %w", r.cfg.Producer[bootstrapServers], err)
	}
	if t, ok := md.Topics[r.cfg.Topic]; ok && t.Error.Code() == kafka.ErrNoError {
		return nil
	}
	rf := r.cfg.ReplicationFactor
	if len(md.Brokers) > 0 && rf > len(md.Brokers) {
		rf = len(md.Brokers)
	}
	res, err := admin.CreateTopics(ctx, []kafka.TopicSpecification{{
		Topic: r.cfg.Topic, NumPartitions: 1, ReplicationFactor: rf,
	}})
	if err != nil {
		return fmt.Errorf("dead-letter queue: create topic %s: %w", r.cfg.Topic, err)
	}
	for _, tr := range res {
		if c := tr.Error.Code(); c != kafka.ErrNoError && c != kafka.ErrTopicAlreadyExists {
			return fmt.Errorf("dead-letter queue: create topic %s (replication factor %d): %w", r.cfg.Topic, rf, tr.Error)
		}
	}
	r.logger.Info("created dead-letter topic", "connector", r.cfg.Connector, "topic", r.cfg.Topic, "replication_factor", rf)
	return nil
}

// Close flushes and closes the producer. ctx bounds the flush; records
// were acknowledged before Report returned, so nothing is lost when it
// expires.
func (r *Reporter) Close(ctx context.Context) {
	r.mu.Lock()
	p := r.producer
	r.producer, r.closed = nil, true
	r.mu.Unlock()
	if p == nil {
		return
	}
	ms := 5000
	if d, ok := ctx.Deadline(); ok {
		ms = int(max(time.Until(d), 0).Milliseconds())
	}
	p.Flush(ms)
	p.Close()
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }
