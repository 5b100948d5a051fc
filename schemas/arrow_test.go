package schemas

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/hamba/avro/v2"
)

// recordOf wraps one field of the given Avro type (JSON) in a record.
func recordOf(t *testing.T, fieldType string) avro.Schema {
	t.Helper()
	return mustParse(t, `{"type":"record","name":"R","namespace":"ns","fields":[{"name":"f","type":`+fieldType+`}]}`)
}

func mustParse(t testing.TB, text string) avro.Schema {
	t.Helper()
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return s
}

func TestArrowSchemaTypes(t *testing.T) {
	utc := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	local := &arrow.TimestampType{Unit: arrow.Microsecond}
	i32 := arrow.PrimitiveTypes.Int32
	tests := []struct {
		name     string
		avro     string
		want     arrow.DataType
		nullable bool
		meta     map[string]string
	}{
		{"boolean", `"boolean"`, arrow.FixedWidthTypes.Boolean, false, nil},
		{"int", `"int"`, arrow.PrimitiveTypes.Int32, false, nil},
		{"long", `"long"`, arrow.PrimitiveTypes.Int64, false, nil},
		{"float", `"float"`, arrow.PrimitiveTypes.Float32, false, nil},
		{"double", `"double"`, arrow.PrimitiveTypes.Float64, false, nil},
		{"bytes", `"bytes"`, arrow.BinaryTypes.Binary, false, nil},
		{"string", `"string"`, arrow.BinaryTypes.String, false, nil},
		{"null first", `["null","string"]`, arrow.BinaryTypes.String, true, nil},
		{"null last", `["long","null"]`, arrow.PrimitiveTypes.Int64, true, nil},
		{"single branch union", `["long"]`, arrow.PrimitiveTypes.Int64, false, nil},
		{"enum", `{"type":"enum","name":"Color","symbols":["RED","GREEN"]}`, arrow.BinaryTypes.String, false, map[string]string{MetaEnum: "RED,GREEN"}},
		{"nullable enum", `["null",{"type":"enum","name":"Color","symbols":["A"]}]`, arrow.BinaryTypes.String, true, map[string]string{MetaEnum: "A"}},
		{"fixed", `{"type":"fixed","name":"F","size":3}`, &arrow.FixedSizeBinaryType{ByteWidth: 3}, false, nil},
		{"decimal bytes", `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`, &arrow.Decimal128Type{Precision: 10, Scale: 2}, false, nil},
		{"decimal fixed", `{"type":"fixed","name":"D","size":16,"logicalType":"decimal","precision":38,"scale":9}`, &arrow.Decimal128Type{Precision: 38, Scale: 9}, false, nil},
		{"uuid string", `{"type":"string","logicalType":"uuid"}`, extensions.NewUUIDType(), false, nil},
		{"uuid fixed", `{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}`, extensions.NewUUIDType(), false, nil},
		{"date", `{"type":"int","logicalType":"date"}`, arrow.FixedWidthTypes.Date32, false, nil},
		{"time-millis", `{"type":"int","logicalType":"time-millis"}`, arrow.FixedWidthTypes.Time64us, false, nil},
		{"time-micros", `{"type":"long","logicalType":"time-micros"}`, arrow.FixedWidthTypes.Time64us, false, nil},
		{"timestamp-millis", `{"type":"long","logicalType":"timestamp-millis"}`, utc, false, nil},
		{"timestamp-micros", `{"type":"long","logicalType":"timestamp-micros"}`, utc, false, nil},
		{"timestamp-nanos", `{"type":"long","logicalType":"timestamp-nanos"}`, utc, false, nil},
		{"local-timestamp-millis", `{"type":"long","logicalType":"local-timestamp-millis"}`, local, false, nil},
		{"local-timestamp-micros", `{"type":"long","logicalType":"local-timestamp-micros"}`, local, false, nil},
		{"unknown logical type falls back", `{"type":"string","logicalType":"json"}`, arrow.BinaryTypes.String, false, nil},
		{"duration", `{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}`,
			arrow.StructOf(arrow.Field{Name: "months", Type: i32}, arrow.Field{Name: "days", Type: i32}, arrow.Field{Name: "millis", Type: i32}), false, nil},
		{"array", `{"type":"array","items":"long"}`, arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64}), false, nil},
		{"array of nullable", `{"type":"array","items":["null","string"]}`, arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true}), false, nil},
		{"map", `{"type":"map","values":"double"}`, arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Float64}), false, nil},
		{"record", `{"type":"record","name":"Addr","fields":[{"name":"zip","type":"string"},{"name":"n","type":["null","int"]}]}`,
			arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "n", Type: i32, Nullable: true}), false, nil},
		{"union of two", `["int","string"]`,
			arrow.StructOf(arrow.Field{Name: "int", Type: i32, Nullable: true}, arrow.Field{Name: "string", Type: arrow.BinaryTypes.String, Nullable: true}), false, nil},
		{"nullable union of two", `["null","int","string"]`,
			arrow.StructOf(arrow.Field{Name: "int", Type: i32, Nullable: true}, arrow.Field{Name: "string", Type: arrow.BinaryTypes.String, Nullable: true}), true, nil},
		{"union branch names", `["long",{"type":"long","logicalType":"timestamp-micros"},{"type":"record","name":"a.b.Rec","fields":[]},{"type":"array","items":"int"}]`,
			arrow.StructOf(
				arrow.Field{Name: "long", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				arrow.Field{Name: "timestamp_micros", Type: utc, Nullable: true},
				arrow.Field{Name: "Rec", Type: arrow.StructOf(), Nullable: true},
				arrow.Field{Name: "array", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: i32}), Nullable: true},
			), false, nil},
		{"union branch names made unique", `[{"type":"record","name":"a.X","fields":[]},{"type":"record","name":"b.X","fields":[]}]`,
			arrow.StructOf(arrow.Field{Name: "X", Type: arrow.StructOf(), Nullable: true}, arrow.Field{Name: "X_2", Type: arrow.StructOf(), Nullable: true}), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ArrowSchema(recordOf(t, tt.avro))
			if err != nil {
				t.Fatal(err)
			}
			if sc.NumFields() != 1 {
				t.Fatalf("got %d fields, want 1", sc.NumFields())
			}
			f := sc.Field(0)
			if !arrow.TypeEqual(f.Type, tt.want) {
				t.Errorf("type = %s, want %s", f.Type, tt.want)
			}
			if f.Nullable != tt.nullable {
				t.Errorf("nullable = %v, want %v", f.Nullable, tt.nullable)
			}
			for k, v := range tt.meta {
				if got, _ := f.Metadata.GetValue(k); got != v {
					t.Errorf("metadata %s = %q, want %q", k, got, v)
				}
			}
			if tt.meta == nil && f.Metadata.Len() != 0 {
				t.Errorf("unexpected metadata %v", f.Metadata)
			}
		})
	}
}

func TestArrowSchemaFieldsDocsAndRefs(t *testing.T) {
	s := mustParse(t, `{"type":"record","name":"Order","fields":[
		{"name":"id","type":"long","doc":"order id"},
		{"name":"billing","type":{"type":"record","name":"Addr","fields":[{"name":"zip","type":"string","doc":"postal code"}]}},
		{"name":"shipping","type":["null","Addr"],"doc":"where to ship"},
		{"name":"status","type":{"type":"enum","name":"S","symbols":["NEW","DONE"]},"doc":"state"}]}`)
	sc, err := ArrowSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	if got := strings.Join(names, ","); got != "id,billing,shipping,status" {
		t.Fatalf("fields = %s", got)
	}
	doc := func(f arrow.Field) string { v, _ := f.Metadata.GetValue(MetaDoc); return v }
	if got := doc(sc.Field(0)); got != "order id" {
		t.Errorf("id doc = %q", got)
	}
	if got := doc(sc.Field(2)); got != "where to ship" {
		t.Errorf("shipping doc = %q", got)
	}
	if got := doc(sc.Field(1).Type.(*arrow.StructType).Field(0)); got != "postal code" {
		t.Errorf("billing.zip doc = %q", got)
	}
	st := sc.Field(3)
	if got := doc(st); got != "state" {
		t.Errorf("status doc = %q", got)
	}
	if got, _ := st.Metadata.GetValue(MetaEnum); got != "NEW,DONE" {
		t.Errorf("status enum = %q", got)
	}
	if !sc.Field(2).Nullable || sc.Field(1).Nullable {
		t.Errorf("nullability: billing %v shipping %v", sc.Field(1).Nullable, sc.Field(2).Nullable)
	}
	if !arrow.TypeEqual(sc.Field(1).Type, sc.Field(2).Type) {
		t.Errorf("reused named type maps differently: %s vs %s", sc.Field(1).Type, sc.Field(2).Type)
	}
}

func TestArrowSchemaErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []string // substrings of the error
	}{
		{"not a record", `"string"`, []string{"must be a record", "string"}},
		{"recursive", `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`,
			[]string{"field next", "Node", "recursive"}},
		{"recursive nested", `{"type":"record","name":"T","fields":[{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"kids","type":{"type":"array","items":"C"}}]}}]}`,
			[]string{"field customer.kids.element", "recursive"}},
		{"decimal too wide", `{"type":"record","name":"T","fields":[{"name":"customer","type":{"type":"record","name":"C","fields":[{"name":"balance","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}}]}}]}`,
			[]string{"field customer.balance", "decimal(40,2)", "38"}},
		{"bare null", `{"type":"record","name":"T","fields":[{"name":"nothing","type":"null"}]}`, []string{"field nothing", "null"}},
		{"only null union", `{"type":"record","name":"T","fields":[{"name":"nothing","type":["null"]}]}`, []string{"field nothing", "only null"}},
		{"reserved name", `{"type":"record","name":"T","fields":[{"name":"__offset","type":"long"}]}`, []string{"field __offset", "reserved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ArrowSchema(mustParse(t, tt.schema))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestArrowSchemaNestedReservedNameAllowed(t *testing.T) {
	// Only top-level names clash with floe's metadata columns.
	_, err := ArrowSchema(recordOf(t, `{"type":"record","name":"In","fields":[{"name":"__x","type":"int"}]}`))
	if err != nil {
		t.Fatal(err)
	}
}

func TestArrowSchemaDuplicateFieldFromAPI(t *testing.T) {
	// The parser rejects duplicates; schemas built in code are checked here.
	f1, _ := avro.NewField("a", avro.NewPrimitiveSchema(avro.Int, nil))
	f2, _ := avro.NewField("a", avro.NewPrimitiveSchema(avro.Long, nil))
	rec, err := avro.NewRecordSchema("R", "", []*avro.Field{f1, f2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ArrowSchema(rec)
	if err == nil || !strings.Contains(err.Error(), "field a") || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("err = %v", err)
	}
}
