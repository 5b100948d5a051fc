package e2e

import (
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

// The value schemas of TestValidateChecksSchemaEvolution: v1 fills the
// table; v2 changes amount from long to string, which no table evolution
// allows; v3 is v1 with an optional field added.
const (
	validateV1 = `{"type": "record", "name": "Payment", "namespace": "e2e", "fields": [
		{"name": "id", "type": "long"},
		{"name": "amount", "type": "long"}]}`
	validateV2 = `{"type": "record", "name": "Payment", "namespace": "e2e", "fields": [
		{"name": "id", "type": "long"},
		{"name": "amount", "type": "string"}]}`
	validateV3 = `{"type": "record", "name": "Payment", "namespace": "e2e", "fields": [
		{"name": "id", "type": "long"},
		{"name": "amount", "type": "long"},
		{"name": "note", "type": ["null", "string"], "default": null}]}`
)

// TestValidateChecksSchemaEvolution: with a table holding rows of v1,
// PUT /connector-plugins/iceberg/config/validate of the connector's config
// reports, under topics, that the subject's latest schema (v2, amount long
// → string) cannot evolve the table, naming the field and both types;
// once the latest is a compatible v3 (an optional field added) the same
// config validates clean; and a registry that never answers is a timeout
// under schema.registry.url, not a hung call.
func TestValidateChecksSchemaEvolution(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry)
	ctx := harness.Context(t, 4*time.Minute)

	topic := harness.UniqueName("e2e_validate")
	if err := harness.CreateTopic(ctx, env, topic, 1); err != nil {
		t.Fatal(err)
	}
	subject := topic + "-value"
	// Apicurio must accept v2, which is incompatible on purpose.
	if err := harness.SetCompatibility(ctx, env, subject, "NONE"); err != nil {
		t.Fatal(err)
	}
	id1, err := harness.RegisterSchema(ctx, env, subject, validateV1)
	if err != nil {
		t.Fatal(err)
	}
	v1 := avro.MustParse(validateV1)
	const n = 20
	sent, err := harness.Produce(ctx, env, topic, func(yield func(harness.Record) bool) {
		for i := range n {
			payload, err := avro.Marshal(v1, map[string]any{"id": int64(i), "amount": int64(i * 100)})
			if err != nil {
				panic(err)
			}
			if !yield(harness.Record{Key: []byte(strconv.Itoa(i)), Value: harness.Frame(id1, payload)}) {
				return
			}
		}
	})
	if err != nil || sent != n {
		t.Fatalf("produce: %d of %d delivered: %v", sent, n, err)
	}

	table := harness.UniqueName("e2e_validate") + ".payments"
	name := "validate-evolution"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"name":                       name,
		"connector.class":            "iceberg",
		"source":                     "kafka",
		"topics":                     topic,
		"kafka.bootstrap.servers":    env.KafkaBootstrap,
		"schema.registry.url":        env.SchemaRegistryURL,
		"consumer.auto.offset.reset": "earliest",
		"commit.interval.ms":         "1000",
		"iceberg.tables":             table,
	}}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	f.WaitStatus(ctx, name, "connector RUNNING", false, harness.ConnectorStatus.Running)
	ends, err := harness.EndOffsets(ctx, env, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitFrontier(t, ctx, f, name, topic, ends)

	infos, err := f.API.Validate(ctx, "iceberg", conn.Config)
	if err != nil {
		t.Fatal(err)
	}
	if infos.ErrorCount != 0 {
		t.Fatalf("validate with the table's own schema latest: error_count %d: %v", infos.ErrorCount, infos.Errors())
	}

	t.Run("incompatible latest schema", func(t *testing.T) {
		if _, err := harness.RegisterSchema(ctx, env, subject, validateV2); err != nil {
			t.Fatal(err)
		}
		infos, err := f.API.Validate(ctx, "iceberg", conn.Config)
		if err != nil {
			t.Fatal(err)
		}
		checkErrorCount(t, infos)
		errs := infos.Errors()
		if infos.ErrorCount != 1 || len(errs["topics"]) != 1 {
			t.Fatalf("error_count %d, errors %v; want one error, under topics", infos.ErrorCount, errs)
		}
		msg := errs["topics"][0]
		t.Logf("topics: %s", msg)
		for _, want := range []string{"field amount", "long", "string", fmt.Sprintf("%q", subject), table} {
			if !strings.Contains(msg, want) {
				t.Errorf("the message does not name %s: %s", want, msg)
			}
		}
	})

	t.Run("compatible latest schema", func(t *testing.T) {
		if _, err := harness.RegisterSchema(ctx, env, subject, validateV3); err != nil {
			t.Fatal(err)
		}
		infos, err := f.API.Validate(ctx, "iceberg", conn.Config)
		if err != nil {
			t.Fatal(err)
		}
		if infos.ErrorCount != 0 {
			t.Errorf("an added optional field: error_count %d: %v", infos.ErrorCount, infos.Errors())
		}
	})

	t.Run("registry that never answers", func(t *testing.T) {
		// A listener that never accepts: connections complete in the
		// kernel's backlog and requests get no answer.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		silent := maps.Clone(conn.Config)
		silent["schema.registry.url"] = "http://" + l.Addr().String()
		silent["schema.registry.request.timeout.ms"] = "2000"
		start := time.Now()
		infos, err := f.API.Validate(ctx, "iceberg", silent)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		errs := infos.Errors()
		if !containsAll(errs["schema.registry.url"], "timeout after 2s") || !containsAll(errs["schema.registry.url"], l.Addr().String()) {
			t.Errorf("errors %v; want a timeout after 2s naming the registry under schema.registry.url", errs)
		}
		if took > 20*time.Second {
			t.Errorf("validate took %v", took)
		}
		checkErrorCount(t, infos)
	})
}
