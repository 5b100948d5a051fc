package e2e

import (
	"context"
	"strconv"
	"strings"
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

// TestKafkaWrongPasswordFailsOnce: a wrong SASL password is a valid
// config that only the broker can refuse, so it reaches the running
// tasks. Each fails once, with the broker's reason and the key to fix,
// marked permanent: the restart policy leaves it FAILED (no restart over
// several of its passes, floe_restarts_total stays 0) and the trace says
// floe does not restart it. Once the right password is PUT, the connector
// runs and commits every record.
func TestKafkaWrongPasswordFailsOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SASL, harness.SchemaRegistry)
	ctx := harness.Context(t, 5*time.Minute)
	const partitions, n = 2, 600

	topic := harness.UniqueName("e2e_sasl_wrong")
	if err := harness.CreateTopic(ctx, env, topic, partitions); err != nil {
		t.Fatal(err)
	}
	id, err := harness.RegisterSchema(ctx, env, topic+"-value", dlqSchema)
	if err != nil {
		t.Fatal(err)
	}
	var rs []harness.Record
	for _, r := range dlqRecords(t, id, n, partitions) {
		if r.bad == "" {
			rs = append(rs, harness.Record{Partition: r.partition, Value: r.value})
		}
	}
	if sent, err := harness.Produce(ctx, env, topic, produceSeq(rs)); err != nil || sent != len(rs) {
		t.Fatalf("produce to %s: %d of %d delivered: %v", topic, sent, len(rs), err)
	}
	ends, err := harness.EndOffsets(ctx, env, topic)
	if err != nil {
		t.Fatal(err)
	}

	f := harness.StartFloe(t, env, harness.Options{})
	name := "sasl-wrong-password"
	wrong := env.SASLPassword + "-wrong"
	cfg := map[string]string{
		"connector.class":         "iceberg",
		"source":                  "kafka",
		"topics":                  topic,
		"kafka.bootstrap.servers": env.SASLBootstrap,
		"kafka.security.protocol": "SASL_PLAINTEXT",
		"kafka.sasl.mechanisms":   "SCRAM-SHA-256",
		"kafka.sasl.username":     env.SASLUser,
		"kafka.sasl.password":     wrong,
		"schema.registry.url":     env.SchemaRegistryURL,
		"tasks.max":               strconv.Itoa(partitions),
		"commit.interval.ms":      "1000",
		"iceberg.tables":          "sasl.wrong_password",
		// A quick policy: a failure it retried would restart 5 times or
		// more within the 6 s watched below.
		"restart.backoff.initial.ms": "200",
		"errors.retry.delay.max.ms":  "1000",
	}
	if _, err := f.API.CreateConnector(ctx, harness.Connector{Name: name, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	allFailed := func(s harness.ConnectorStatus) bool {
		if len(s.Tasks) != partitions {
			return false
		}
		for _, tk := range s.Tasks {
			// The policy's note follows the failure within a tick.
			if tk.State != "FAILED" || !strings.Contains(tk.Trace, "floe ") {
				return false
			}
		}
		return true
	}
	st := f.WaitStatus(ctx, name, "every task FAILED with the restart policy's note", true, allFailed)
	for _, tk := range st.Tasks {
		for _, want := range []string{"refused the consumer's credentials", "kafka.sasl.password", "Authentication failed", "floe does not restart it"} {
			if !strings.Contains(tk.Trace, want) {
				t.Errorf("task %d's trace does not say %q:\n%s", tk.ID, want, tk.Trace)
			}
		}
		if strings.Contains(tk.Trace, wrong) {
			t.Errorf("task %d's trace shows the password", tk.ID)
		}
	}

	// Several policy passes (every 200 ms): nothing restarts.
	restarts := func() float64 {
		m, err := f.API.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := m.Sum("floe_restarts_total", `connector="`+name+`"`)
		return v
	}
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		s, err := f.API.Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !allFailed(s) || s.Floe == nil || s.Floe.Restarts != 0 {
			t.Fatalf("a permanent failure changed state (restarted?): %s; restarts %v", s.Summary(), s.Floe)
		}
		if r := restarts(); r != 0 {
			t.Fatalf("floe_restarts_total{connector=%q} = %v, want 0", name, r)
		}
	}
	st, err = f.API.Status(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Floe.Healing) != partitions {
		t.Errorf("floe.healing lists %d failures, want one per task: %+v", len(st.Floe.Healing), st.Floe.Healing)
	}
	for _, h := range st.Floe.Healing {
		if !h.Permanent || h.Attempts != 0 {
			t.Errorf("floe.healing %+v: want permanent with no attempt", h)
		}
	}
	if got := strings.Count(f.Log(), "failure is permanent; it waits for a human"); got != partitions {
		t.Errorf("the worker logged %d permanent failures, want one per task", got)
	}

	// The right password: the connector runs and commits everything.
	cfg["kafka.sasl.password"] = env.SASLPassword
	if _, _, err := f.API.PutConfig(ctx, name, cfg); err != nil {
		t.Fatal(err)
	}
	fixed := time.Now()
	waitFrontier(t, ctx, f, name, topic, ends)
	t.Logf("failed once per task, no restart over 6 s; after the right password every record was committed within %s", time.Since(fixed).Round(time.Millisecond))
	f.Stop()
}
