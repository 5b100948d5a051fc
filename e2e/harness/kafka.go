package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/plugins/kafka/kafkatest"
)

// KafkaConfig is librdkafka settings added to the bootstrap list.
type KafkaConfig = ckafka.ConfigMap

// SASLConfig returns the librdkafka settings that reach the SASL listener
// with mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) as the services'
// user; use it with Env.SASLBootstrap.
func (e Env) SASLConfig(mechanism string) KafkaConfig {
	return KafkaConfig{
		"security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanisms":   mechanism,
		"sasl.username":     e.SASLUser,
		"sasl.password":     e.SASLPassword,
	}
}

// CreateTopic creates topic with the given number of partitions (the
// replication factor follows the broker count) and waits until every
// partition has a leader.
func CreateTopic(ctx context.Context, env Env, topic string, partitions int) error {
	return CreateTopicWith(ctx, env, topic, partitions, nil)
}

// CreateTopicWith is CreateTopic with topic configs (retention.ms, …).
func CreateTopicWith(ctx context.Context, env Env, topic string, partitions int, topicConfig map[string]string) error {
	return kafkatest.CreateTopicReplicated(ctx, env.KafkaBootstrap, topic, partitions, kafkatest.ReplicationFor(env.KafkaBrokers), topicConfig)
}

// Record is one Kafka message to produce.
type Record struct {
	Partition int32
	Key       []byte
	// Value is the message value; nil is a tombstone.
	Value   []byte
	Headers map[string]string
	// HeaderList are headers in order, repeats kept, a nil Value for a
	// null header; they follow Headers.
	HeaderList []Header
}

// Produce writes records to topic, each to its Partition, and waits until
// the broker confirmed every one (acks=all, idempotent); it returns how
// many were delivered.
func Produce(ctx context.Context, env Env, topic string, records iter.Seq[Record], extra ...KafkaConfig) (int, error) {
	return kafkatest.Produce(ctx, env.KafkaBootstrap, topic, 0, func(yield func(kafkatest.Record) bool) {
		for r := range records {
			kr := kafkatest.Record{Partition: r.Partition, Key: r.Key, Value: r.Value}
			for k, v := range r.Headers {
				kr.Headers = append(kr.Headers, ckafka.Header{Key: k, Value: []byte(v)})
			}
			for _, h := range r.HeaderList {
				kr.Headers = append(kr.Headers, ckafka.Header{Key: h.Key, Value: h.Value})
			}
			if !yield(kr) {
				return
			}
		}
	}, extra...)
}

// Frame returns payload in the Confluent wire format: magic byte 0, the
// schema id big-endian, the Avro payload.
func Frame(schemaID int32, payload []byte) []byte { return kafkatest.Frame(schemaID, payload) }

// Message is a consumed Kafka message.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	// Headers are the message's headers in order (duplicates kept).
	Headers []Header
}

// Header is one message header.
type Header struct {
	Key   string
	Value []byte
}

// Header returns the value of the first header named key.
func (m Message) Header(key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// EndOffsets returns each partition's high watermark (the offset the next
// record will get).
func EndOffsets(ctx context.Context, env Env, topic string, extra ...KafkaConfig) (map[int32]int64, error) {
	c, err := newConsumer(env, extra)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	return endOffsets(ctx, c, topic)
}

func endOffsets(ctx context.Context, c *ckafka.Consumer, topic string) (map[int32]int64, error) {
	md, err := c.GetMetadata(&topic, false, timeoutMs(ctx, 10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("metadata of topic %s: %w", topic, err)
	}
	tm, ok := md.Topics[topic]
	if !ok || tm.Error.Code() != ckafka.ErrNoError {
		return nil, fmt.Errorf("topic %s: not found (%w)", topic, tm.Error)
	}
	out := map[int32]int64{}
	for _, p := range tm.Partitions {
		_, high, err := c.QueryWatermarkOffsets(topic, p.ID, timeoutMs(ctx, 10*time.Second))
		if err != nil {
			return nil, fmt.Errorf("watermarks of %s/%d: %w", topic, p.ID, err)
		}
		out[p.ID] = high
	}
	return out, nil
}

// Consume reads topic from the beginning of every partition until it has
// read at least min messages and everything up to the end offsets it saw
// then, or ctx ends (an error naming how many it got). Messages come
// partition by partition in offset order.
func Consume(ctx context.Context, env Env, topic string, min int, extra ...KafkaConfig) ([]Message, error) {
	c, err := newConsumer(env, extra)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	var ends map[int32]int64
	for {
		ends, err = endOffsets(ctx, c, topic)
		total := int64(0)
		for _, e := range ends {
			total += e
		}
		if err == nil && total >= int64(min) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("consume %s: want at least %d messages, the topic has %d (%w): %w", topic, min, total, err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	var tps []ckafka.TopicPartition
	for p, end := range ends {
		if end > 0 {
			tps = append(tps, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.OffsetBeginning})
		}
	}
	if err := c.Assign(tps); err != nil {
		return nil, fmt.Errorf("consume %s: assign: %w", topic, err)
	}
	byPart := map[int32][]Message{}
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("consume %s: read up to %v of end offsets %v: %w", topic, next, ends, ctx.Err())
		}
		ev := c.Poll(200)
		switch e := ev.(type) {
		case *ckafka.Message:
			if e.TopicPartition.Error != nil {
				return nil, fmt.Errorf("consume %s: %w", topic, e.TopicPartition.Error)
			}
			p := e.TopicPartition.Partition
			m := Message{Topic: topic, Partition: p, Offset: int64(e.TopicPartition.Offset), Key: e.Key, Value: e.Value}
			for _, h := range e.Headers {
				m.Headers = append(m.Headers, Header{Key: h.Key, Value: h.Value})
			}
			if m.Offset < ends[p] {
				byPart[p] = append(byPart[p], m)
			}
			next[p] = m.Offset + 1
		case ckafka.Error:
			if e.IsFatal() {
				return nil, fmt.Errorf("consume %s: %w", topic, e)
			}
		}
	}
	var out []Message
	for p := int32(0); int(p) < len(ends); p++ {
		out = append(out, byPart[p]...)
	}
	return out, nil
}

func newConsumer(env Env, extra []KafkaConfig) (*ckafka.Consumer, error) {
	cfg := KafkaConfig{
		"bootstrap.servers":     env.KafkaBootstrap,
		"broker.address.family": "v4",
		"group.id":              UniqueName("floe_e2e_reader"),
		"enable.auto.commit":    false,
		"auto.offset.reset":     "earliest",
		"isolation.level":       "read_uncommitted",
	}
	for _, e := range extra {
		for k, v := range e {
			cfg[k] = v
		}
	}
	c, err := ckafka.NewConsumer(&cfg)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer for %v: %w", cfg["bootstrap.servers"], err)
	}
	return c, nil
}

func timeoutMs(ctx context.Context, limit time.Duration) int {
	d := limit
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		d = time.Until(dl)
	}
	return int(max(d, 100*time.Millisecond).Milliseconds())
}

// RegisterSchema registers an Avro schema under subject in the registry
// and returns its id.
func RegisterSchema(ctx context.Context, env Env, subject, schema string) (int32, error) {
	return kafkatest.Register(ctx, env.SchemaRegistryURL, subject, schema)
}

// SetCompatibility sets subject's compatibility level (BACKWARD,
// FORWARD, FULL, NONE, …; "_TRANSITIVE" variants too). Apicurio enforces
// none by default, so a test that relies on checks must set one.
func SetCompatibility(ctx context.Context, env Env, subject, level string) error {
	body, _ := json.Marshal(map[string]string{"compatibility": level})
	url := strings.TrimRight(env.SchemaRegistryURL, "/") + "/config/" + subject
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("set compatibility of %s: %w", subject, err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("set compatibility of %s to %s: HTTP %d: %s", subject, level, resp.StatusCode, answer)
	}
	return nil
}

// TopicBytes reads topic from the offsets from to the offsets to (each
// partition's [from, to), from a missing partition's 0) and returns the
// records and the key plus value bytes read. It stops at each partition
// once the consumer's position passes to, so transaction markers (which
// take an offset but are never delivered) do not stall it, and after 5 s
// without a record (what it reads was written before).
func TopicBytes(ctx context.Context, env Env, topic string, from, to map[int32]int64, extra ...KafkaConfig) (records, bytes int64, err error) {
	c, err := newConsumer(env, extra)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = c.Close() }()
	var tps []ckafka.TopicPartition
	for p, end := range to {
		if end > from[p] {
			tps = append(tps, ckafka.TopicPartition{Topic: &topic, Partition: p, Offset: ckafka.Offset(from[p])})
		}
	}
	if len(tps) == 0 {
		return 0, 0, nil
	}
	if err := c.Assign(tps); err != nil {
		return 0, 0, fmt.Errorf("read %s: assign: %w", topic, err)
	}
	last := time.Now()
	for {
		pos, err := c.Position(tps)
		if err != nil {
			return records, bytes, fmt.Errorf("read %s: position: %w", topic, err)
		}
		done := true
		for _, tp := range pos {
			if tp.Offset < 0 || int64(tp.Offset) < to[tp.Partition] {
				done = false
			}
		}
		if done || time.Since(last) > 5*time.Second {
			return records, bytes, nil
		}
		if ctx.Err() != nil {
			return records, bytes, fmt.Errorf("read %s up to %v: at %v: %w", topic, to, pos, ctx.Err())
		}
		switch e := c.Poll(200).(type) {
		case *ckafka.Message:
			if e.TopicPartition.Error != nil {
				return records, bytes, fmt.Errorf("read %s: %w", topic, e.TopicPartition.Error)
			}
			last = time.Now()
			if int64(e.TopicPartition.Offset) < to[e.TopicPartition.Partition] {
				records++
				bytes += int64(len(e.Key) + len(e.Value))
			}
		case ckafka.Error:
			if e.IsFatal() {
				return records, bytes, fmt.Errorf("read %s: %w", topic, e)
			}
		}
	}
}
