package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/host/kclient"
	"github.com/floehq/floe/host/runtime"
)

// Worker config keys of the control topic (floe's own: Kafka Connect has
// no control topic).
const (
	KeyTopic             = "control.topic"
	KeyPartitions        = "control.topic.partitions"
	KeyReplicationFactor = "control.topic.replication.factor"
)

// Defaults.
const (
	DefaultPartitions        = 6
	DefaultReplicationFactor = 3
	// retention is how long the broker keeps a control message: far
	// longer than any message matters.
	retention = time.Hour
	// maxMessageBytes bounds one message: a checkpoint's file
	// descriptions of every writer of one worker.
	maxMessageBytes = 16 << 20
)

// Settings are the control topic's part of a worker config.
type Settings struct {
	Client  kclient.Config
	GroupID string
	Topic   kclient.TopicSpec
}

// Keys lists the worker config keys ParseSettings reads.
func Keys() []string { return []string{KeyTopic, KeyPartitions, KeyReplicationFactor} }

// ParseSettings reads the control topic's keys; groupID names the
// cluster. Errors name the key.
func ParseSettings(raw map[string]string, client kclient.Config, groupID string) (Settings, error) {
	s := Settings{Client: client, GroupID: groupID}
	name := strings.TrimSpace(raw[KeyTopic])
	if name == "" {
		name = groupID + "-floe-control"
	}
	spec := kclient.TopicSpec{Name: name, Key: KeyTopic, CleanupPolicy: "delete",
		Configs: map[string]string{"retention.ms": strconv.FormatInt(retention.Milliseconds(), 10), "max.message.bytes": strconv.Itoa(maxMessageBytes)}}
	var err error
	if spec.Partitions, err = kclient.TopicCount(raw, KeyPartitions, DefaultPartitions); err != nil {
		return Settings{}, err
	}
	if spec.ReplicationFactor, err = kclient.TopicCount(raw, KeyReplicationFactor, DefaultReplicationFactor); err != nil {
		return Settings{}, err
	}
	s.Topic = spec
	return s, nil
}

// Transport is one worker's side of the control topic: the topic checked
// or created, and one producer the links share. Safe for concurrent use.
type Transport struct {
	set        Settings
	worker     string
	logger     *slog.Logger
	partitions int

	mu       sync.Mutex
	producer *kafka.Producer // replaced when it stops delivering (see Publish)
}

// Delivery bounds of a control message. Control messages are idempotent
// at the runtime's level (a worker publishes an unanswered checkpoint
// again, the committer answers a repeat as before, and answers are
// matched by checkpoint), so the producer needs neither Kafka's
// idempotence nor its five-minute delivery timeout: a message not
// delivered within deliveryTimeout fails, and is published again.
const (
	deliveryTimeout = 20 * time.Second
	// wedgedAfter is how long Publish waits past deliveryTimeout for the
	// delivery report before it takes the producer as wedged and
	// replaces it. The distributed soak met one that delivered nothing
	// and reported nothing for minutes after a Kafka node's restart
	// (idempotent then), while the committer's worker waited on it.
	wedgedAfter = 10 * time.Second
)

// Open creates the control topic if it is missing (or checks it) and
// starts the producer. ctx bounds it.
func Open(ctx context.Context, set Settings, workerID string, logger *slog.Logger) (*Transport, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	admin, err := set.Client.NewAdmin(logger)
	if err != nil {
		return nil, err
	}
	topic, err := admin.EnsureTopic(ctx, set.Topic)
	admin.Close()
	if err != nil {
		return nil, err
	}
	t := &Transport{set: set, worker: workerID, logger: logger, partitions: topic.Partitions}
	if t.producer, err = t.newProducer(); err != nil {
		return nil, err
	}
	return t, nil
}

// newProducer starts a producer for the control topic.
func (t *Transport) newProducer() (*kafka.Producer, error) {
	p, err := t.set.Client.NewProducer(t.logger, kafka.ConfigMap{
		"client.id": "floe-" + t.worker + "-control",
		"acks":      "all",
		// In order without idempotence: one request in flight.
		"max.in.flight.requests.per.connection": 1,
		"message.timeout.ms":                    int(deliveryTimeout.Milliseconds()),
		// Not 0: see kafkastore's lingerMs (a busy broker thread while
		// a Kafka node is down). One message per checkpoint.
		"linger.ms":         5,
		"compression.type":  "lz4",
		"message.max.bytes": maxMessageBytes,
	})
	if err != nil {
		return nil, err
	}
	go drainEvents(p)
	return p, nil
}

// currentProducer returns the producer Publish uses now.
func (t *Transport) currentProducer() *kafka.Producer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.producer
}

// replaceWedged replaces p, if it is still the transport's producer, with
// a new one, and closes p in the background (a wedged client's close may
// not return).
func (t *Transport) replaceWedged(p *kafka.Producer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.producer != p {
		return // another Publish replaced it already
	}
	np, err := t.newProducer()
	if err != nil {
		t.logger.Warn("control topic: cannot start a producer to replace the one that stopped delivering; keeping it", "error", err)
		return
	}
	t.producer = np
	t.logger.Warn("control topic: the producer delivered nothing and reported nothing for a while; replaced it with a new one",
		"topic", t.set.Topic.Name, "waited", deliveryTimeout+wedgedAfter)
	go func() {
		p.Flush(0)
		p.Close()
	}()
}

// drainEvents empties the producer's event channel: deliveries go to
// each Publish's own channel; errors the client reports there are logged
// by its log forwarding.
func drainEvents(p *kafka.Producer) {
	for range p.Events() {
	}
}

// Close flushes and closes the producer. Close the links first.
func (t *Transport) Close() {
	p := t.currentProducer()
	p.Flush(5_000)
	p.Close()
}

// partition is where connector's messages go.
func (t *Transport) partition(connector string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(connector))
	return int32(h.Sum32() % uint32(t.partitions))
}

// envelope is a control message on the wire.
type envelope struct {
	Version   int                    `json:"v"`
	Group     string                 `json:"group"`
	Connector string                 `json:"connector"`
	From      string                 `json:"from"`
	Message   runtime.ControlMessage `json:"message"`
}

const wireVersion = 1

// Link opens connector's link: its partition is read from its end now.
// ctx bounds the open.
func (t *Transport) Link(ctx context.Context, connector string) (runtime.ControlLink, error) {
	part := t.partition(connector)
	topic := t.set.Topic.Name
	c, err := t.set.Client.NewConsumer(t.logger, kafka.ConfigMap{
		"group.id":             "floe-" + t.set.GroupID + "-control-" + t.worker,
		"client.id":            "floe-" + t.worker + "-control-" + connector,
		"enable.auto.commit":   false,
		"enable.partition.eof": false,
		"fetch.max.bytes":      4 * maxMessageBytes,
		"auto.offset.reset":    "latest",
	})
	if err != nil {
		return nil, err
	}
	end, err := highWatermark(ctx, c, topic, part)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("control topic %s: %w", topic, err)
	}
	if err := c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: part, Offset: kafka.Offset(end)}}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("control topic %s: read partition %d: %w", topic, part, err)
	}
	l := &link{t: t, connector: connector, topic: topic, part: part, c: c,
		items: make(chan item, 64), done: end, stop: make(chan struct{}), polled: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.poll()
	return l, nil
}

// highWatermark returns the partition's end offset, retrying within ctx.
func highWatermark(ctx context.Context, c *kafka.Consumer, topic string, part int32) (int64, error) {
	for {
		_, high, err := c.QueryWatermarkOffsets(topic, part, 5_000)
		if err == nil {
			return high, nil
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("read the end of partition %d: %w", part, err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("read the end of partition %d: %w", part, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// link is one connector's link on one worker.
type link struct {
	t         *Transport
	connector string
	topic     string
	part      int32
	c         *kafka.Consumer

	items  chan item
	stop   chan struct{}
	polled chan struct{} // closed when poll returns
	once   sync.Once

	mu   sync.Mutex
	cond *sync.Cond
	// done is the offset after the last message Receive handed out and
	// saw handled (Receive was called again) or skipped.
	done    int64
	pending int64 // offset after the message Receive handed out last; 0: none
	err     error
}

// item is one message read, in offset order; skip marks another
// connector's or cluster's message.
type item struct {
	offset int64
	msg    runtime.ControlMessage
	skip   bool
}

// poll reads the partition until the link closes.
func (l *link) poll() {
	defer close(l.polled)
	defer close(l.items)
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		ev := l.c.Poll(100)
		switch e := ev.(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				l.t.logger.Warn("control topic: read error", "topic", l.topic, "partition", l.part, "error", e.TopicPartition.Error)
				continue
			}
			it := item{offset: int64(e.TopicPartition.Offset), skip: true}
			if string(e.Key) == l.connector {
				var env envelope
				switch err := json.Unmarshal(e.Value, &env); {
				case err != nil:
					l.t.logger.Warn("control topic: a message does not decode; ignoring it", "topic", l.topic, "partition", l.part, "offset", it.offset, "error", err)
				case env.Version != wireVersion:
					l.t.logger.Warn("control topic: a message of another floe version; ignoring it (run one floe version in a cluster)",
						"topic", l.topic, "offset", it.offset, "version", env.Version, "from", env.From)
				case env.Group == l.t.set.GroupID && env.Connector == l.connector:
					it.msg, it.skip = env.Message, false
				}
			}
			select {
			case l.items <- it:
			case <-l.stop:
				return
			}
		case kafka.Error:
			if e.IsFatal() {
				l.fail(fmt.Errorf("control topic %s: %w", l.topic, e))
				return
			}
		}
	}
}

func (l *link) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// Publish implements runtime.ControlLink.
func (l *link) Publish(ctx context.Context, m runtime.ControlMessage) error {
	value, err := json.Marshal(envelope{Version: wireVersion, Group: l.t.set.GroupID, Connector: l.connector, From: l.t.worker, Message: m})
	if err != nil {
		return fmt.Errorf("control: encode a message of connector %s: %w", l.connector, err)
	}
	done := make(chan kafka.Event, 1)
	topic := l.topic
	p := l.t.currentProducer()
	if err := p.Produce(&kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: l.part},
		Key:            []byte(l.connector), Value: value,
	}, done); err != nil {
		return fmt.Errorf("control: publish to %s: %w", topic, err)
	}
	wedged := time.NewTimer(deliveryTimeout + wedgedAfter)
	defer wedged.Stop()
	select {
	case ev := <-done:
		if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil {
			return fmt.Errorf("control: publish to %s: %w", topic, m.TopicPartition.Error)
		}
		return nil
	case <-wedged.C:
		l.t.replaceWedged(p)
		return fmt.Errorf("control: publish to %s: no delivery report within %s; the producer was replaced", topic, deliveryTimeout+wedgedAfter)
	case <-ctx.Done():
		return fmt.Errorf("control: publish to %s: %w", topic, ctx.Err())
	}
}

// Receive implements runtime.ControlLink.
func (l *link) Receive(ctx context.Context) (runtime.ControlMessage, error) {
	l.handled()
	for {
		select {
		case it, ok := <-l.items:
			if !ok {
				l.mu.Lock()
				err := l.err
				l.mu.Unlock()
				if err == nil {
					err = errors.New("control: link closed")
				}
				return runtime.ControlMessage{}, err
			}
			l.mu.Lock()
			if it.skip {
				l.done = it.offset + 1
				l.cond.Broadcast()
				l.mu.Unlock()
				continue
			}
			l.pending = it.offset + 1
			l.mu.Unlock()
			return it.msg, nil
		case <-ctx.Done():
			return runtime.ControlMessage{}, ctx.Err()
		}
	}
}

// handled marks the message Receive handed out last as handled: the
// caller asks for the next one only after it acted on it.
func (l *link) handled() {
	l.mu.Lock()
	if l.pending > 0 {
		l.done, l.pending = l.pending, 0
		l.cond.Broadcast()
	}
	l.mu.Unlock()
}

// Sync implements runtime.ControlLink: it reads the partition's end now
// and waits until the messages before it were handed out and handled (or
// skipped).
func (l *link) Sync(ctx context.Context) error {
	end, err := highWatermark(ctx, l.c, l.topic, l.part)
	if err != nil {
		return fmt.Errorf("control topic %s: %w", l.topic, err)
	}
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.done < end && l.err == nil && ctx.Err() == nil {
		l.cond.Wait()
	}
	if l.err != nil {
		return l.err
	}
	if l.done < end {
		return fmt.Errorf("control topic %s: caught up to offset %d of %d: %w", l.topic, l.done, end, ctx.Err())
	}
	return nil
}

// Close implements runtime.ControlLink.
func (l *link) Close() {
	l.once.Do(func() {
		close(l.stop)
		<-l.polled
		for range l.items {
		}
		_ = l.c.Close()
		l.fail(errors.New("control: link closed"))
	})
}
