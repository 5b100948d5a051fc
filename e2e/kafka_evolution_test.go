package e2e

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"math/big"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

// The value schema of TestKafkaAvroEvolutionExactlyOnce in four versions:
// v2 adds an optional field to the nested record, v3 widens amount from
// int to long, v4 makes name optional. Each is BACKWARD compatible with
// the one before, and the registry is told to enforce that.
var evolutionSchemas = []string{
	`{"type": "record", "name": "Event", "namespace": "e2e", "fields": [
		{"name": "id", "type": "long"},
		{"name": "amount", "type": "int"},
		{"name": "name", "type": "string"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"}]}}]}`,
	`{"type": "record", "name": "Event", "namespace": "e2e", "fields": [
		{"name": "id", "type": "long"},
		{"name": "amount", "type": "int"},
		{"name": "name", "type": "string"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"},
			{"name": "region", "type": ["null", "string"], "default": null}]}}]}`,
	`{"type": "record", "name": "Event", "namespace": "e2e", "fields": [
		{"name": "id", "type": "long"},
		{"name": "amount", "type": "long"},
		{"name": "name", "type": "string"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"},
			{"name": "region", "type": ["null", "string"], "default": null}]}}]}`,
	`{"type": "record", "name": "Event", "namespace": "e2e", "fields": [
		{"name": "id", "type": "long"},
		{"name": "amount", "type": "long"},
		{"name": "name", "type": ["null", "string"], "default": null},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"},
			{"name": "region", "type": ["null", "string"], "default": null}]}}]}`,
}

// evolutionRecord is record i of the test: its partition, its schema
// version (0-based) and its field values.
type evolutionRecord struct {
	id        int64
	partition int32
	version   int
	amount    int64
	name      *string // nil: null (v4 only)
	region    *string // nil: null or absent (v1)
}

// evolutionRecords makes n records spread round-robin over partitions.
// The versions advance in four phases, but every fifth record keeps the
// previous phase's version (an old producer still running), so versions
// interleave within each partition. From v3 on, amounts exceed int32.
func evolutionRecords(n, partitions int) []evolutionRecord {
	out := make([]evolutionRecord, n)
	for i := range out {
		phase := i * len(evolutionSchemas) / n
		v := phase
		if i%5 == 0 && v > 0 {
			v--
		}
		r := evolutionRecord{id: int64(i), partition: int32(i % partitions), version: v, amount: int64(i % 100_000)}
		if v >= 2 {
			r.amount = 3_000_000_000 + int64(i)
		}
		name := "name-" + strconv.Itoa(i)
		if v != 3 || i%3 != 0 {
			r.name = &name
		}
		if v >= 1 && i%4 != 0 {
			region := "region-" + strconv.Itoa(i%5)
			r.region = &region
		}
		out[i] = r
	}
	return out
}

func (r evolutionRecord) avroValue() map[string]any {
	meta := map[string]any{"source": "source-" + strconv.Itoa(int(r.id%7))}
	if r.version >= 1 {
		meta["region"] = nil
		if r.region != nil {
			meta["region"] = *r.region
		}
	}
	v := map[string]any{"id": r.id, "meta": meta}
	if r.version >= 2 {
		v["amount"] = r.amount
	} else {
		v["amount"] = int32(r.amount)
	}
	if r.name != nil {
		v["name"] = *r.name
	} else {
		v["name"] = nil
	}
	return v
}

// TestKafkaAvroEvolutionExactlyOnce produces records of four schema
// versions (three evolutions: a nested field added, int widened to long,
// a field made optional), interleaved over six partitions, while floe
// runs kafka → hash → iceberg with two tasks and a Postgres catalog. Once
// floe's frontier reaches the topic's end offsets, PyIceberg and DuckDB
// must both read every produced record exactly once with its values
// (checksums computed from what was produced, including amounts beyond
// int32 and null names), and the table's final schema must have the
// nested field, the long type and the optional field.
func TestKafkaAvroEvolutionExactlyOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers)
	kafkaEvolution(t, env, nil)
}

// TestLakeAvroEvolutionExactlyOnce is TestKafkaAvroEvolutionExactlyOnce
// on the lake: the REST catalog (each evolution a REST schema update) and
// files in S3, read back through the REST catalog and from S3; then the
// Postgres SQL catalog with its warehouse in S3.
func TestLakeAvroEvolutionExactlyOnce(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Postgres, harness.Readers, harness.LakeServices)
	for _, tc := range lakeStacks(env) {
		t.Run(tc.name, func(t *testing.T) { kafkaEvolution(t, env, tc.stack) })
	}
}

// kafkaEvolution runs the evolution test on a Postgres catalog with a
// local warehouse, or (stack set) on the lake.
func kafkaEvolution(t *testing.T, env harness.Env, stack *lakeStack) {
	t.Helper()
	ctx := harness.Context(t, 12*time.Minute)
	const partitions, n = 6, 12_000

	topic := harness.UniqueName("e2e_evolution")
	if err := harness.CreateTopic(ctx, env, topic, partitions); err != nil {
		t.Fatal(err)
	}
	subject := topic + "-value"
	if err := harness.SetCompatibility(ctx, env, subject, "BACKWARD"); err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, len(evolutionSchemas))
	parsed := make([]avro.Schema, len(evolutionSchemas))
	for v, s := range evolutionSchemas {
		id, err := harness.RegisterSchema(ctx, env, subject, s)
		if err != nil {
			t.Fatalf("register schema v%d under %s: %v", v+1, subject, err)
		}
		ids[v], parsed[v] = id, avro.MustParse(s)
	}
	t.Logf("topic %s, schema ids %v", topic, ids)

	namespace := harness.UniqueName("e2e_evo")
	table := namespace + ".events"
	warehouse := filepath.Join(t.TempDir(), "warehouse")
	name := "kafka-evolution"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":            "iceberg",
		"source":                     "kafka",
		"topics":                     topic,
		"kafka.bootstrap.servers":    env.KafkaBootstrap,
		"schema.registry.url":        env.SchemaRegistryURL,
		"consumer.auto.offset.reset": "earliest",
		"tasks.max":                  "2",
		"partitioner":                "hash",
		"commit.interval.ms":         "1000",
		"iceberg.tables":             table,
		"iceberg.catalog.type":       "sql",
		"iceberg.catalog.uri":        env.PostgresURL,
		"iceberg.catalog.warehouse":  "file://" + warehouse,
	}}
	ref := harness.TableRef{CatalogURI: env.PostgresURL, Warehouse: "file://" + warehouse, Name: table}
	var inLake harness.Lake
	if stack != nil {
		maps.Copy(conn.Config, stack.keys(namespace))
		ref, inLake = stack.table(table), stack.lake
	}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	f.WaitStatus(ctx, name, "connector RUNNING", false, harness.ConnectorStatus.Running)

	// Produce while floe runs, a phase at a time, so the table evolves
	// under a live connector.
	records := evolutionRecords(n, partitions)
	for phase := range len(evolutionSchemas) {
		lo, hi := phase*n/len(evolutionSchemas), (phase+1)*n/len(evolutionSchemas)
		sent, err := harness.Produce(ctx, env, topic, func(yield func(harness.Record) bool) {
			for _, r := range records[lo:hi] {
				payload, err := avro.Marshal(parsed[r.version], r.avroValue())
				if err != nil {
					panic(fmt.Sprintf("encode record %d as v%d: %v", r.id, r.version+1, err))
				}
				if !yield(harness.Record{Partition: r.partition, Key: []byte(strconv.FormatInt(r.id, 10)), Value: harness.Frame(ids[r.version], payload)}) {
					return
				}
			}
		})
		if err != nil || sent != hi-lo {
			t.Fatalf("produce phase %d: %d of %d delivered: %v", phase+1, sent, hi-lo, err)
		}
		t.Logf("produced phase %d: records %d..%d", phase+1, lo, hi-1)
	}
	ends, err := harness.EndOffsets(ctx, env, topic)
	if err != nil {
		t.Fatal(err)
	}
	waitFrontier(t, ctx, f, name, topic, ends)
	f.Stop()

	// What was produced.
	var idSum, amountSum big.Int
	var names harness.HashSum
	var offsets int64
	for _, r := range records {
		idSum.Add(&idSum, big.NewInt(r.id))
		amountSum.Add(&amountSum, big.NewInt(r.amount))
		if r.name == nil {
			names.AddNull()
		} else {
			names.AddString(*r.name)
		}
	}
	for _, end := range ends {
		offsets += end * (end - 1) / 2
	}
	py := readBoth(t, env, ref, harness.ReadOptions{
		ChecksumCols: []string{"id", "amount", "name", "_source_offset"},
		DistinctCols: []string{"_source_partition", "_source_offset"},
	})
	if py.Rows != n {
		t.Errorf("%s holds %d rows, %d records were produced", table, py.Rows, n)
	}
	if py.Distinct == nil || *py.Distinct != int64(n) {
		t.Errorf("%s: %v distinct (_source_partition, _source_offset), want %d (every produced record once)", table, deref(py.Distinct), n)
	}
	checkChecksums(t, py, map[string]string{
		"id":             idSum.String(),
		"amount":         amountSum.String(),
		"name":           names.Hex(),
		"_source_offset": strconv.FormatInt(offsets, 10),
	})

	// The final schema, from the table's metadata.
	md := harness.LoadMetadataIn(t, inLake, py.Metadata)
	schema, err := md.CurrentSchema()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := schema.Field("amount"); err != nil || f.TypeName() != "long" {
		t.Errorf("column amount: %v %s, want long (widened by v3)", err, f.TypeName())
	}
	if f, err := schema.Field("meta", "region"); err != nil || f.Required || f.TypeName() != "string" {
		t.Errorf("column meta.region: %v, required=%v, type %s; want an optional string (added by v2)", err, f.Required, f.TypeName())
	}
	if f, err := schema.Field("name"); err != nil || f.Required {
		t.Errorf("column name: %v, required=%v; want optional (made optional by v4)", err, f.Required)
	}
	if f, err := schema.Field("meta", "source"); err != nil || f.TypeName() != "string" {
		t.Errorf("column meta.source: %v %s, want string", err, f.TypeName())
	}
	if got, _ := py.Column("amount"); got != "long" {
		t.Errorf("PyIceberg reads amount as %s, want long", got)
	}
	frontier, commits, err := md.Frontier(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d rows, %d floe commits, schema %d of %d, frontier %v", table, py.Rows, commits, md.CurrentSchemaID, len(md.Schemas), frontier)
	for p, end := range ends {
		if got := frontier[fmt.Sprintf("%s/%d", topic, p)]; got != end {
			t.Errorf("committed frontier of %s/%d is %d, the partition ends at %d", topic, p, got, end)
		}
	}
}

// waitFrontier waits until the connector's committed offsets (GET
// offsets) reach ends for every partition of topic.
func waitFrontier(t *testing.T, ctx context.Context, f *harness.Floe, name, topic string, ends map[int32]int64) {
	t.Helper()
	want := int64(0)
	for _, e := range ends {
		want += e
	}
	f.WaitFor(ctx, "the committed frontier at the topic's end offsets", func(ctx context.Context) (bool, string, error) {
		st, err := f.API.Status(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		if failed := st.Failed(); failed != "" {
			return false, st.Summary(), fmt.Errorf("connector failed:\n%s", failed)
		}
		offs, err := f.API.Offsets(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		got := map[int32]int64{}
		sum := int64(0)
		for _, o := range offs.Offsets {
			if tp, p, v, ok := o.Kafka(); ok && tp == topic {
				got[p] = v
				sum += v
			}
		}
		done := true
		for p, e := range ends {
			done = done && got[p] == e
		}
		return done, fmt.Sprintf("committed %d of %d; %s", sum, want, st.Summary()), nil
	})
}

// produceSeq adapts a slice to Produce's iterator.
func produceSeq(rs []harness.Record) iter.Seq[harness.Record] {
	return func(yield func(harness.Record) bool) {
		for _, r := range rs {
			if !yield(r) {
				return
			}
		}
	}
}
