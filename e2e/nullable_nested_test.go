package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/floehq/floe/e2e/harness"
)

// nullableNestedSchema has the fields LinkedIn's fast-serde test schema
// has: an array and a map that may be null.
const nullableNestedSchema = `{"type": "record", "name": "FastSerdeLike", "namespace": "e2e", "fields": [
	{"name": "id", "type": "long"},
	{"name": "tags", "type": ["null", {"type": "array", "items": "string"}], "default": null},
	{"name": "props", "type": ["null", {"type": "map", "values": "long"}], "default": null}]}`

// parquetNestedScript counts, over the Parquet files given, the rows of
// each column that are null, empty and neither, reading them with pyarrow
// itself (not an Iceberg reader).
const parquetNestedScript = `
import json, sys
import pyarrow.parquet as pq
counts = {}
for path in sys.argv[2:]:
    t = pq.read_table(path, columns=sys.argv[1].split(","))
    for name in t.column_names:
        c = counts.setdefault(name, {"null": 0, "empty": 0, "values": 0})
        for v in t.column(name).to_pylist():
            c["null" if v is None else "empty" if len(v) == 0 else "values"] += 1
print(json.dumps(counts))
`

// TestKafkaNullableListAndMapStayNull pins what floe writes for a field
// typed ["null", array] or ["null", map]: a null stays a null in the
// Parquet files, distinct from an empty array or map. pyarrow reads the
// files directly, because PyIceberg 0.12 reads such nulls as empty lists
// and maps (apache/iceberg-python#3833; see e2e/readers/read_table.py), so a
// check through PyIceberg would hide floe writing empties for nulls.
func TestKafkaNullableListAndMapStayNull(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("kafka"), harness.Plugin("partitioners"), harness.Plugin("iceberg"),
		harness.Kafka, harness.SchemaRegistry, harness.Readers)
	ctx := harness.Context(t, 5*time.Minute)
	const n = 3000

	topic := harness.UniqueName("e2e_nullable_nested")
	if err := harness.CreateTopic(ctx, env, topic, 2); err != nil {
		t.Fatal(err)
	}
	id, err := harness.RegisterSchema(ctx, env, topic+"-value", nullableNestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(nullableNestedSchema)
	// Record i: tags null when i%3 == 0, empty when i%3 == 1; props null
	// when i%4 == 0, empty when i%4 == 1; values otherwise.
	want := map[string]map[string]int{"tags": {}, "props": {}}
	sent, err := harness.Produce(ctx, env, topic, func(yield func(harness.Record) bool) {
		for i := range n {
			v := map[string]any{"id": int64(i), "tags": nil, "props": nil}
			switch i % 3 {
			case 0:
				want["tags"]["null"]++
			case 1:
				v["tags"] = []string{}
				want["tags"]["empty"]++
			default:
				v["tags"] = []string{"t" + strconv.Itoa(i%7), "x"}
				want["tags"]["values"]++
			}
			switch i % 4 {
			case 0:
				want["props"]["null"]++
			case 1:
				v["props"] = map[string]any{"map": map[string]any{}} // a union branch by name
				want["props"]["empty"]++
			default:
				v["props"] = map[string]any{"map": map[string]any{"k": int64(i)}}
				want["props"]["values"]++
			}
			payload, err := avro.Marshal(schema, v)
			if err != nil {
				panic(fmt.Sprintf("encode record %d: %v", i, err))
			}
			if !yield(harness.Record{Partition: int32(i % 2), Value: harness.Frame(id, payload)}) {
				return
			}
		}
	})
	if err != nil || sent != n {
		t.Fatalf("produced %d of %d: %v", sent, n, err)
	}
	ends, err := harness.EndOffsets(ctx, env, topic)
	if err != nil {
		t.Fatal(err)
	}

	name := "nullable-nested"
	table := harness.UniqueName("e2e_nn") + ".events"
	conn := harness.Connector{Name: name, Config: map[string]string{
		"connector.class":            "iceberg",
		"source":                     "kafka",
		"topics":                     topic,
		"kafka.bootstrap.servers":    env.KafkaBootstrap,
		"schema.registry.url":        env.SchemaRegistryURL,
		"consumer.auto.offset.reset": "earliest",
		"tasks.max":                  "1",
		"commit.interval.ms":         "1000",
		"iceberg.tables":             table,
	}}
	f := harness.StartFloe(t, env, harness.Options{Connectors: []harness.Connector{conn}})
	waitFrontier(t, ctx, f, name, topic, ends)
	f.Stop()

	var files []string
	err = filepath.WalkDir(filepath.Join(f.DataDir, "warehouse"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no Parquet files under %s: %v", f.DataDir, err)
	}
	out, err := exec.CommandContext(ctx, env.Python, append([]string{"-c", parquetNestedScript, "tags,props"}, files...)...).Output()
	if err != nil {
		t.Fatalf("pyarrow over %d files: %v\n%s", len(files), err, out)
	}
	var got map[string]map[string]int
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pyarrow's answer %q: %v", out, err)
	}
	for col, w := range want {
		for kind, n := range w {
			if got[col][kind] != n {
				t.Errorf("column %s: %d %s rows in the Parquet files, want %d (pyarrow counts %v)", col, got[col][kind], kind, n, got[col])
			}
		}
	}
	t.Logf("%d Parquet files; pyarrow counts %v", len(files), got)

	// DuckDB, reading through the table, agrees on the row count.
	if duck := harness.ReadTable(t, env, harness.DuckDB, harness.EmbeddedTable(f.DataDir, table), harness.ReadOptions{}); duck.Rows != n {
		t.Errorf("DuckDB reads %d rows, want %d", duck.Rows, n)
	}
}
