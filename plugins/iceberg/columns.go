package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// floe's source metadata columns in Iceberg tables. The crash tests check
// exactly-once by (_source_partition, _source_offset).
const (
	colSourcePartition = "_source_partition"
	colSourceOffset    = "_source_offset"
	colSourceTimestamp = "_source_timestamp"
)

// sourceMetadataFields are the metadata columns as Arrow fields, in table
// order (after the value columns).
func sourceMetadataFields() []arrow.Field {
	doc := func(s string) arrow.Metadata { return arrow.NewMetadata([]string{"doc"}, []string{s}) }
	return []arrow.Field{
		{Name: colSourcePartition, Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: doc("floe: the source partition the row was read from (for Kafka: topic/partition)")},
		{Name: colSourceOffset, Type: arrow.PrimitiveTypes.Int64, Nullable: true,
			Metadata: doc("floe: the row's position in its source partition (for Kafka: the offset)")},
		{Name: colSourceTimestamp, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true,
			Metadata: doc("floe: the record's source timestamp")},
	}
}

// The record's key and headers as table columns
// (iceberg.tables.record-key-enabled, iceberg.tables.record-headers-enabled),
// under the names the batches give them. The key is kept as its bytes,
// an empty key apart from a null one. The headers are a list of
// (key, value) entries, not a map: Kafka headers are ordered and may
// repeat a key, which an Iceberg map (and DuckDB's MAP) cannot hold; a
// null header value stays null. A record without headers has null.
var (
	headerEntry = arrow.StructOf(
		arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true})
	headersType = arrow.ListOfNonNullable(headerEntry)
)

// recordFields are the key and headers columns as Arrow fields, in table
// order (after the source metadata columns).
func recordFields(cols metaColumns) []arrow.Field {
	doc := func(s string) arrow.Metadata { return arrow.NewMetadata([]string{"doc"}, []string{s}) }
	var out []arrow.Field
	if cols.key {
		out = append(out, arrow.Field{Name: sdk.ColumnKey, Type: arrow.BinaryTypes.Binary, Nullable: true,
			Metadata: doc("floe: the record key's bytes (null: no key)")})
	}
	if cols.headers {
		out = append(out, arrow.Field{Name: sdk.ColumnHeaders, Type: headersType, Nullable: true,
			Metadata: doc("floe: the record headers in order, repeats kept (null: none)")})
	}
	return out
}

// metaColumns says which of floe's columns a table gets besides the
// values.
type metaColumns struct {
	source  bool // _source_partition, _source_offset, _source_timestamp
	key     bool // __key
	headers bool // __headers
}

// tableInputSchema is the Arrow schema a table must take for a value
// schema: the value columns, then the source metadata columns and the
// record key and headers when they are enabled. Table creation and evolution work from it. Top-level
// second and millisecond timestamps become microseconds, the only unit
// Iceberg (v2) stores; the writers convert those columns.
func tableInputSchema(values *arrow.Schema, cols metaColumns) (*arrow.Schema, error) {
	fields := make([]arrow.Field, 0, values.NumFields()+3)
	for _, f := range values.Fields() {
		if sdk.IsMetadataColumn(f.Name) {
			continue
		}
		if ts, ok := f.Type.(*arrow.TimestampType); ok && coarserThanMicros(ts.Unit) {
			f.Type = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: ts.TimeZone}
		}
		fields = append(fields, f)
	}
	if cols.source {
		for _, m := range sourceMetadataFields() {
			if len(values.FieldIndices(m.Name)) > 0 {
				return nil, fmt.Errorf("%w: value field %s clashes with floe's source metadata column of the same name: rename it or set %s=false",
					sdk.ErrSchemaRejected, m.Name, keySourceMetadata)
			}
			fields = append(fields, m)
		}
	}
	fields = append(fields, recordFields(cols)...)
	return arrow.NewSchema(fields, nil), nil
}

// rowPlan turns batches of one Arrow schema into records a table's
// pipeline takes: __offset and __timestamp become _source_offset and
// _source_timestamp (in microseconds), _source_partition is added, __key
// and __headers are kept (headers as a list of entries) or dropped as
// configured, and schemas.Conform brings the result to the table's
// current schema (columns the batch lacks become nulls, narrower
// types are widened; unchanged columns are not copied).
type rowPlan struct {
	input     *arrow.Schema // the batch's schema
	ext       *arrow.Schema // value columns, then the source metadata columns
	values    []int         // input column of each value column of ext
	offset    int           // input column of __offset
	timestamp int           // input column of __timestamp, -1 if absent
	key       int           // input column of __key, -1 if absent
	headers   int           // input column of __headers, -1 if absent
	cols      metaColumns

	// fold matches names to the target's case-insensitively
	// (iceberg.tables.schema-case-insensitive): foldTo is ext renamed
	// for target foldFor, nil when no name changes.
	fold    bool
	foldFor *arrow.Schema
	foldTo  *arrow.Schema
}

func newRowPlan(input *arrow.Schema, cols metaColumns) (*rowPlan, error) {
	p := &rowPlan{input: input, offset: -1, timestamp: -1, key: -1, headers: -1, cols: cols}
	for i, f := range input.Fields() {
		switch {
		case f.Name == sdk.ColumnOffset:
			p.offset = i
		case f.Name == sdk.ColumnTimestamp:
			p.timestamp = i
		case f.Name == sdk.ColumnKey:
			p.key = i
			if cols.key && !arrow.TypeEqual(f.Type, arrow.BinaryTypes.Binary) {
				return nil, fmt.Errorf("batch column %s is %s, not binary", sdk.ColumnKey, f.Type)
			}
		case f.Name == sdk.ColumnHeaders:
			p.headers = i
			if cols.headers {
				if m, ok := f.Type.(*arrow.MapType); !ok || !arrow.TypeEqual(m.KeyType(), arrow.BinaryTypes.String) || !arrow.TypeEqual(m.ItemType(), arrow.BinaryTypes.Binary) {
					return nil, fmt.Errorf("batch column %s is %s, not map<string, binary>", sdk.ColumnHeaders, f.Type)
				}
			}
		case !sdk.IsMetadataColumn(f.Name):
			p.values = append(p.values, i)
		}
	}
	if p.offset < 0 || input.Field(p.offset).Type.ID() != arrow.INT64 {
		return nil, fmt.Errorf("batch has no int64 %s column", sdk.ColumnOffset)
	}
	ext, err := tableInputSchema(input, cols)
	if err != nil {
		return nil, err
	}
	p.ext = ext
	return p, nil
}

// build returns the rows [from, len) of in as a record of schema target.
// partition fills _source_partition. The caller releases the result.
func (p *rowPlan) build(ctx context.Context, mem memory.Allocator, in arrow.RecordBatch, from int64, partition string, target *arrow.Schema) (arrow.RecordBatch, error) {
	n := in.NumRows() - from
	cols := make([]arrow.Array, 0, p.ext.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	column := func(i int) arrow.Array {
		c := in.Column(i)
		if from == 0 {
			c.Retain()
			return c
		}
		return array.NewSlice(c, from, in.NumRows())
	}
	for _, i := range p.values {
		c := column(i)
		if to := p.ext.Field(len(cols)).Type; !arrow.TypeEqual(c.DataType(), to) {
			us, err := toMicros(ctx, mem, c, to)
			c.Release()
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", p.input.Field(i).Name, err)
			}
			c = us
		}
		cols = append(cols, c)
	}
	if p.cols.source {
		cols = append(cols, constantString(mem, partition, int(n)), column(p.offset))
		if p.timestamp < 0 {
			cols = append(cols, array.MakeArrayOfNull(mem, p.ext.Field(len(cols)).Type, int(n)))
		} else {
			ts := column(p.timestamp)
			us, err := toMicros(ctx, mem, ts, p.ext.Field(len(cols)).Type)
			ts.Release()
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", sdk.ColumnTimestamp, err)
			}
			cols = append(cols, us)
		}
	}
	if p.cols.key {
		if p.key < 0 {
			cols = append(cols, array.MakeArrayOfNull(mem, arrow.BinaryTypes.Binary, int(n)))
		} else {
			cols = append(cols, column(p.key))
		}
	}
	if p.cols.headers {
		if p.headers < 0 {
			cols = append(cols, array.MakeArrayOfNull(mem, headersType, int(n)))
		} else {
			// A map's layout is a list of (key, value) structs: the
			// entries are retyped, not copied.
			h := column(p.headers)
			d := retype(h.Data(), headersType)
			h.Release()
			cols = append(cols, array.MakeFromData(d))
			d.Release()
		}
	}
	ext := array.NewRecordBatch(p.ext, cols, n)
	defer ext.Release()
	if p.fold {
		if p.foldFor != target {
			to, changed, err := foldNames(p.ext, target)
			if err != nil {
				return nil, err
			}
			p.foldFor, p.foldTo = target, nil
			if changed {
				p.foldTo = to
			}
		}
		if p.foldTo != nil {
			renamed := renameBatch(ext, p.foldTo)
			defer renamed.Release()
			return schemas.Conform(renamed, target, mem)
		}
	}
	return schemas.Conform(ext, target, mem)
}

func coarserThanMicros(u arrow.TimeUnit) bool { return u == arrow.Second || u == arrow.Millisecond }

// toMicros converts a second or millisecond timestamp column to
// microseconds (type to).
func toMicros(ctx context.Context, mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), to) {
		a.Retain()
		return a, nil
	}
	if ts, ok := a.(*array.Timestamp); ok && coarserThanMicros(ts.DataType().(*arrow.TimestampType).Unit) {
		factor := arrow.Timestamp(1000)
		if ts.DataType().(*arrow.TimestampType).Unit == arrow.Second {
			factor = 1_000_000
		}
		b := array.NewTimestampBuilder(mem, to.(*arrow.TimestampType))
		defer b.Release()
		b.Reserve(ts.Len())
		for i, v := range ts.Values() {
			if ts.IsNull(i) {
				b.UnsafeAppendBoolToBitmap(false)
			} else {
				b.UnsafeAppend(v * factor)
			}
		}
		return b.NewArray(), nil
	}
	return compute.CastArray(compute.WithAllocator(ctx, mem), a, compute.SafeCastOptions(to))
}

// constantString builds n copies of s.
func constantString(mem memory.Allocator, s string, n int) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(n * len(s))
	for range n {
		b.Append(s)
	}
	return b.NewArray()
}

// optionalSchema makes every field of s nullable, nested ones included
// (iceberg.tables.schema-force-optional, as the Apache Iceberg sink's):
// the table then takes a later schema that drops a field or makes it
// nullable without evolving required columns. Map keys stay required:
// Iceberg has no optional map keys.
func optionalSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = optionalField(f)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

func optionalField(f arrow.Field) arrow.Field {
	f.Nullable = true
	switch t := f.Type.(type) {
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, c := range t.Fields() {
			fs[i] = optionalField(c)
		}
		f.Type = arrow.StructOf(fs...)
	case *arrow.ListType:
		f.Type = arrow.ListOfField(optionalField(t.ElemField()))
	case *arrow.LargeListType:
		f.Type = arrow.LargeListOfField(optionalField(t.ElemField()))
	case *arrow.MapType:
		m := arrow.MapOfWithMetadata(t.KeyType(), t.KeyField().Metadata, t.ItemType(), t.ItemField().Metadata)
		m.SetItemNullable(true)
		f.Type = m
	}
	return f
}
