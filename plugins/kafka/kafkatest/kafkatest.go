// Package kafkatest helps tests and benchmarks that need a real Kafka
// broker and Schema Registry: finding the services e2e/services/up
// started, creating topics, registering schemas and producing
// Confluent-framed records with delivery confirmed.
//
// It is for tests only; the kafka plugin does not import it.
//
// # Services
//
// [Services] reads the environment e2e/services/up writes
// (FLOE_KAFKA_BOOTSTRAP, FLOE_SCHEMA_REGISTRY_URL, FLOE_KAFKA_SASL_*). A
// test without them is skipped with a message saying how to start them,
// unless FLOE_REQUIRE_SERVICES=1, which fails it instead (make test sets
// it, so nothing passes there by skipping).
//
// # Producing
//
//	env := kafkatest.Services(t)
//	topic := kafkatest.UniqueName("orders")
//	err := kafkatest.CreateTopic(ctx, env.Bootstrap, topic, 6)
//	id, err := kafkatest.Register(ctx, env.RegistryURL, topic+"-value", schemaJSON)
//	n, err := kafkatest.Produce(ctx, env.Bootstrap, topic, 6, func(yield func(kafkatest.Record) bool) {
//		for i := range 1000 {
//			if !yield(kafkatest.Record{Value: kafkatest.Frame(id, payload(i))}) {
//				return
//			}
//		}
//	})
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"os"
	"strconv"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/floehq/floe/schemas"
)

// Env describes the services a test runs against.
type Env struct {
	// Bootstrap is the PLAINTEXT bootstrap list (FLOE_KAFKA_BOOTSTRAP).
	Bootstrap string
	// Brokers is the number of brokers (FLOE_KAFKA_BROKERS, default 1);
	// topics are created with this replication factor.
	Brokers int
	// RegistryURL is the Confluent-compatible registry API
	// (FLOE_SCHEMA_REGISTRY_URL).
	RegistryURL string
	// SASLBootstrap, SASLUser and SASLPassword describe the SASL_PLAINTEXT
	// listeners (FLOE_KAFKA_SASL_*), when the services run with --sasl.
	SASLBootstrap, SASLUser, SASLPassword string
}

// RequireEnv is the variable that turns missing services into failures.
const RequireEnv = "FLOE_REQUIRE_SERVICES"

// Services returns the services from the environment. Without
// FLOE_KAFKA_BOOTSTRAP and FLOE_SCHEMA_REGISTRY_URL it skips t, or fails
// it when FLOE_REQUIRE_SERVICES=1.
func Services(t testing.TB) Env {
	t.Helper()
	env := Env{
		Bootstrap:     os.Getenv("FLOE_KAFKA_BOOTSTRAP"),
		RegistryURL:   os.Getenv("FLOE_SCHEMA_REGISTRY_URL"),
		SASLBootstrap: os.Getenv("FLOE_KAFKA_SASL_BOOTSTRAP"),
		SASLUser:      os.Getenv("FLOE_KAFKA_SASL_USER"),
		SASLPassword:  os.Getenv("FLOE_KAFKA_SASL_PASSWORD"),
		Brokers:       1,
	}
	if n, err := strconv.Atoi(os.Getenv("FLOE_KAFKA_BROKERS")); err == nil && n > 0 {
		env.Brokers = n
	}
	if env.Bootstrap == "" || env.RegistryURL == "" {
		msg := "needs Kafka and a Schema Registry: run e2e/services/up, then . /tmp/floe-services/env (FLOE_KAFKA_BOOTSTRAP and FLOE_SCHEMA_REGISTRY_URL are not set)"
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but this test %s", RequireEnv, msg)
		}
		t.Skip("skipped: this test " + msg)
	}
	return env
}

// UniqueName returns prefix followed by a random suffix, for topics and
// groups that must not clash with other runs against the same broker.
func UniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// CreateTopic creates topic with the given number of partitions and a
// replication factor of min(3, FLOE_KAFKA_BROKERS), and waits until every
// partition has a leader. extra passes librdkafka settings (SASL…).
func CreateTopic(ctx context.Context, bootstrap, topic string, partitions int, extra ...ckafka.ConfigMap) error {
	return CreateTopicWith(ctx, bootstrap, topic, partitions, nil, extra...)
}

// CreateTopicWith is CreateTopic with topic configs (retention.ms, …).
func CreateTopicWith(ctx context.Context, bootstrap, topic string, partitions int, topicConfig map[string]string, extra ...ckafka.ConfigMap) error {
	brokers, _ := strconv.Atoi(os.Getenv("FLOE_KAFKA_BROKERS"))
	return CreateTopicReplicated(ctx, bootstrap, topic, partitions, ReplicationFor(brokers), topicConfig, extra...)
}

// ReplicationFor is the replication factor a test topic gets on a cluster
// of brokers nodes: min(brokers, 3), at least 1.
func ReplicationFor(brokers int) int { return max(1, min(brokers, 3)) }

// CreateTopicReplicated is CreateTopicWith with the replication factor rf.
func CreateTopicReplicated(ctx context.Context, bootstrap, topic string, partitions, rf int, topicConfig map[string]string, extra ...ckafka.ConfigMap) error {
	cfg := config(bootstrap, extra)
	admin, err := ckafka.NewAdminClient(&cfg)
	if err != nil {
		return fmt.Errorf("kafkatest: admin client for %s: %w", bootstrap, err)
	}
	defer admin.Close()
	res, err := admin.CreateTopics(ctx, []ckafka.TopicSpecification{{Topic: topic, NumPartitions: partitions, ReplicationFactor: rf, Config: topicConfig}},
		ckafka.SetAdminOperationTimeout(30*time.Second))
	if err != nil {
		return fmt.Errorf("kafkatest: create topic %s: %w", topic, err)
	}
	for _, r := range res {
		if r.Error.Code() != ckafka.ErrNoError {
			return fmt.Errorf("kafkatest: create topic %s: %w", topic, r.Error)
		}
	}
	for {
		md, err := admin.GetMetadata(&topic, false, 5000)
		if err == nil {
			if tm, ok := md.Topics[topic]; ok && tm.Error.Code() == ckafka.ErrNoError && len(tm.Partitions) == partitions {
				ready := true
				for _, p := range tm.Partitions {
					if p.Leader < 0 {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: topic %s not ready: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Register registers an Avro schema under subject and returns its id.
func Register(ctx context.Context, registryURL, subject, schema string) (int32, error) {
	reg, err := schemas.NewRegistry(schemas.RegistryConfig{URL: registryURL})
	if err != nil {
		return 0, err
	}
	return reg.Register(ctx, subject, schema)
}

// Frame returns payload in the Confluent wire format for schemaID.
func Frame(schemaID int32, payload []byte) []byte {
	return schemas.AppendConfluent(make([]byte, 0, schemas.ConfluentHeaderLen+len(payload)), schemaID, payload)
}

// Record is one message to produce.
type Record struct {
	// Partition is the record's partition, unless Produce spreads the
	// records itself (partitions > 0).
	Partition int32
	Key       []byte
	// Value is the message value; nil produces a null value (a tombstone).
	Value   []byte
	Headers []ckafka.Header
	// Timestamp is the record's timestamp; zero lets the producer set it.
	Timestamp time.Time
}

// Produce writes records to topic and waits until the broker confirmed
// every one (acks=all, idempotent). With partitions > 0 the n-th record
// goes to partition n % partitions; with 0 each goes to its Partition.
// It returns how many records were delivered, and the first error. extra
// passes librdkafka producer settings (SASL, linger.ms…).
func Produce(ctx context.Context, bootstrap, topic string, partitions int, records iter.Seq[Record], extra ...ckafka.ConfigMap) (int, error) {
	cfg := config(bootstrap, append([]ckafka.ConfigMap{{
		"acks":                         "all",
		"enable.idempotence":           true,
		"linger.ms":                    20,
		"batch.size":                   1 << 20,
		"queue.buffering.max.kbytes":   256 << 10,
		"queue.buffering.max.messages": 1_000_000,
		"go.delivery.reports":          true,
		"go.delivery.report.fields":    "none",
	}}, extra...))
	p, err := ckafka.NewProducer(&cfg)
	if err != nil {
		return 0, fmt.Errorf("kafkatest: producer for %s: %w", bootstrap, err)
	}
	defer p.Close()

	type result struct {
		delivered int
		err       error
	}
	sent := 0
	done := make(chan result, 1)
	expect := make(chan int, 1)
	go func() {
		var res result
		failed, total := 0, -1
		exp := expect
		for total < 0 || res.delivered+failed < total {
			select {
			case n := <-exp:
				total, exp = n, nil
			case ev := <-p.Events():
				switch e := ev.(type) {
				case *ckafka.Message:
					if e.TopicPartition.Error != nil {
						failed++
						if res.err == nil {
							res.err = fmt.Errorf("kafkatest: deliver to %s: %w", e.TopicPartition, e.TopicPartition.Error)
						}
						continue
					}
					res.delivered++
				case ckafka.Error:
					if res.err == nil && e.IsFatal() {
						res.err = fmt.Errorf("kafkatest: producer: %w", e)
					}
				}
			case <-ctx.Done():
				if res.err == nil {
					res.err = ctx.Err()
				}
				done <- res
				return
			}
		}
		done <- res
	}()

	for r := range records {
		msg := &ckafka.Message{
			TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: r.Partition},
			Key:            r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp,
		}
		if partitions > 0 {
			msg.TopicPartition.Partition = int32(sent % partitions)
		}
		for {
			err := p.Produce(msg, nil)
			if err == nil {
				break
			}
			var kerr ckafka.Error
			if !errors.As(err, &kerr) || kerr.Code() != ckafka.ErrQueueFull {
				expect <- sent
				res := <-done
				return res.delivered, fmt.Errorf("kafkatest: produce to %s: %w", topic, err)
			}
			p.Flush(100)
			if ctx.Err() != nil {
				expect <- sent
				res := <-done
				return res.delivered, ctx.Err()
			}
		}
		sent++
	}
	expect <- sent
	res := <-done
	return res.delivered, res.err
}

// config merges librdkafka settings over the bootstrap list.
func config(bootstrap string, extra []ckafka.ConfigMap) ckafka.ConfigMap {
	cfg := ckafka.ConfigMap{"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
	for _, e := range extra {
		for k, v := range e {
			cfg[k] = v
		}
	}
	return cfg
}
