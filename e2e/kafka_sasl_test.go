package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestKafkaSASL reads a topic over the broker's SASL_PLAINTEXT listener
// with SCRAM-SHA-256 (records produced over SASL too), end to end into a
// table, and checks that the password is never shown. A second connector
// on the same listener sends its bad records to a dead-letter topic: the
// dead-letter producer must reach the broker with the connector's
// credentials as well.
func TestKafkaSASL(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SASL, harness.SchemaRegistry, harness.Readers)
	ctx := harness.Context(t, 8*time.Minute)
	const mechanism, partitions, n = "SCRAM-SHA-256", 2, 1400

	sasl := env.SASLConfig(mechanism)
	sasl["bootstrap.servers"] = env.SASLBootstrap
	topic := harness.UniqueName("e2e_sasl")
	if err := harness.CreateTopic(ctx, env, topic, partitions); err != nil {
		t.Fatal(err)
	}
	id, err := harness.RegisterSchema(ctx, env, topic+"-value", dlqSchema)
	if err != nil {
		t.Fatal(err)
	}
	records := dlqRecords(t, id, n, partitions)
	rs := make([]harness.Record, len(records))
	var good int64
	for i, r := range records {
		rs[i] = harness.Record{Partition: r.partition, Value: r.value}
		if r.bad == "" {
			good++
		}
	}
	if sent, err := harness.Produce(ctx, env, topic, produceSeq(rs), sasl); err != nil || sent != n {
		t.Fatalf("produce over SASL (%s) to %s: %d of %d delivered: %v", mechanism, topic, sent, n, err)
	}
	ends, err := harness.EndOffsets(ctx, env, topic)
	if err != nil {
		t.Fatal(err)
	}

	f := harness.StartFloe(t, env, harness.Options{})
	connector := func(name, table string, extra map[string]string) harness.Connector {
		return withConfig(harness.Connector{Name: name, Config: map[string]string{
			"connector.class":         "iceberg",
			"source":                  "kafka",
			"topics":                  topic,
			"kafka.bootstrap.servers": env.SASLBootstrap,
			"kafka.security.protocol": "SASL_PLAINTEXT",
			"kafka.sasl.mechanisms":   mechanism,
			"kafka.sasl.username":     env.SASLUser,
			"kafka.sasl.password":     env.SASLPassword,
			"schema.registry.url":     env.SchemaRegistryURL,
			"tasks.max":               "2",
			"commit.interval.ms":      "1000",
			"iceberg.tables":          table,
			"errors.tolerance":        "all",
			// The corrupt records carry ids no registry will know:
			// dead-letter them at once (plugins/kafka tests the wait).
			"schema.registry.unknown.timeout.ms": "0",
		}}, extra)
	}

	t.Run("consume over SCRAM-SHA-256", func(t *testing.T) {
		name := "sasl-payments"
		if _, err := f.API.CreateConnector(ctx, connector(name, "sasl.payments", nil)); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.API.Config(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if cfg["kafka.sasl.password"] == env.SASLPassword {
			t.Errorf("GET config shows kafka.sasl.password in clear")
		}
		waitFrontier(t, ctx, f, name, topic, ends)
		ref := harness.EmbeddedTable(f.DataDir, "sasl.payments")
		py := harness.ReadTable(t, env, harness.PyIceberg, ref, harness.ReadOptions{DistinctCols: []string{"_source_partition", "_source_offset"}})
		if py.Rows != good || py.Distinct == nil || *py.Distinct != good {
			t.Errorf("sasl.payments: %d rows, %v distinct positions; want the %d good records once each", py.Rows, deref(py.Distinct), good)
		}
	})

	t.Run("dead letters over SASL", func(t *testing.T) {
		name := "sasl-payments-dlq"
		dlq := topic + "_dlq"
		conn := connector(name, "sasl.payments_dlq", map[string]string{
			"errors.deadletterqueue.topic.name":               dlq,
			"errors.deadletterqueue.topic.replication.factor": strconv.Itoa(min(env.KafkaBrokers, 3)),
			"consumer.group.id":                               harness.UniqueName("sasl_dlq"),
		})
		if _, err := f.API.CreateConnector(ctx, conn); err != nil {
			t.Fatal(err)
		}
		dctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		waitFrontier(t, dctx, f, name, topic, ends)
		msgs, err := harness.Consume(dctx, env, dlq, n-int(good))
		if err != nil {
			t.Fatalf("the dead letters of a SASL connector: %v", err)
		}
		if len(msgs) != n-int(good) {
			t.Errorf("the dead-letter topic holds %d messages, %d records were bad", len(msgs), n-int(good))
		}
	})
	f.Stop()
}
