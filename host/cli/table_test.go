package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/lake"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// testCatalog opens the embedded catalog under dir, as floe does.
func testCatalog(ctx context.Context, dir string) (catalog.Catalog, func() error, error) {
	return sharedCatalogOpener(ctx, map[string]string{lake.KeyDataDir: dir})
}

// makeOrders creates demo.orders (nested columns, partitioned by day(ts))
// and commits two appends, the second carrying floe's summary keys.
func makeOrders(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	cat, closeCat, err := testCatalog(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeCat() }()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.String, Required: true, Doc: "Order identifier."},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 3, Name: "items", Type: &iceberg.ListType{ElementID: 5, ElementRequired: true, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 6, Name: "sku", Type: iceberg.PrimitiveTypes.String, Required: true},
			{ID: 7, Name: "quantity", Type: iceberg.PrimitiveTypes.Int32},
		}}}},
		iceberg.NestedField{ID: 4, Name: "attributes", Type: &iceberg.MapType{KeyID: 8, KeyType: iceberg.PrimitiveTypes.String, ValueID: 9, ValueType: iceberg.PrimitiveTypes.String}},
	)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}})
	if err := cat.CreateNamespace(ctx, table.Identifier{"demo"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"demo", "orders"}, sc, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{"format-version": "2", "write.target-file-size-bytes": "1048576"}))
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, props := range []iceberg.Properties{nil, {"floe.connector": "demo-orders", "floe.checkpoint": "7", "floe.offsets": `{"orders/0":3}`}} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		for r := range 3 {
			b.Field(0).(*array.StringBuilder).Append("o" + string(rune('a'+i*3+r)))
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 1+r, 0, 0, 0, 0, time.UTC).UnixMicro()))
			lb := b.Field(2).(*array.ListBuilder)
			lb.Append(true)
			sb := lb.ValueBuilder().(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append("SKU-1")
			sb.FieldBuilder(1).(*array.Int32Builder).Append(2)
			b.Field(3).(*array.MapBuilder).AppendNull()
		}
		rec := b.NewRecordBatch()
		b.Release()
		at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
		rec.Release()
		if tbl, err = tbl.AppendTable(ctx, at, 100, props); err != nil {
			t.Fatal(err)
		}
		at.Release()
	}
}

func tableApp(dir string) *App {
	return &App{openCatalog: func(ctx context.Context, config map[string]string) (catalog.Catalog, func() error, error) {
		return testCatalog(ctx, config[keyDataDir])
	}}
}

func TestTableDescribe(t *testing.T) {
	dir := t.TempDir()
	makeOrders(t, dir)

	r := runApp(t, tableApp(dir), "table", "describe", "demo.orders", "--data-dir", dir, "--json")
	r.wants(t, 0, nil, nil)
	var d TableDescription
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if d.Table != "demo.orders" || d.FormatVersion != 2 || !strings.HasSuffix(d.MetadataLocation, ".metadata.json") || d.Location == "" {
		t.Errorf("header = %+v", d)
	}
	if len(d.Schema.Fields) != 4 || d.Schema.Fields[0].Doc != "Order identifier." || !d.Schema.Fields[0].Required {
		t.Errorf("schema = %+v", d.Schema)
	}
	items := d.Schema.Fields[2]
	if items.Type != "list" || len(items.Fields) != 1 || items.Fields[0].Type != "struct" || len(items.Fields[0].Fields) != 2 || items.Fields[0].Fields[0].Name != "sku" || items.Fields[0].Fields[0].ID <= items.ID {
		t.Errorf("nested list = %+v", items)
	}
	if attrs := d.Schema.Fields[3]; attrs.Type != "map" || len(attrs.Fields) != 2 || attrs.Fields[1].Name != "value" {
		t.Errorf("map = %+v", attrs)
	}
	if len(d.PartitionSpec.Fields) != 1 || d.PartitionSpec.Fields[0].Transform != "day" || d.PartitionSpec.Fields[0].Source != "ts" {
		t.Errorf("spec = %+v", d.PartitionSpec)
	}
	if len(d.Snapshots) != 2 || d.Snapshots[1].Checkpoint != "7" || !d.Snapshots[1].Current || d.Snapshots[0].Operation != "append" ||
		d.Snapshots[1].Summary["floe.connector"] != "demo-orders" || d.CurrentSnapshotID == nil || *d.CurrentSnapshotID != d.Snapshots[1].ID {
		t.Errorf("snapshots = %+v", d.Snapshots)
	}
	if d.Files.Records != 6 || d.Files.DataFiles < 2 || d.Files.DataBytes <= 0 || d.Files.SmallFiles != d.Files.DataFiles ||
		d.Files.SmallFileBytes != 786432 || d.Files.Manifests < 1 || d.Files.DeleteFiles != 0 {
		t.Errorf("files = %+v", d.Files)
	}
	if d.Properties["write.target-file-size-bytes"] != "1048576" {
		t.Errorf("properties = %v", d.Properties)
	}

	// Each of the two appends wrote one file per day.
	if d.Files.Partitions != 3 || d.Files.MaxPartitionFiles != 2 || d.Files.MaxPartition != "ts_day=2026-01-01" {
		t.Errorf("partitions = %+v", d.Files)
	}
	if d.Maintenance == nil || len(d.Maintenance) != 0 {
		t.Errorf("maintenance runs without a history: %+v", d.Maintenance)
	}

	r = runApp(t, tableApp(dir), "table", "describe", "demo.orders", "--data-dir", dir)
	r.wants(t, 0, []string{"table demo.orders", "metadata", "schema (id 0)", "order_id", "required", "Order identifier.",
		"    element", "      sku", "partition spec", "ts_day  day(ts)", "properties", "snapshots (2)", "floe.connector=demo-orders",
		"records", "6", "small files", "partitions", "3, the fullest ts_day=2026-01-01 with 2 data files", "maintenance: no runs recorded",
		"iceberg_scan('" + strings.TrimPrefix(d.MetadataLocation, "file://") + "')",
		// a fresh machine has no duckdb CLI: where to get it, or the Python package
		"https://duckdb.org/docs/installation", "pip install duckdb", "import duckdb"}, nil)

	// The maintenance plugin's history files (one per connector) hold
	// its runs; describe shows this table's, oldest first, without dry
	// runs and torn lines.
	history := `{"table":"demo.orders","task":"expire-snapshots","trigger":"interval 10m0s ≥ 10m0s","started":"2026-12-01T10:05:00Z","duration_ms":40,"files_before":120,"files_after":10,"detail":"expired 110 snapshot(s)"}
{"table":"demo.orders","task":"rewrite-data-files","trigger":"small-file-count 6 ≥ 6","started":"2026-12-01T10:00:00Z","duration_ms":1500,"files_before":57,"files_after":12,"detail":"tiered: rewrote 50 file(s)"}
{"table":"demo.refunds","task":"rewrite-data-files","started":"2026-12-01T10:01:00Z","duration_ms":10}
{"table":"demo.orders","task":"rewrite-data-files","started":"2026-12-01T10:02:00Z","dry_run":true}
{"table":"demo.orders","task":"rewrite-manifests","started":"2026-12-01T10:03:00Z","error":"commit: requirement failed"}
{"table":"demo.or`
	if err := os.MkdirAll(filepath.Join(dir, "maintenance"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "maintenance", "demo-orders.jsonl"), []byte(history), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runApp(t, tableApp(dir), "table", "describe", "demo.orders", "--data-dir", dir, "--json")
	d = TableDescription{}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if got := d.Maintenance; len(got) != 3 || got[0].Task != "rewrite-data-files" || got[0].FilesBefore != 57 || got[0].FilesAfter != 12 ||
		got[0].Duration != 1500*time.Millisecond || got[1].Error == "" || got[2].Task != "expire-snapshots" {
		t.Errorf("maintenance runs = %+v", got)
	}
	runApp(t, tableApp(dir), "table", "describe", "demo.orders", "--data-dir", dir).wants(t, 0, []string{
		"maintenance (the last 3 of 3 runs recorded)", "small-file-count 6 ≥ 6", "1.5s", "57 → 12", "tiered: rewrote 50 file(s)",
		"FAILED: commit: requirement failed", "expire-snapshots"}, nil)

	runApp(t, tableApp(dir), "table", "describe", "demo.nope", "--data-dir", dir).
		wants(t, 1, nil, []string{"table demo.nope does not exist", "data dir " + dir, "--data-dir"})
	runApp(t, tableApp(dir), "table", "describe", "demo.orders", "--worker", "w.json", "--catalog-uri", "x").
		wants(t, 2, nil, []string{"give one of --worker, --connector or --catalog-uri"})
}

func TestCatalogConfig(t *testing.T) {
	dir := t.TempDir()
	d := standaloneDir{dir: dir}
	conn := d.write(t, "c.json", `{"name": "c", "config": {"iceberg.catalog.uri": "postgres://u:pw@h/db", "iceberg.catalog.warehouse": "s3://w", "tasks.max": "1"}}`)
	cfg, err := catalogConfig(&tableOpts{connector: conn, dataDir: "./data"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg[keyCatalogURI] != "postgres://u:pw@h/db" || cfg[keyCatalogWarehouse] != "s3://w" || cfg["tasks.max"] != "" || cfg[keyDataDir] != "./data" {
		t.Errorf("config = %v", cfg)
	}
	wf := d.write(t, "w.json", `{"data.dir": "/srv/floe"}`)
	cfg, err = catalogConfig(&tableOpts{worker: wf, catalogType: "sql", name: "lake"})
	if err != nil || cfg[keyDataDir] != "/srv/floe" || cfg[keyCatalogType] != "sql" || cfg[keyCatalogName] != "lake" {
		t.Errorf("config = %v, %v", cfg, err)
	}
	if got := tableHint(map[string]string{keyCatalogURI: "postgres://u:pw@h/db"}); strings.Contains(got, "pw") {
		t.Errorf("hint shows the password: %s", got)
	}
	// The real opener (lake) finds no such table in an empty data dir and
	// says where it looked.
	runApp(t, nil, "table", "describe", "demo.orders", "--data-dir", dir).wants(t, 1, nil, []string{"table demo.orders does not exist", "data dir " + dir})
}
