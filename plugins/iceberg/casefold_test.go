package iceberg

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/floehq/floe/sdk"
)

// upperSchema is schemaV1 plus an address struct, with every name in
// another case, and a new field Extra.
var (
	lowerSchema = withFields(schemaV1,
		arrow.Field{Name: "address", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true})
	upperSchema = arrow.NewSchema([]arrow.Field{
		{Name: "ID", Type: arrow.PrimitiveTypes.Int64},
		{Name: "Name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "TS", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "Country", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ADDRESS", Type: arrow.StructOf(arrow.Field{Name: "City", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: "Extra", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
)

// fillCase fills both schemas' columns: id from the offset, name
// NAME-<offset>, address.city city-<offset>.
func fillCase(col string, off int64, b array.Builder) bool {
	switch strings.ToLower(col) {
	case "id":
		b.(*array.Int64Builder).Append(off)
	case "name":
		b.(*array.StringBuilder).Append("NAME-" + itoa(off))
	case "address":
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("city-" + itoa(off))
	case "extra":
		b.(*array.StringBuilder).Append("x")
	default:
		return false
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// With iceberg.tables.schema-case-insensitive a schema whose names differ
// from the table's only in case evolves nothing but its truly new field,
// and its rows land in the existing columns, nested ones too; without it
// the same schema lacks the table's required id.
func TestSchemaCaseInsensitive(t *testing.T) {
	// Without the key ID is not id, so the table's required id is
	// missing from the schema.
	plain := newFixture(t, nil)
	tk := plain.open(1)
	prepare(t, tk, 1, lowerSchema)
	if _, err := tk.PrepareSchema(context.Background(), sdk.Schema{ID: 2, Arrow: upperSchema}); err == nil || !strings.Contains(err.Error(), "column id: table has required long, record has missing") {
		t.Fatalf("without the key: err = %v, want column id missing", err)
	}

	f := newFixture(t, map[string]string{keyCaseInsensitive: "true"})
	tk = f.open(2)
	prepare(t, tk, 1, lowerSchema)
	step(t, tk, 1, batchRows(lowerSchema, 1, "p", 0, 10, fillCase))
	changes := prepare(t, tk, 2, upperSchema)
	if len(changes) != 1 || !strings.Contains(changes[0], "add optional column Extra") {
		t.Fatalf("changes = %q, want only the new column Extra", changes)
	}
	step(t, tk, 2, batchRows(upperSchema, 2, "p", 10, 10, fillCase))

	var names []string
	for _, c := range f.load("db.events").Schema().Fields() {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "id,name,ts,country,address,_source_partition,_source_offset,_source_timestamp,Extra" {
		t.Fatalf("columns %s", got)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 20}})
	for _, r := range f.readRows("db.events") {
		if r.id != r.offset || r.nameNull || r.name != "NAME-"+itoa(r.offset) {
			t.Fatalf("row %+v: id and name should come from ID and Name", r)
		}
	}
	// address.city from ADDRESS.City.
	at, err := f.load("db.events").Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	cities := 0
	for tr.Next() {
		rec := tr.RecordBatch()
		addr := rec.Column(rec.Schema().FieldIndices("address")[0]).(*array.Struct)
		off := rec.Column(rec.Schema().FieldIndices(colSourceOffset)[0]).(*array.Int64)
		city := addr.Field(0).(*array.String)
		for i := range int(rec.NumRows()) {
			if addr.IsNull(i) || city.IsNull(i) || city.Value(i) != "city-"+itoa(off.Value(i)) {
				t.Fatalf("offset %d: address %v, want city-%d", off.Value(i), addr.GetOneForMarshal(i), off.Value(i))
			}
			cities++
		}
	}
	if cities != 20 {
		t.Fatalf("%d rows read, want 20", cities)
	}
}

// Two fields of one schema that match the same column ignoring case are
// refused, naming both, rather than one silently winning.
func TestSchemaCaseInsensitiveAmbiguous(t *testing.T) {
	f := newFixture(t, map[string]string{keyCaseInsensitive: "true"})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	both := withFields(schemaV1, arrow.Field{Name: "ID", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	_, err := tk.PrepareSchema(context.Background(), sdk.Schema{ID: 2, Arrow: both})
	if err == nil || !strings.Contains(err.Error(), "fields id and ID both match column id") || !strings.Contains(err.Error(), keyCaseInsensitive) {
		t.Fatalf("err = %v", err)
	}
}

// iceberg.tables.write-props.* reach the Parquet writer (the files are
// written with its codec) and leave the table's stored properties as
// they were.
func TestWritePropsReachTheWriter(t *testing.T) {
	f := newFixture(t, map[string]string{
		prefixWriteProps + propCodec:                       "snappy",
		prefixWriteProps + "write.parquet.row-group-limit": "7",
	})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 20))
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 20}})

	tbl := f.load("db.events")
	if got := tbl.Properties()[propCodec]; got != "zstd" {
		t.Errorf("table property %s = %q, want zstd as created (write-props are for the writers only)", propCodec, got)
	}
	if _, ok := tbl.Properties()["write.parquet.row-group-limit"]; ok {
		t.Errorf("write-props reached the table's properties: %v", tbl.Properties())
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatal("no data files")
	}
	for _, task := range tasks {
		path := strings.TrimPrefix(task.File.FilePath(), "file://")
		r, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		md := r.MetaData()
		if md.NumRowGroups() != 3 { // 20 rows, 7 a group
			t.Errorf("%s: %d row groups, want 3 (write.parquet.row-group-limit=7)", path, md.NumRowGroups())
		}
		for g := range md.NumRowGroups() {
			rg := md.RowGroup(g)
			for c := range rg.NumColumns() {
				cc, err := rg.ColumnChunk(c)
				if err != nil {
					t.Fatal(err)
				}
				if cc.Compression() != compress.Codecs.Snappy {
					t.Fatalf("%s: row group %d column %d compressed %s, want snappy", path, g, c, cc.Compression())
				}
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
