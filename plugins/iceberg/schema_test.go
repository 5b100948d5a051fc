package iceberg

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

func withFields(base *arrow.Schema, fields ...arrow.Field) *arrow.Schema {
	return arrow.NewSchema(append(append([]arrow.Field(nil), base.Fields()...), fields...), nil)
}

var (
	// v2 adds two optional columns.
	schemaV2 = withFields(schemaV1,
		arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	// v3 widens qty to long and adds a struct.
	schemaV3 = withFields(schemaV1,
		arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "address", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true})
)

func fillV3(col string, off int64, b array.Builder) bool {
	switch col {
	case "amount":
		b.(*array.Float64Builder).Append(float64(off) / 2)
	case "qty":
		switch qb := b.(type) {
		case *array.Int32Builder:
			qb.Append(int32(off))
		case *array.Int64Builder:
			qb.Append(off << 33) // needs a long
		}
	case "address":
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("city-" + string(rune('a'+off%26)))
	default:
		return false
	}
	return true
}

func TestSchemaEvolution(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 10))

	changes := prepare(t, tk, 2, schemaV2)
	if want := []string{"db.events: add optional column amount double", "db.events: add optional column qty int"}; strings.Join(changes, "|") != strings.Join(want, "|") {
		t.Fatalf("v2 changes = %q", changes)
	}
	step(t, tk, 2, batchRows(schemaV2, 2, "p", 10, 10, fillV3))

	changes = prepare(t, tk, 3, schemaV3)
	joined := strings.Join(changes, "|")
	if !strings.Contains(joined, "widen column qty from int to long") || !strings.Contains(joined, "add optional column address") {
		t.Fatalf("v3 changes = %q", changes)
	}
	// Old-schema batches still arrive after the evolution, in the same
	// checkpoint as new ones: they are conformed (nulls, widened ints).
	step(t, tk, 3, batchRows(schemaV3, 3, "p", 20, 10, fillV3), batchV1("q", 0, 5), batchRows(schemaV2, 2, "r", 0, 5, fillV3))
	if again := prepare(t, tk, 3, schemaV3); len(again) != 0 {
		t.Fatalf("preparing a schema twice changed %q", again)
	}

	tbl := f.load("db.events")
	qty, _ := tbl.Schema().FindFieldByName("qty")
	if !qty.Type.Equals(icebergapi.PrimitiveTypes.Int64) {
		t.Fatalf("qty is %s", qty.Type)
	}
	if len(tbl.Metadata().Schemas()) != 3 {
		t.Fatalf("%d schemas, want 3", len(tbl.Metadata().Schemas()))
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 30}, "q": {0, 5}, "r": {0, 5}})

	at, err := tbl.Scan(table.WithSelectedFields("id", "qty", "address")).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var sum, nulls int64
	tr := array.NewTableReader(at, 1000)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		q := rec.Column(1).(*array.Int64)
		for i := range q.Len() {
			if q.IsNull(i) {
				nulls++
			} else {
				sum += q.Value(i)
			}
		}
	}
	// v1 rows (p 0..9, q 0..4): null; v2 rows (p 10..19, r 0..4): int; v3 rows (p 20..29): << 33.
	want := int64(0)
	for off := int64(10); off < 20; off++ {
		want += off
	}
	for off := int64(0); off < 5; off++ {
		want += off
	}
	for off := int64(20); off < 30; off++ {
		want += off << 33
	}
	if sum != want || nulls != 15 {
		t.Fatalf("qty sum %d nulls %d, want %d and 15", sum, nulls, want)
	}

	// An incompatible change is rejected, naming the table, the field and
	// both types; the table is unchanged.
	bad := withFields(arrow.NewSchema(nil, nil),
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "name", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	_, err = tk.PrepareSchema(context.Background(), sdk.Schema{ID: 4, Arrow: bad})
	if !errors.Is(err, sdk.ErrSchemaRejected) || !strings.Contains(err.Error(), "db.events") ||
		!strings.Contains(err.Error(), "column name") || !strings.Contains(err.Error(), "string") || !strings.Contains(err.Error(), "long") {
		t.Fatalf("err = %v", err)
	}
	if len(f.load("db.events").Metadata().Schemas()) != 3 {
		t.Fatal("the rejected schema changed the table")
	}
}

func TestSchemaEvolutionDisabled(t *testing.T) {
	f := newFixture(t, map[string]string{keyEvolve: "false"})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	_, err := tk.PrepareSchema(context.Background(), sdk.Schema{ID: 2, Arrow: schemaV2})
	if !errors.Is(err, sdk.ErrSchemaRejected) || !strings.Contains(err.Error(), "add optional column amount double") ||
		!strings.Contains(err.Error(), keyEvolve) {
		t.Fatalf("err = %v", err)
	}
}

func TestAutoCreateDisabled(t *testing.T) {
	f := newFixture(t, map[string]string{keyAutoCreate: "false"})
	tk := f.open(1)
	_, err := tk.PrepareSchema(context.Background(), sdk.Schema{ID: 1, Arrow: schemaV1})
	if err == nil || !strings.Contains(err.Error(), "db.events") || !strings.Contains(err.Error(), keyAutoCreate) {
		t.Fatalf("err = %v", err)
	}
}

func TestSourceMetadataDisabled(t *testing.T) {
	f := newFixture(t, map[string]string{keySourceMetadata: "false"})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 10))
	tbl := f.load("db.events")
	if _, ok := tbl.Schema().FindFieldByName(colSourceOffset); ok {
		t.Fatal("table has source metadata columns")
	}
	if n := len(f.readRows("db.events")); n != 10 {
		t.Fatalf("%d rows", n)
	}
	// The frontier still comes from the snapshot summary.
	fr, err := f.open(1).Frontier(context.Background())
	if err != nil || fr.Positions["p"] != 10 {
		t.Fatalf("frontier %+v, %v", fr, err)
	}
}

func TestValueFieldClashesWithMetadataColumn(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	s := withFields(schemaV1, arrow.Field{Name: colSourceOffset, Type: arrow.PrimitiveTypes.Int64})
	_, err := tk.PrepareSchema(context.Background(), sdk.Schema{ID: 1, Arrow: s})
	if !errors.Is(err, sdk.ErrSchemaRejected) || !strings.Contains(err.Error(), colSourceOffset) {
		t.Fatalf("err = %v", err)
	}
}

// requiredColumns lists the required columns of an Iceberg schema,
// nested ones as a.b, list elements as a.element, map values as a.value.
func requiredColumns(fields []icebergapi.NestedField, prefix string) []string {
	var out []string
	for _, f := range fields {
		name := prefix + f.Name
		if f.Required {
			out = append(out, name)
		}
		out = append(out, requiredIn(f.Type, name)...)
	}
	return out
}

func requiredIn(t icebergapi.Type, name string) []string {
	switch t := t.(type) {
	case *icebergapi.StructType:
		return requiredColumns(t.FieldList, name+".")
	case *icebergapi.ListType:
		out := requiredIn(t.Element, name+".element")
		if t.ElementRequired {
			out = append(out, name+".element")
		}
		return out
	case *icebergapi.MapType:
		out := requiredIn(t.ValueType, name+".value")
		if t.ValueRequired {
			out = append(out, name+".value")
		}
		return out
	}
	return nil
}

// With iceberg.tables.schema-force-optional every column the sink
// creates or adds is optional, nested fields and list elements included,
// and rows of the required-field schemas still land; without it the
// record schema's required fields stay required.
func TestSchemaForceOptional(t *testing.T) {
	required := withFields(schemaV1,
		arrow.Field{Name: "address", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String}), Nullable: true},
		arrow.Field{Name: "tags", Type: arrow.ListOfNonNullable(arrow.BinaryTypes.String), Nullable: true})
	fillRequired := func(col string, off int64, b array.Builder) bool {
		switch col {
		case "address":
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append("Oslo")
		case "tags":
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append("a")
		default:
			return false
		}
		return true
	}

	plain := newFixture(t, nil)
	tk := plain.open(1)
	prepare(t, tk, 1, schemaV1)
	if got := requiredColumns(plain.load("db.events").Schema().Fields(), ""); strings.Join(got, ",") != "id" {
		t.Fatalf("without force-optional the required columns are %v, want [id]", got)
	}

	f := newFixture(t, map[string]string{keyForceOptional: "true"})
	tk = f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 10))
	if got := requiredColumns(f.load("db.events").Schema().Fields(), ""); len(got) != 0 {
		t.Fatalf("created with required columns %v, want none", got)
	}
	changes := prepare(t, tk, 2, required)
	if !strings.Contains(strings.Join(changes, "|"), "add optional column address") {
		t.Fatalf("v2 changes = %q", changes)
	}
	step(t, tk, 2, batchRows(required, 2, "p", 10, 10, fillRequired))
	if got := requiredColumns(f.load("db.events").Schema().Fields(), ""); len(got) != 0 {
		t.Fatalf("after evolution required columns %v, want none", got)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 20}})
}
