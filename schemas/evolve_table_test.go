package schemas

import (
	"context"
	"encoding/json"
	"iter"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/hamba/avro/v2"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// The four record schema versions the table goes through.
var evolutionVersions = []string{
	// v1
	`{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":"string","doc":"customer name"},
		{"name":"n","type":"int"},
		{"name":"score","type":"float"},
		{"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"street","type":"string"}]}},
		{"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"}]}}},
		{"name":"attrs","type":{"type":"map","values":{"type":"record","name":"Attr","fields":[{"name":"v","type":"string"}]}}}]}`,
	// v2: nested fields added in a struct, a struct inside a list and a struct inside a map
	`{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":"string","doc":"customer name"},
		{"name":"n","type":"int"},
		{"name":"score","type":"float"},
		{"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"street","type":"string"},{"name":"zip","type":["null","string"],"doc":"postal code"}]}},
		{"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
		{"name":"attrs","type":{"type":"map","values":{"type":"record","name":"Attr","fields":[{"name":"v","type":"string"},{"name":"w","type":["null","long"]}]}}}]}`,
	// v3: n int -> long, score float -> double
	`{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":"string","doc":"customer name"},
		{"name":"n","type":"long"},
		{"name":"score","type":"double"},
		{"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"street","type":"string"},{"name":"zip","type":["null","string"],"doc":"postal code"}]}},
		{"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
		{"name":"attrs","type":{"type":"map","values":{"type":"record","name":"Attr","fields":[{"name":"v","type":"string"},{"name":"w","type":["null","long"]}]}}}]}`,
	// v4: name becomes optional
	`{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":["null","string"],"doc":"customer name"},
		{"name":"n","type":"long"},
		{"name":"score","type":"double"},
		{"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"street","type":"string"},{"name":"zip","type":["null","string"],"doc":"postal code"}]}},
		{"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
		{"name":"attrs","type":{"type":"map","values":{"type":"record","name":"Attr","fields":[{"name":"v","type":"string"},{"name":"w","type":["null","long"]}]}}}]}`,
}

// orderRow builds one row of version v (0-based) with the given id.
func orderRow(v int, id int64) map[string]any {
	item := map[string]any{"sku": "sku-" + string(rune('a'+id))}
	attr := map[string]any{"v": "val"}
	addr := map[string]any{"street": "main st"}
	row := map[string]any{"id": id, "name": "cust", "addr": addr,
		"items": []any{item}, "attrs": map[string]any{"k": attr}}
	if v >= 1 {
		addr["zip"] = map[string]any{"string": "10115"}
		item["qty"] = int(id)
		attr["w"] = map[string]any{"long": id * 100}
	}
	if v >= 2 {
		row["n"] = int64(1) << 40 // needs long
		row["score"] = 0.1
	} else {
		row["n"] = int(id)
		row["score"] = float32(1.5)
	}
	if v >= 3 {
		if id%2 == 1 {
			row["name"] = nil
		} else {
			row["name"] = map[string]any{"string": "cust"}
		}
	}
	return row
}

func newSQLiteCatalog(t *testing.T) catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	cat, err := catalog.Load(context.Background(), "local", iceberg.Properties{
		"type":                "sql",
		"uri":                 "file:" + filepath.Join(dir, "catalog.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)",
		sqlcat.DriverKey:      sqliteshim.ShimName,
		sqlcat.DialectKey:     string(sqlcat.SQLite),
		"warehouse":           "file://" + filepath.Join(dir, "warehouse"),
		"init_catalog_tables": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(context.Background(), table.Identifier{"floe"}, nil); err != nil {
		t.Fatal(err)
	}
	return cat
}

// decodeVersion decodes rows of version v into a value-only batch.
func decodeVersion(t *testing.T, v int, ids ...int64) arrow.RecordBatch {
	t.Helper()
	s := mustParse(t, evolutionVersions[v])
	dec, err := NewDecoder(s)
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([][]byte, len(ids))
	for i, id := range ids {
		payloads[i] = marshal(t, s, orderRow(v, id))
	}
	rec, bad, err := dec.DecodeBatch(memory.NewGoAllocator(), payloads)
	if err != nil || len(bad) != 0 {
		t.Fatalf("decode v%d: %v %v", v+1, err, bad)
	}
	return rec
}

func oneBatch(rec arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
}

// writeAndCommit is the two-phase path the sink uses: WriteRecords, then
// AddDataFiles in a transaction. It consumes rec.
func writeAndCommit(ctx context.Context, tbl *table.Table, rec arrow.RecordBatch) (*table.Table, error) {
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, rec.Schema(), oneBatch(rec)) {
		if err != nil {
			return nil, err
		}
		files = append(files, df)
	}
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck()); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

func fieldIDs(s *iceberg.Schema) map[string]int {
	ids := map[string]int{}
	for _, name := range []string{"id", "name", "n", "score", "addr", "addr.street", "items", "items.element", "items.element.sku",
		"attrs", "attrs.key", "attrs.value", "attrs.value.v", "addr.zip", "items.element.qty", "attrs.value.w"} {
		if f, ok := s.FindFieldByName(name); ok {
			ids[name] = f.ID
		}
	}
	return ids
}

func TestEvolutionOnSQLiteCatalog(t *testing.T) {
	ctx := context.Background()
	cat := newSQLiteCatalog(t)

	v1Arrow, err := ArrowSchema(mustParse(t, evolutionVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	v1Ice, err := IcebergSchema(v1Arrow)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"floe", "orders"}, v1Ice)
	if err != nil {
		t.Fatal(err)
	}
	if nm := tbl.NameMapping(); nm != nil {
		t.Logf("CreateTable now sets a name mapping: %v", nm)
	}
	if got := tbl.Schema().Field(1).Doc; got != "customer name" {
		t.Errorf("doc of name = %q", got)
	}

	// Write v1 rows before evolving; the first AddDataFiles sets the name mapping.
	v1Rows := decodeVersion(t, 0, 1, 2)
	first, err := Conform(v1Rows, must(ArrowForTable(tbl.Schema())), nil)
	v1Rows.Release()
	if err != nil {
		t.Fatal(err)
	}
	tbl, err = writeAndCommit(ctx, tbl, first)
	if err != nil {
		t.Fatalf("write v1 into v1 table: %v", err)
	}
	if tbl.NameMapping() == nil {
		t.Fatal("AddDataFiles did not set a name mapping")
	}
	idsV1 := fieldIDs(tbl.Schema())

	wantChanges := [][]string{
		nil,
		{"add optional column addr.zip string (\"postal code\")", "add optional column items.element.qty int", "add optional column attrs.value.w long"},
		{"widen column n from int to long", "widen column score from float to double"},
		{"make column name optional"},
	}
	for v := 1; v < len(evolutionVersions); v++ {
		incoming, err := ArrowSchema(mustParse(t, evolutionVersions[v]))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := PlanEvolution(tbl.Schema(), incoming)
		if err != nil {
			t.Fatalf("plan v%d: %v", v+1, err)
		}
		var got []string
		for _, c := range ev.Changes {
			got = append(got, c.String())
		}
		if !equalStrings(got, wantChanges[v]) {
			t.Fatalf("v%d changes:\n got %q\nwant %q", v+1, got, wantChanges[v])
		}
		txn := tbl.NewTransaction()
		if err := ev.Stage(txn); err != nil {
			t.Fatalf("stage v%d: %v", v+1, err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			t.Fatalf("commit v%d: %v", v+1, err)
		}
		// Planning again against the evolved table finds nothing to do.
		if again, err := PlanEvolution(tbl.Schema(), incoming); err != nil || !again.Empty() {
			t.Fatalf("re-plan v%d: %v %v", v+1, again, err)
		}
	}

	final := tbl.Schema()
	idsFinal := fieldIDs(final)
	for name, id := range idsV1 {
		if idsFinal[name] != id {
			t.Errorf("field %s id changed from %d to %d", name, id, idsFinal[name])
		}
	}
	for _, name := range []string{"addr.zip", "items.element.qty", "attrs.value.w"} {
		f, ok := final.FindFieldByName(name)
		if !ok || f.Required {
			t.Errorf("added field %s: found %v required %v", name, ok, f.Required)
		}
		for old, id := range idsV1 {
			if f.ID == id {
				t.Errorf("added field %s reuses id %d of %s", name, id, old)
			}
		}
	}
	if f, _ := final.FindFieldByName("n"); !f.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Errorf("n is %s", f.Type)
	}
	if f, _ := final.FindFieldByName("name"); f.Required {
		t.Error("name is still required")
	}
	if f, _ := final.FindFieldByName("addr.zip"); f.Doc != "postal code" {
		t.Errorf("addr.zip doc = %q", f.Doc)
	}

	// The name mapping followed the evolution.
	var nm iceberg.NameMapping
	if err := json.Unmarshal([]byte(tbl.Properties()[table.DefaultNameMappingKey]), &nm); err != nil {
		t.Fatal(err)
	}
	mapped, err := iceberg.ApplyNameMapping(iceberg.NewSchema(0, iceberg.NestedField{ID: -1, Name: "addr", Type: &iceberg.StructType{
		FieldList: []iceberg.NestedField{{ID: -1, Name: "zip", Type: iceberg.PrimitiveTypes.String}}}}), nm)
	if err != nil {
		t.Fatalf("name mapping does not know addr.zip: %v", err)
	}
	if zip, _ := final.FindFieldByName("addr.zip"); mapped.Field(0).Type.(*iceberg.StructType).FieldList[0].ID != zip.ID {
		t.Errorf("name mapping maps addr.zip to %v, want id %d", mapped, zip.ID)
	}

	// Batches of all four versions into the evolved table, two ways:
	// conformed to the table's Arrow schema (the writer's fast path), and
	// as decoded (iceberg-go projects them to the table schema itself).
	target, err := ArrowForTable(final)
	if err != nil {
		t.Fatal(err)
	}
	for v := 0; v < len(evolutionVersions); v++ {
		ids := []int64{int64(3 + 2*v), int64(4 + 2*v)}
		rec := decodeVersion(t, v, ids...)
		conformed, err := Conform(rec, target, memory.NewGoAllocator())
		rec.Release()
		if err != nil {
			t.Fatalf("conform v%d: %v", v+1, err)
		}
		if !conformed.Schema().Equal(target) {
			t.Fatalf("conformed schema differs from the table's")
		}
		if tbl, err = writeAndCommit(ctx, tbl, conformed); err != nil {
			t.Fatalf("write conformed v%d batch: %v", v+1, err)
		}
		raw := decodeVersion(t, v, ids[0]+10, ids[1]+10)
		if tbl, err = writeAndCommit(ctx, tbl, raw); err != nil {
			t.Fatalf("write raw v%d batch: %v", v+1, err)
		}
	}

	// Read everything back.
	out, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	rows := tableRows(t, out)
	if len(rows) != 18 {
		t.Fatalf("scanned %d rows, want 18", len(rows))
	}
	for _, r := range rows {
		id := r["id"].(int64)
		v := 0 // ids 1, 2 (first write) and 3+2v, 4+2v (+10 for the raw batches) are version v
		if id > 2 {
			v = int((id - 3) % 10 / 2)
		}
		wantN := int64(id)
		if v >= 2 {
			wantN = 1 << 40
		}
		if r["n"] != wantN {
			t.Errorf("id %d: n = %v, want %d", id, r["n"], wantN)
		}
		if v < 1 {
			if r["addr.zip"] != nil || r["items.qty"] != nil || r["attrs.w"] != nil {
				t.Errorf("id %d (v1): new nested columns not null: zip %v qty %v w %v", id, r["addr.zip"], r["items.qty"], r["attrs.w"])
			}
		} else {
			if r["addr.zip"] != "10115" || r["items.qty"] != int32(id) || r["attrs.w"] != id*100 {
				t.Errorf("id %d (v%d): zip %v qty %v w %v", id, v+1, r["addr.zip"], r["items.qty"], r["attrs.w"])
			}
		}
		if v == 3 && id%2 == 1 {
			if r["name"] != nil {
				t.Errorf("id %d: name = %v, want null", id, r["name"])
			}
		} else if r["name"] != "cust" {
			t.Errorf("id %d: name = %v", id, r["name"])
		}
		wantScore := 1.5
		if v >= 2 {
			wantScore = 0.1
		}
		if r["score"] != wantScore {
			t.Errorf("id %d: score = %v, want %v", id, r["score"], wantScore)
		}
	}
}

// tableRows flattens the scanned table into one map per row with the
// columns the evolution test checks, sorted by id.
func tableRows(t *testing.T, tbl arrow.Table) []map[string]any {
	t.Helper()
	rdr := array.NewTableReader(tbl, 1024)
	defer rdr.Release()
	var rows []map[string]any
	for rdr.Next() {
		rec := rdr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("scan has no column %s: %s", name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		val := func(a arrow.Array, i int) any {
			if a.IsNull(i) {
				return nil
			}
			switch a := a.(type) {
			case *array.Int64:
				return a.Value(i)
			case *array.Int32:
				return a.Value(i)
			case *array.Float64:
				return a.Value(i)
			case *array.String:
				return a.Value(i)
			}
			t.Fatalf("unexpected column type %s", a.DataType())
			return nil
		}
		addr := col("addr").(*array.Struct)
		items := col("items").(*array.List)
		attrs := col("attrs").(*array.Map)
		structField := func(s *array.Struct, name string) arrow.Array {
			idx, ok := s.DataType().(*arrow.StructType).FieldIdx(name)
			if !ok {
				t.Fatalf("struct %s has no field %s", s.DataType(), name)
			}
			return s.Field(idx)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{
				"id": val(col("id"), i), "name": val(col("name"), i), "n": val(col("n"), i), "score": val(col("score"), i),
				"addr.zip": val(structField(addr, "zip"), i),
			}
			start, end := items.ValueOffsets(i)
			if end-start != 1 {
				t.Fatalf("row %d: %d items", i, end-start)
			}
			row["items.qty"] = val(structField(items.ListValues().(*array.Struct), "qty"), int(start))
			ms, me := attrs.ValueOffsets(i)
			if me-ms != 1 {
				t.Fatalf("row %d: %d attrs", i, me-ms)
			}
			row["attrs.w"] = val(structField(attrs.Items().(*array.Struct), "w"), int(ms))
			rows = append(rows, row)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["id"].(int64) < rows[j]["id"].(int64) })
	return rows
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNameMappingNeedsStage shows why Evolution.Stage passes the table's
// name mapping to UpdateSchema: without it iceberg-go leaves the mapping
// stale (AddDataFiles only sets one when there is none).
func TestNameMappingNeedsStage(t *testing.T) {
	ctx := context.Background()
	cat := newSQLiteCatalog(t)
	v1 := rec(`{"name":"a","type":"long"}`)
	v2 := arrowOf(t, rec(`{"name":"a","type":"long"}`, `{"name":"b","type":["null","long"]}`))
	mapped := func(tbl *table.Table, name string) bool {
		for _, f := range tbl.NameMapping() {
			if slices.Contains(f.Names, name) {
				return true
			}
		}
		return false
	}
	// evolve creates a table with one committed file (so it has a name
	// mapping), evolves it to v2 with stage and returns the result.
	evolve := func(name string, stage func(ev Evolution, txn *table.Transaction) error) *table.Table {
		tbl, err := cat.CreateTable(ctx, table.Identifier{"floe", name}, mustIceberg(t, v1))
		if err != nil {
			t.Fatal(err)
		}
		rows := decodeRows(t, memory.NewGoAllocator(), v1, map[string]any{"a": int64(1)})
		if tbl, err = writeAndCommit(ctx, tbl, rows); err != nil {
			t.Fatal(err)
		}
		if !mapped(tbl, "a") {
			t.Fatalf("no name mapping after the first commit: %v", tbl.NameMapping())
		}
		ev, err := PlanEvolution(tbl.Schema(), v2)
		if err != nil {
			t.Fatal(err)
		}
		txn := tbl.NewTransaction()
		if err := stage(ev, txn); err != nil {
			t.Fatal(err)
		}
		if tbl, err = txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := tbl.Schema().FindFieldByName("b"); !ok {
			t.Fatalf("%s: column b was not added", name)
		}
		return tbl
	}

	plain := evolve("plain", func(ev Evolution, txn *table.Transaction) error {
		u := txn.UpdateSchema(true, false)
		if err := ev.Apply(u); err != nil {
			return err
		}
		return u.Commit()
	})
	if mapped(plain, "b") {
		t.Log("iceberg-go now keeps the name mapping current without WithNameMapping; Stage's extra step is harmless")
	}
	staged := evolve("staged", Evolution.Stage)
	if !mapped(staged, "b") {
		t.Errorf("Stage left the name mapping without b: %v", staged.NameMapping())
	}
}

var _ = avro.Parse

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
