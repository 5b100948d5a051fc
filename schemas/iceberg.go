package schemas

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// IcebergSchema converts an Arrow schema (as made by ArrowSchema, possibly
// followed by floe's metadata columns) to an Iceberg schema with fresh field
// ids, assigned depth-first from 1 (a field, then its nested fields; the
// catalog may renumber them on CreateTable, so use the table's schema
// afterwards). A nullable
// Arrow field becomes an optional Iceberg field, a non-nullable one a
// required field; the "doc" field metadata becomes the field doc; the Arrow
// UUID extension type becomes uuid.
//
// One exception to "non-nullable means required": map values are always
// optional in the Iceberg schema. iceberg-go v0.7.0 rebuilds every map it
// projects (on scan, and on write unless the batch matches the table's
// Arrow schema exactly) with nullable values, so a table with required map
// values cannot be scanned into an arrow.Table or compacted. Batches with
// non-nullable map values are still accepted: Conform marks them nullable.
//
// It wraps iceberg-go's table.ArrowSchemaToIcebergWithFreshIDs, which keeps
// docs and uuid (checked by this package's tests). Arrow nanosecond
// timestamps would map to Iceberg v3's timestamp_ns types; ArrowSchema never
// produces them.
func IcebergSchema(s *arrow.Schema) (*iceberg.Schema, error) {
	if s == nil {
		return nil, fmt.Errorf("arrow to iceberg: schema is nil")
	}
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(s, false)
	if err != nil {
		return nil, fmt.Errorf("arrow to iceberg: %w", err)
	}
	return optionalMapValues(sc), nil
}

// optionalMapValues returns sc with every map value made optional (see
// IcebergSchema for why). Field ids are kept.
func optionalMapValues(sc *iceberg.Schema) *iceberg.Schema {
	fields := make([]iceberg.NestedField, sc.NumFields())
	for i, f := range sc.Fields() {
		f.Type = optionalMapValuesType(f.Type)
		fields[i] = f
	}
	return iceberg.NewSchemaWithIdentifiers(sc.ID, sc.IdentifierFieldIDs, fields...)
}

func optionalMapValuesType(t iceberg.Type) iceberg.Type {
	switch t := t.(type) {
	case *iceberg.StructType:
		fields := make([]iceberg.NestedField, len(t.FieldList))
		for i, f := range t.FieldList {
			f.Type = optionalMapValuesType(f.Type)
			fields[i] = f
		}
		return &iceberg.StructType{FieldList: fields}
	case *iceberg.ListType:
		out := *t
		out.Element = optionalMapValuesType(t.Element)
		return &out
	case *iceberg.MapType:
		out := *t
		out.KeyType = optionalMapValuesType(t.KeyType)
		out.ValueType = optionalMapValuesType(t.ValueType)
		out.ValueRequired = false
		return &out
	}
	return t
}

// ArrowForTable returns the Arrow schema of batches that match the Iceberg
// schema s exactly: same field order, types (uuid as the Arrow UUID
// extension type, string and binary as the small, 32-bit-offset types),
// nullability and docs. Each field carries its Iceberg field id in the
// "PARQUET:field_id" metadata, so table.WriteRecords matches columns by id
// rather than by name. Conform converts decoded batches to this schema.
func ArrowForTable(s *iceberg.Schema) (*arrow.Schema, error) {
	if s == nil {
		return nil, fmt.Errorf("iceberg to arrow: schema is nil")
	}
	sc, err := table.SchemaToArrowSchema(s, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("iceberg to arrow: %w", err)
	}
	return sc, nil
}

// NameMappingJSON returns the Iceberg name mapping of s as the JSON value
// of the table property "schema.name-mapping.default" (table.DefaultNameMappingKey).
// Readers use it to match columns of data files that carry no field ids;
// iceberg-go writes field ids into every file it writes, so the mapping
// matters for files added from elsewhere and for other engines.
//
// Compute it from the schema the catalog actually stored (tbl.Schema()
// after CreateTable), not from the schema passed in: the catalog may assign
// its own ids.
func NameMappingJSON(s *iceberg.Schema) (string, error) {
	if s == nil {
		return "", fmt.Errorf("name mapping: schema is nil")
	}
	b, err := json.Marshal(s.NameMapping())
	if err != nil {
		return "", fmt.Errorf("name mapping: %w", err)
	}
	return string(b), nil
}
