package maintenance

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for FLOE_POSTGRES_URL
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/floehq/floe/sdk"
)

// backend is a catalog the tests run against: the embedded SQLite one in
// a temporary folder, or Postgres at FLOE_POSTGRES_URL.
type backend struct {
	name    string
	dataDir string
	// catalogName scopes the catalog's tables and maintenance locks.
	catalogName string
	// open opens a new connection to the same catalog.
	open catalogOpener
}

// backends returns SQLite, plus Postgres when FLOE_POSTGRES_URL is set. It
// fails the test when FLOE_REQUIRE_SERVICES=1 and Postgres is missing.
func backends(t *testing.T) []func(t testing.TB) backend {
	out := []func(t testing.TB) backend{sqliteBackend}
	if os.Getenv("FLOE_POSTGRES_URL") != "" {
		out = append(out, postgresBackend)
	} else if os.Getenv("FLOE_REQUIRE_SERVICES") == "1" {
		t.Fatal("FLOE_REQUIRE_SERVICES=1 but FLOE_POSTGRES_URL is not set: start Postgres (e2e services) and set it")
	} else {
		t.Log("FLOE_POSTGRES_URL is not set: the Postgres catalog variant is skipped (set it to postgres://user:pw@host:5432/db)")
	}
	return out
}

func runBackends(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, mk := range backends(t) {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

func sqliteBackend(t testing.TB) backend {
	dir := t.TempDir()
	dsn := "file:" + filepath.Join(dir, "catalog.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
	warehouse := "file://" + filepath.Join(dir, "warehouse")
	return backend{name: "sqlite", dataDir: dir, catalogName: "floe", open: sqlOpener(sqliteshim.ShimName, sqlcat.SQLite, dialectSQLite, dsn, "floe", warehouse)}
}

func postgresBackend(t testing.TB) backend {
	dir := t.TempDir()
	name := fmt.Sprintf("floe_maint_%d", time.Now().UnixNano())
	return backend{name: "postgres", dataDir: dir, catalogName: name,
		open: sqlOpener("pgx", sqlcat.Postgres, dialectPostgres, os.Getenv("FLOE_POSTGRES_URL"), name, "file://"+filepath.Join(dir, "warehouse"))}
}

// sqlOpener opens a fresh *sql.DB and SQL catalog per call, as separate
// processes would.
func sqlOpener(driver string, d sqlcat.SupportedDialect, dialect sqlDialect, dsn, name, warehouse string) catalogOpener {
	return func(ctx context.Context, _ map[string]string) (catalogConn, error) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return catalogConn{}, err
		}
		cat, err := sqlcat.NewCatalog(name, db, d, iceberg.Properties{"warehouse": warehouse})
		if err != nil {
			_ = db.Close()
			return catalogConn{}, err
		}
		return catalogConn{cat: cat, db: db, dialect: dialect, close: func() error { return errors.Join(cat.Close(), db.Close()) }}, nil
	}
}

// catalog opens a handle of the test's own.
func (b backend) catalog(t testing.TB) catalog.Catalog {
	t.Helper()
	conn, err := b.open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.close() })
	return conn.cat
}

// config is a connector config for the table, with overrides.
func (b backend) config(tbl string, kv ...string) map[string]string {
	cfg := map[string]string{keyIcebergTables: tbl, keyDataDir: b.dataDir, keyCatalogName: b.catalogName}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return cfg
}

// only returns config pairs that disable every task but keep.
func only(keep ...string) []string {
	var kv []string
	for _, task := range allTasks {
		if !slices.Contains(keep, task) {
			kv = append(kv, prefix+task+sfxEnabled, "false")
		}
	}
	return kv
}

// openTask opens a maintenance task of connector "orders" in process.
func (b backend) openTask(t testing.TB, cfg map[string]string) *task {
	t.Helper()
	return b.openTaskLogging(t, cfg, testLogger(t))
}

// openTaskLogging is openTask with the task's logger.
func (b backend) openTaskLogging(t testing.TB, cfg map[string]string, log *slog.Logger) *task {
	t.Helper()
	comp := newComponent(b.open)
	mt, err := comp.Maintenance.Open(context.Background(), sdk.MaintenanceOpenRequest{
		Connector: "orders", Config: sdk.NewConfig(cfg), Logger: log,
	})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = mt.Close(context.Background()) })
	return mt.(*task)
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("FLOE_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "part", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 3, Name: "payload", Type: iceberg.PrimitiveTypes.String},
)

// sinkTableProps are the properties floe's sink gives the tables it
// creates (plugins/iceberg defaultTableProps).
var sinkTableProps = iceberg.Properties{
	"write.parquet.compression-codec":            "zstd",
	"commit.manifest-merge.enabled":              "true",
	"write.metadata.delete-after-commit.enabled": "true",
	"write.metadata.previous-versions-max":       "50",
}

// createTable creates ns.name partitioned by identity(part), with props.
func createTable(t testing.TB, cat catalog.Catalog, name string, props iceberg.Properties) *table.Table {
	t.Helper()
	ctx := context.Background()
	id, err := parseTableName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, id[:len(id)-1], nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "part", Transform: iceberg.IdentityTransform{}})
	all := iceberg.Properties{"format-version": "2"}
	for k, v := range props {
		all[k] = v
	}
	tbl, err := cat.CreateTable(ctx, id, testSchema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(all))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// row is one test row; its payload derives from its id.
type row struct {
	id   int64
	part string
}

func payload(id int64) string { return "payload-" + strconv.FormatInt(id*7919, 36) }

// writer commits rows as floe's committer does: data files first, then
// one AddDataFiles commit with the floe summary keys, reloading and
// re-adding the same files when the table moved (floe's own retries).
type writer struct {
	cat        catalog.Catalog
	ident      table.Identifier
	connector  string
	checkpoint uint64
	offset     int64
	// conflicts counts commits retried after a conflict.
	conflicts int
}

func newWriter(cat catalog.Catalog, name, connector string) *writer {
	id, _ := parseTableName(name)
	return &writer{cat: cat, ident: id, connector: connector}
}

// commit writes rows (one file per partition) and commits them.
func (w *writer) commit(ctx context.Context, rows []row) error {
	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	rec := arrowRows(sc, rows)
	var files []iceberg.DataFile
	seq := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	for df, err := range table.WriteRecords(ctx, tbl, sc, iter.Seq2[arrow.RecordBatch, error](seq)) {
		if err != nil {
			return err
		}
		files = append(files, df)
	}
	w.checkpoint++
	w.offset += int64(len(rows))
	offsets, _ := json.Marshal(map[string]int64{"p0": w.offset})
	props := iceberg.Properties{
		summaryConnector: w.connector, "floe.checkpoint": strconv.FormatUint(w.checkpoint, 10), "floe.offsets": string(offsets),
		"floe.committer.id": "test", "floe.committer.epoch": "1",
	}
	for attempt := 0; ; attempt++ {
		txn := tbl.NewTransaction()
		if err := txn.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck()); err != nil {
			return err
		}
		_, err := txn.Commit(ctx)
		if err == nil {
			return nil
		}
		if !isConflict(err) || attempt >= 50 {
			return fmt.Errorf("commit checkpoint %d after %d attempts: %w", w.checkpoint, attempt+1, err)
		}
		w.conflicts++
		time.Sleep(time.Duration(5+attempt*5) * time.Millisecond)
		if tbl, err = w.cat.LoadTable(ctx, w.ident); err != nil {
			return err
		}
	}
}

func arrowRows(sc *arrow.Schema, rows []row) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append(r.part)
		b.Field(2).(*array.StringBuilder).Append(payload(r.id))
	}
	return b.NewRecordBatch()
}

// rowsFor makes n rows from id first, spread over parts partitions.
func rowsFor(first int64, n, parts int) []row {
	out := make([]row, n)
	for i := range out {
		id := first + int64(i)
		out[i] = row{id: id, part: fmt.Sprintf("p%d", id%int64(parts))}
	}
	return out
}

// fill commits commits of rowsPer rows each, ids from 0.
func fill(t testing.TB, w *writer, commits, rowsPer, parts int) int64 {
	t.Helper()
	var next int64
	for range commits {
		if err := w.commit(context.Background(), rowsFor(next, rowsPer, parts)); err != nil {
			t.Fatal(err)
		}
		next += int64(rowsPer)
	}
	return next
}

// contents is what a full scan of a table returns.
type contents struct {
	rows     int64
	checksum uint64 // order-independent: sum of row hashes
	ids      map[int64]int
	bad      int // rows whose payload does not match their id
}

// scan reads every row of the table.
func scan(t testing.TB, cat catalog.Catalog, name string) contents {
	t.Helper()
	ctx := context.Background()
	id, _ := parseTableName(name)
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	c := contents{ids: map[int64]int{}}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64)
		parts := rec.Column(1).(*array.String)
		pays := rec.Column(2).(*array.String)
		for i := range int(rec.NumRows()) {
			h := fnv.New64a()
			_, _ = fmt.Fprintf(h, "%d|%s|%s", ids.Value(i), parts.Value(i), pays.Value(i)) // a hash.Hash never fails a write
			c.checksum += h.Sum64()
			c.rows++
			c.ids[ids.Value(i)]++
			if pays.Value(i) != payload(ids.Value(i)) {
				c.bad++
			}
		}
		rec.Release()
	}
	return c
}

// checkExactly fails unless the table holds ids [0, n) exactly once each.
func (c contents) checkExactly(t testing.TB, n int64) {
	t.Helper()
	if c.rows != n || len(c.ids) != int(n) || c.bad > 0 {
		t.Fatalf("table holds %d rows, %d distinct ids, %d corrupt; want %d rows with ids 0..%d once each", c.rows, len(c.ids), c.bad, n, n-1)
	}
	for id := range n {
		if c.ids[id] != 1 {
			t.Fatalf("id %d appears %d times", id, c.ids[id])
		}
	}
}

// shape measures a table as the monitor does.
func shape(t testing.TB, cat catalog.Catalog, name string) TableChange {
	t.Helper()
	ch, err := newMonitor().observe(context.Background(), cat, settings{}, name, false)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// runsOf returns the runs of one task.
func runsOf(runs []sdk.TaskRun, task string) []sdk.TaskRun {
	var out []sdk.TaskRun
	for _, r := range runs {
		if r.Task == task {
			out = append(out, r)
		}
	}
	return out
}

// cycle runs one cycle and fails the test on a cycle or run error.
func cycle(t testing.TB, tk *task, req sdk.CycleRequest) sdk.CycleResult {
	t.Helper()
	res, err := tk.Cycle(context.Background(), req)
	if err != nil {
		t.Fatalf("cycle: %v", err)
	}
	for _, r := range res.Runs {
		if r.Error != "" {
			t.Fatalf("run %s on %s failed: %s", r.Task, r.Table, r.Error)
		}
	}
	return res
}
