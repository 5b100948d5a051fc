package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

const eventSchema = `{"type": "record", "name": "Event", "namespace": "e2e", "fields": [
	{"name": "id", "type": "long"},
	{"name": "type", "type": "string"},
	{"name": "db_table", "type": "string"}]}`

// apacheDocsConfigs are the three example configs of the Apache Iceberg
// Kafka Connect sink's documentation (docs/docs/kafka-connect.md: single
// destination table; multi-table fan-out, static routing; multi-table
// fan-out, dynamic routing), verbatim: the placeholders (https://localhost,
// <credential>, <warehouse name>) are the only values a user fills in.
var apacheDocsConfigs = map[string]map[string]string{
	"single": {
		"connector.class":            "org.apache.iceberg.connect.IcebergSinkConnector",
		"tasks.max":                  "2",
		"topics":                     "events",
		"iceberg.tables":             "default.events",
		"iceberg.catalog.type":       "rest",
		"iceberg.catalog.uri":        "https://localhost",
		"iceberg.catalog.credential": "<credential>",
		"iceberg.catalog.warehouse":  "<warehouse name>",
	},
	"static": {
		"connector.class":            "org.apache.iceberg.connect.IcebergSinkConnector",
		"tasks.max":                  "2",
		"topics":                     "events",
		"iceberg.tables":             "default.events_list,default.events_create",
		"iceberg.tables.route-field": "type",
		"iceberg.table.default.events_list.route-regex":   "list",
		"iceberg.table.default.events_create.route-regex": "create",
		"iceberg.catalog.type":                            "rest",
		"iceberg.catalog.uri":                             "https://localhost",
		"iceberg.catalog.credential":                      "<credential>",
		"iceberg.catalog.warehouse":                       "<warehouse name>",
	},
	"dynamic": {
		"connector.class":                "org.apache.iceberg.connect.IcebergSinkConnector",
		"tasks.max":                      "2",
		"topics":                         "events",
		"iceberg.tables.dynamic-enabled": "true",
		"iceberg.tables.route-field":     "db_table",
		"iceberg.catalog.type":           "rest",
		"iceberg.catalog.uri":            "https://localhost",
		"iceberg.catalog.credential":     "<credential>",
		"iceberg.catalog.warehouse":      "<warehouse name>",
	},
}

// carriedOver are keys users bring from an Apache (or Tabular) sink
// config: floe accepts each, and logs the ones it ignores with why.
var carriedOver = map[string]string{
	"iceberg.tables.default-id-columns":                          "id",
	"iceberg.tables.schema-force-optional":                       "true",
	"iceberg.tables.schema-case-insensitive":                     "true",
	"iceberg.tables.default-commit-branch":                       "main",
	"iceberg.tables.write-props.write.parquet.compression-codec": "zstd",
	"iceberg.control.topic":                                      "control-iceberg",
	"iceberg.control.group-id-prefix":                            "cg-control",
	"iceberg.control.commit.timeout-ms":                          "30000",
	"iceberg.control.commit.threads":                             "4",
	"iceberg.control.commit.interval-ms":                         "1000",
	"iceberg.hadoop.fs.s3a.endpoint":                             "http://ignored:9000",
	"iceberg.kafka.auto.offset.reset":                            "earliest",
}

// TestApacheIcebergSinkConfigs starts the Apache Iceberg sink docs' three
// example configs unchanged against a real broker, Schema Registry, REST
// catalog and object store, on a worker configured as a Kafka Connect
// worker is (bootstrap.servers and the Avro converter with its registry
// URL in the worker config). Each must run, not fail, and write what
// Apache's sink writes: every record in the single table; in the static
// fan-out each type to its table and the type no route-regex matches
// skipped (counted in the log, not failing the task); in the dynamic
// fan-out each record to the table its field names and a value that names
// no namespace.table skipped. A fourth connector carries Connect's
// converter keys in its own config (Tabular's class name) and the Apache
// sink's other keys: it runs too, and the log names every key floe
// ignores.
func TestApacheIcebergSinkConfigs(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.LakeServices, harness.Readers)
	ctx := harness.Context(t, 4*time.Minute)

	topic := harness.UniqueName("e2e_events")
	if err := harness.CreateTopic(ctx, env, topic, 2); err != nil {
		t.Fatal(err)
	}
	id, err := harness.RegisterSchema(ctx, env, topic+"-value", eventSchema)
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.ToLower(harness.UniqueName("apache"))
	schema := avro.MustParse(eventSchema)
	const n = 30
	types := []string{"list", "create", "delete"} // delete: no route-regex
	tables := []string{ns + ".events_a", ns + ".events_b", "orphan"}
	var rs []harness.Record
	for i := range n {
		payload, err := avro.Marshal(schema, map[string]any{"id": int64(i), "type": types[i%3], "db_table": tables[i%3]})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, harness.Record{Partition: int32(i % 2), Key: []byte(strconv.Itoa(i)), Value: harness.Frame(id, payload)})
	}
	if sent, err := harness.Produce(ctx, env, topic, produceSeq(rs)); err != nil || sent != n {
		t.Fatalf("produce: %d of %d: %v", sent, n, err)
	}

	f := harness.StartFloe(t, env, harness.Options{Worker: map[string]string{
		"bootstrap.servers":                   env.KafkaBootstrap,
		"key.converter":                       "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                     "io.confluent.connect.avro.AvroConverter",
		"value.converter.schema.registry.url": env.SchemaRegistryURL,
	}})

	// fill puts a docs config on this run's services and names: the
	// placeholders become the REST catalog's, the topic and the tables'
	// namespace this run's, and the object store's keys are added (the
	// REST catalog here does not vend them).
	fill := func(config map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range config {
			switch v {
			case "https://localhost":
				v = env.Lake.RESTURI
			case "<credential>":
				v = env.Lake.RESTCredential
			case "<warehouse name>":
				v = env.Lake.RESTWarehouse
			case "events":
				v = topic
			}
			v = strings.ReplaceAll(v, "default.", ns+".")
			out[strings.ReplaceAll(k, ".default.", "."+ns+".")] = v
		}
		for k, v := range env.Lake.S3Keys() {
			out[k] = v
		}
		return out
	}
	connectors := map[string]map[string]string{}
	for name, config := range apacheDocsConfigs {
		connectors[name] = fill(config)
	}
	carried := fill(apacheDocsConfigs["single"])
	carried["connector.class"] = "io.tabular.iceberg.connect.IcebergSinkConnector"
	carried["iceberg.tables"] = ns + ".carried"
	carried["key.converter"] = "org.apache.kafka.connect.storage.StringConverter"
	carried["value.converter"] = "io.confluent.connect.avro.AvroConverter"
	carried["value.converter.schema.registry.url"] = env.SchemaRegistryURL
	for k, v := range carriedOver {
		carried[k] = v
	}
	connectors["carried"] = carried

	for name, config := range connectors {
		if _, err := f.API.CreateConnector(ctx, harness.Connector{Name: name, Config: config}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	for name := range connectors {
		f.WaitFor(ctx, name+" past all "+strconv.Itoa(n)+" records", func(ctx context.Context) (bool, string, error) {
			st, err := f.API.Status(ctx, name)
			if err != nil {
				return false, err.Error(), nil
			}
			if failed := st.Failed(); failed != "" {
				return false, st.Summary(), fmt.Errorf("%s failed:\n%s", name, failed)
			}
			offs, err := f.API.Offsets(ctx, name)
			if err != nil {
				return false, err.Error(), nil
			}
			// With several tables each holds its own position of a
			// partition; the connector is past a record once all are.
			least := map[string]int64{}
			for _, o := range offs.Offsets {
				p := fmt.Sprint(o.Partition["kafka_topic"], "/", o.Partition["kafka_partition"])
				if v, seen := least[p]; !seen || offsetValue(t, o) < v {
					least[p] = offsetValue(t, o)
				}
			}
			var sum int64
			for _, v := range least {
				sum += v
			}
			return sum == n, fmt.Sprintf("%s; offsets %v", st.Summary(), least), nil
		})
	}

	rows := func(table string) int64 {
		return harness.ReadTable(t, env, harness.PyIceberg, env.Lake.RESTTable(table), harness.ReadOptions{}).Rows
	}
	for table, want := range map[string]int64{
		ns + ".events": n, ns + ".carried": n,
		ns + ".events_list": n / 3, ns + ".events_create": n / 3,
		ns + ".events_a": n / 3, ns + ".events_b": n / 3,
	} {
		if got := rows(table); got != want {
			t.Errorf("table %s holds %d rows, want %d", table, got, want)
		}
	}
	for _, want := range []string{"example_value=delete", "example_value=orphan"} {
		if !f.LogContains(`skipped records that reach no table.*` + want) {
			t.Errorf("the log does not report records skipped with %s", want)
		}
	}
	// The skipped records reach /metrics too: a third of the records
	// (type delete, table orphan) in each routed connector, none elsewhere.
	m, err := f.API.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name := range connectors {
		want := 0.0
		if name == "static" || name == "dynamic" {
			want = n / 3
		}
		if got, found := m.Sum("floe_records_skipped_total", `connector="`+name+`"`); !found || got != want {
			t.Errorf("floe_records_skipped_total{connector=%q} = %v (found %v), want %v", name, got, found, want)
		}
	}
	// iceberg.tables.schema-force-optional=true (carried) makes every
	// column optional, as Apache's sink does; without it (single) the
	// Avro schema's required id stays required. Read from the metadata
	// PyIceberg read the table through.
	required := func(table string) []string {
		read := harness.ReadTable(t, env, harness.PyIceberg, env.Lake.RESTTable(table), harness.ReadOptions{})
		sc, err := harness.LoadMetadataIn(t, env.Lake, read.Metadata).CurrentSchema()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range sc.Fields {
			if c.Required {
				out = append(out, c.Name)
			}
		}
		return out
	}
	if got := required(ns + ".carried"); len(got) != 0 {
		t.Errorf("table %s (schema-force-optional=true) has required columns %v, want none", ns+".carried", got)
	}
	if got := required(ns + ".events"); !slices.Contains(got, "id") {
		t.Errorf("table %s (no force-optional) has required columns %v, want id among them", ns+".events", got)
	}
	for k := range carriedOver {
		logged := f.LogContains(`accepted but ignored.*key=` + regexp.QuoteMeta(k) + `\b`)
		switch k {
		case "iceberg.control.commit.interval-ms", // floe's commit interval
			"iceberg.tables.schema-force-optional", // checked above
			// Unit tests in plugins/iceberg check these.
			"iceberg.tables.schema-case-insensitive",
			"iceberg.tables.write-props.write.parquet.compression-codec":
			if logged {
				t.Errorf("the log names %s as ignored; the sink honours it", k)
			}
			continue
		}
		if !logged {
			t.Errorf("the log does not name the ignored key %s", k)
		}
	}
}
