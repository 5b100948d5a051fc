package schemas

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestIcebergSchemaTypes(t *testing.T) {
	tests := []struct {
		avro     string
		want     string // iceberg type string
		required bool
	}{
		{`"boolean"`, "boolean", true},
		{`"int"`, "int", true},
		{`"long"`, "long", true},
		{`"float"`, "float", true},
		{`"double"`, "double", true},
		{`"bytes"`, "binary", true},
		{`"string"`, "string", true},
		{`["null","string"]`, "string", false},
		{`{"type":"enum","name":"E","symbols":["A"]}`, "string", true},
		{`{"type":"fixed","name":"F","size":7}`, "fixed[7]", true},
		{`{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}`, "decimal(12, 3)", true},
		{`{"type":"string","logicalType":"uuid"}`, "uuid", true},
		{`{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}`, "uuid", true},
		{`{"type":"int","logicalType":"date"}`, "date", true},
		{`{"type":"int","logicalType":"time-millis"}`, "time", true},
		{`{"type":"long","logicalType":"time-micros"}`, "time", true},
		{`{"type":"long","logicalType":"timestamp-millis"}`, "timestamptz", true},
		{`{"type":"long","logicalType":"timestamp-micros"}`, "timestamptz", true},
		{`{"type":"long","logicalType":"timestamp-nanos"}`, "timestamptz", true},
		{`{"type":"long","logicalType":"local-timestamp-millis"}`, "timestamp", true},
		{`{"type":"long","logicalType":"local-timestamp-micros"}`, "timestamp", true},
		{`{"type":"fixed","name":"D","size":12,"logicalType":"duration"}`, "struct<2: months: required int, 3: days: required int, 4: millis: required int>", true},
		{`{"type":"array","items":"long"}`, "list<long>", true},
		{`{"type":"map","values":"string"}`, "map<string, string>", true},
		{`["int","string"]`, "struct<2: int: optional int, 3: string: optional string>", true},
	}
	for _, tt := range tests {
		t.Run(tt.avro, func(t *testing.T) {
			as, err := ArrowSchema(recordOf(t, tt.avro))
			if err != nil {
				t.Fatal(err)
			}
			is, err := IcebergSchema(as)
			if err != nil {
				t.Fatal(err)
			}
			f := is.Field(0)
			if f.Type.String() != tt.want || f.Required != tt.required || f.ID != 1 {
				t.Errorf("got id %d %s required %v, want id 1 %s required %v", f.ID, f.Type, f.Required, tt.want, tt.required)
			}
		})
	}
}

func TestIcebergSchemaIDsDocsAndOptionalMapValues(t *testing.T) {
	as, err := ArrowSchema(mustParse(t, `{"type":"record","name":"R","fields":[
		{"name":"a","type":"long","doc":"the a"},
		{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int","doc":"the x"}]}},
		{"name":"m","type":{"type":"map","values":{"type":"array","items":{"type":"map","values":"int"}}}},
		{"name":"b","type":["null","string"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	is, err := IcebergSchema(as)
	if err != nil {
		t.Fatal(err)
	}
	// iceberg-go assigns ids depth-first: a field, then its nested fields.
	want := map[string]int{"a": 1, "s": 2, "s.x": 3, "m": 4, "m.key": 5, "m.value": 6, "b": 10}
	for name, id := range want {
		f, ok := is.FindFieldByName(name)
		if !ok || f.ID != id {
			t.Errorf("%s: id %d, want %d", name, f.ID, id)
		}
	}
	if f, _ := is.FindFieldByName("a"); f.Doc != "the a" || !f.Required {
		t.Errorf("a = %+v", f)
	}
	if f, _ := is.FindFieldByName("s.x"); f.Doc != "the x" {
		t.Errorf("s.x doc = %q", f.Doc)
	}
	if f, _ := is.FindFieldByName("b"); f.Required {
		t.Error("b must be optional")
	}
	m, _ := is.FindFieldByName("m")
	outer := m.Type.(*iceberg.MapType)
	inner := outer.ValueType.(*iceberg.ListType).Element.(*iceberg.MapType)
	if outer.ValueRequired || inner.ValueRequired {
		t.Errorf("map values must be optional: %s", m.Type)
	}
	if !outer.ValueType.(*iceberg.ListType).ElementRequired {
		t.Errorf("list elements stay required: %s", m.Type)
	}
	// Ids are 1..n without gaps or repeats.
	byID, err := iceberg.IndexByID(is)
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != is.HighestFieldID() {
		t.Errorf("%d fields but highest id %d", len(byID), is.HighestFieldID())
	}
}

func TestArrowForTable(t *testing.T) {
	as, err := ArrowSchema(mustParse(t, allTypesSchema))
	if err != nil {
		t.Fatal(err)
	}
	is, err := IcebergSchema(as)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ArrowForTable(is)
	if err != nil {
		t.Fatal(err)
	}
	if back.NumFields() != as.NumFields() {
		t.Fatalf("fields %d vs %d", back.NumFields(), as.NumFields())
	}
	for i, f := range back.Fields() {
		orig := as.Field(i)
		id, ok := f.Metadata.GetValue(table.ArrowParquetFieldIDKey)
		if !ok || id != fmt.Sprint(is.Field(i).ID) {
			t.Errorf("%s: field id metadata %q, want %d", f.Name, id, is.Field(i).ID)
		}
		if f.Name != orig.Name || f.Nullable != orig.Nullable {
			t.Errorf("%s: name/nullable differ: %v vs %v", f.Name, f, orig)
		}
		if f.Name == "m" {
			continue // map values become nullable, checked below
		}
		if !arrow.TypeEqual(f.Type, orig.Type) {
			t.Errorf("%s: type %s, decoder type %s", f.Name, f.Type, orig.Type)
		}
	}
	m := back.Field(back.FieldIndices("m")[0]).Type.(*arrow.MapType)
	if !m.ItemField().Nullable {
		t.Errorf("map value must be nullable in the table: %s", m)
	}
	if _, err := ArrowForTable(nil); err == nil {
		t.Error("nil schema accepted")
	}
}

func TestNameMappingJSON(t *testing.T) {
	as, err := ArrowSchema(mustParse(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	is, err := IcebergSchema(as)
	if err != nil {
		t.Fatal(err)
	}
	js, err := NameMappingJSON(is)
	if err != nil {
		t.Fatal(err)
	}
	var nm iceberg.NameMapping
	if err := json.Unmarshal([]byte(js), &nm); err != nil {
		t.Fatal(err)
	}
	if nm.String() != is.NameMapping().String() {
		t.Errorf("round trip differs: %v vs %v", nm, is.NameMapping())
	}
	if !strings.Contains(js, `"names":["x"],"field-id":3`) {
		t.Errorf("mapping %s lacks s.x -> 3", js)
	}
}

// TestIcebergGoRequiredMapValues is a canary for the iceberg-go bug behind
// optionalMapValues: a table whose map values are required cannot be
// scanned into an arrow.Table. When this test fails, iceberg-go has fixed
// the bug and IcebergSchema can keep map values required again.
func TestIcebergGoRequiredMapValues(t *testing.T) {
	ctx := context.Background()
	cat := newSQLiteCatalog(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "m", Required: true, Type: &iceberg.MapType{
			KeyID: 2, KeyType: iceberg.PrimitiveTypes.String, ValueID: 3, ValueType: iceberg.PrimitiveTypes.String, ValueRequired: true}})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"floe", "maps"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	target, err := ArrowForTable(tbl.Schema())
	if err != nil {
		t.Fatal(err)
	}
	bldr := array.NewRecordBuilder(memory.NewGoAllocator(), target)
	mb := bldr.Field(0).(*array.MapBuilder)
	mb.Append(true)
	mb.KeyBuilder().(*array.StringBuilder).Append("k")
	mb.ItemBuilder().(*array.StringBuilder).Append("v")
	rec := bldr.NewRecordBatch()
	bldr.Release()
	if tbl, err = writeAndCommit(ctx, tbl, rec); err != nil {
		t.Fatalf("write (exact-schema fast path) failed: %v", err)
	}
	scanErr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		out, err := tbl.Scan().ToArrowTable(ctx)
		if err == nil {
			out.Release()
		}
		return err
	}()
	if scanErr == nil {
		t.Fatal("iceberg-go now scans required map values: drop optionalMapValues from IcebergSchema and PlanEvolution")
	}
	t.Logf("iceberg-go still fails on required map values: %v", firstLine(scanErr.Error()))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
