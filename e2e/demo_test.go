package e2e

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// demoCount is how many records the demo run generates (the demo config
// says 2,000,000; a tenth keeps the test near a minute on a busy machine).
const demoCount = 200_000

// TestDemoTableReadByPyIcebergAndDuckDB runs the demo connector
// (configs/demo-datagen.json) on the embedded defaults with
// --exit-when-done, then reads its table with two independent engines and
// checks them against each other and against the values the datagen
// generator makes for the same (partition, offset) positions: the row
// count, no duplicates, the schema, and checksums of an integer, a string
// and a timestamp column.
func TestDemoTableReadByPyIcebergAndDuckDB(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"),
		harness.Plugin("iceberg"), harness.Readers)
	ctx := harness.Context(t, 10*time.Minute)

	demo := harness.LoadConnectorFile(t, repoFile(t, env, "configs/demo-datagen.json"))
	conn := withConfig(demo, map[string]string{"datagen.count": strconv.Itoa(demoCount)})
	table := conn.Config["iceberg.tables"]
	if table == "" || conn.Config["source"] != "datagen" {
		t.Fatalf("configs/demo-datagen.json is no longer a datagen connector with iceberg.tables: %v", conn.Config)
	}

	start := time.Now()
	f := harness.StartFloe(t, env, harness.Options{
		Connectors: []harness.Connector{conn},
		Args:       []string{"--exit-when-done"},
		NoWait:     true,
	})
	if code := f.Wait(ctx); code != 0 {
		t.Fatalf("floe standalone --exit-when-done exited %d, want 0\n%s", code, f.Log())
	}
	t.Logf("demo run of %d records took %s", demoCount, time.Since(start).Round(time.Millisecond))
	// The demo's own config must not draw floe's warnings (it once drew
	// the hash partitioner's "only time transforms" one).
	if f.LogContains(`level=WARN`) {
		var warns []string
		for _, line := range strings.Split(f.Log(), "\n") {
			if strings.Contains(line, "level=WARN") {
				warns = append(warns, line)
			}
		}
		t.Errorf("the demo run logged warnings:\n%s", strings.Join(warns, "\n"))
	}

	gen := harness.DatagenFor(t, env, conn.Config)
	valueCols := []string{"customer_id", "customer_email", "ts"}
	want := gen.Checksums(t, gen.Counts, valueCols...)
	var offsets int64 // sum over partitions of 0+1+…+(n-1)
	for _, n := range gen.Counts {
		offsets += n * (n - 1) / 2
	}
	want["_source_offset"] = strconv.FormatInt(offsets, 10)

	// floe's own view of the table: the metadata DuckDB is told to read.
	ref := harness.EmbeddedTable(f.DataDir, table)
	res := harness.RunFloe(t, env, "", 2*time.Minute, "table", "describe", table, "--worker", f.WorkerFile, "--json")
	var desc struct {
		MetadataLocation string `json:"metadata_location"`
		Files            struct {
			Records int64 `json:"records"`
		} `json:"files"`
	}
	if res.Code != 0 {
		t.Errorf("floe table describe %s --json exited %d; DuckDB reads the catalog's metadata instead\n%s", table, res.Code, res.Output())
	} else if err := json.Unmarshal([]byte(res.Stdout), &desc); err != nil || desc.MetadataLocation == "" {
		t.Errorf("floe table describe --json: %v, metadata_location %q\n%s", err, desc.MetadataLocation, res.Stdout)
	} else {
		ref.Metadata = desc.MetadataLocation
		if desc.Files.Records != demoCount {
			t.Errorf("floe table describe counts %d records in the data files, want %d", desc.Files.Records, demoCount)
		}
	}
	opts := harness.ReadOptions{
		ChecksumCols: append(slices.Clone(valueCols), "_source_offset"),
		DistinctCols: []string{"_source_partition", "_source_offset"},
	}
	py := readBoth(t, env, ref, opts)

	if py.Rows != demoCount {
		t.Errorf("%s holds %d rows, want datagen.count = %d", table, py.Rows, demoCount)
	}
	if py.Distinct == nil || *py.Distinct != py.Rows {
		t.Errorf("%s: %v distinct (_source_partition, _source_offset) among %d rows: duplicates", table, deref(py.Distinct), py.Rows)
	}
	checkChecksums(t, py, want)

	// The schema: the shape's top-level fields in order, then floe's
	// source metadata columns; a few types pinned to their Avro meaning.
	wantCols := []string{"order_id", "customer_id", "customer_email", "ts", "status", "channel", "currency", "total",
		"items", "shipping", "payment", "coupon", "shipped_at", "promised_date", "attributes",
		"_source_partition", "_source_offset", "_source_timestamp"}
	if !slices.Equal(py.Columns(), wantCols) {
		t.Errorf("%s columns:\n  got  %v\n  want %v", table, py.Columns(), wantCols)
	}
	for col, typ := range map[string]string{
		"order_id": "uuid", "customer_id": "long", "ts": "timestamptz", "total": "decimal(12, 2)",
		"promised_date": "date", "attributes": "map<string, string>", "_source_offset": "long",
	} {
		if got, _ := py.Column(col); got != typ {
			t.Errorf("%s: column %s is %q, want %q (the orders shape's Avro type)", table, col, got, typ)
		}
	}

	// floe's own bookkeeping agrees: the committed frontier covers every
	// record of every partition.
	md := harness.LoadMetadata(t, py.Metadata)
	frontier, commits, err := md.Frontier(conn.Name)
	if err != nil {
		t.Fatal(err)
	}
	for p, n := range gen.Counts {
		if got := frontier[gen.PartitionName(p)]; got != n {
			t.Errorf("committed frontier of %s is %d, want %d (all its records)", gen.PartitionName(p), got, n)
		}
	}
	t.Logf("%s: %d rows in %d floe commits; frontier %v", table, py.Rows, commits, frontier)
}
