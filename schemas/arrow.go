package schemas

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/hamba/avro/v2"
)

// Metadata keys floe puts on Arrow fields.
const (
	// MetaDoc holds the Avro field's doc string. iceberg-go reads the same
	// key ("doc") when it converts an Arrow schema to an Iceberg schema, so
	// the doc becomes the Iceberg column doc.
	MetaDoc = "doc"
	// MetaEnum holds the symbols of an Avro enum, comma separated, on the
	// Arrow string field the enum maps to.
	MetaEnum = "avro.enum"
)

// ReservedPrefix starts the names of floe's record metadata columns
// (__offset, __timestamp, __key, __headers). No top-level value field may
// start with it.
const ReservedPrefix = "__"

// MaxDecimalPrecision is the largest decimal precision Iceberg (and Arrow
// Decimal128) can hold.
const MaxDecimalPrecision = 38

// ArrowSchema maps an Avro record schema to the Arrow schema of its value
// columns: one top-level field per Avro field, in order, following the
// mapping documented in the package doc ("Avro to Arrow to Iceberg").
//
// s must be a record schema (or a reference to one). The error names the
// offending field by its dotted path when a type cannot be mapped: recursive
// records, decimals wider than 38 digits, the bare null type, duplicate
// names, or a top-level name starting with "__".
func ArrowSchema(s avro.Schema) (*arrow.Schema, error) {
	root, err := planRecord(s)
	if err != nil {
		return nil, err
	}
	return root.schema(), nil
}

// kind is what a node decodes and how it appends to its Arrow builder.
type kind uint8

const (
	kBool kind = iota
	kInt
	kLong
	kFloat
	kDouble
	kBytes
	kString
	kFixed
	kEnum
	kRecord
	kArray
	kMap
	kDecimalBytes
	kDecimalFixed
	kUUIDString
	kUUIDFixed
	kDate
	kTimeMillis
	kTimeMicros
	kTimestampMillis
	kTimestampMicros
	kTimestampNanos
	kDuration
	kOptional // union of null and one other branch, or a one-branch union
	kUnion    // union of two or more non-null branches, mapped to a struct
)

// node is one Avro type resolved to its Arrow type, plus what the decoder
// needs to read it. ArrowSchema and NewDecoder share this plan so the Arrow
// layout and the decode logic cannot disagree.
type node struct {
	kind     kind
	path     string // dotted path used in error messages
	typ      arrow.DataType
	nullable bool
	meta     map[string]string

	size        int      // kFixed, kDecimalFixed, kUUIDFixed: byte width
	scale, prec int32    // decimals
	symbols     []string // kEnum
	names       []string // kRecord, kUnion: Arrow child field names
	children    []*node  // kRecord fields, kArray item, kMap value, kOptional value, kUnion branches
	minSize     int      // fewest bytes one value can take on the wire

	// unions
	nullIndex  int64 // Avro branch index of null, -1 when there is none
	valueIndex int64 // kOptional: Avro branch index of the value
	branchCol  []int // kUnion: Avro branch index -> child index, -1 for null
}

// field returns the Arrow field for n under the given name.
func (n *node) field(name string) arrow.Field {
	f := arrow.Field{Name: name, Type: n.typ, Nullable: n.nullable}
	if len(n.meta) > 0 {
		f.Metadata = arrow.MetadataFrom(n.meta)
	}
	return f
}

// schema returns the Arrow schema of a top-level record node.
func (n *node) schema() *arrow.Schema {
	return arrow.NewSchema(n.typ.(*arrow.StructType).Fields(), nil)
}

// planner walks an Avro schema. stack holds the full names of the records
// being visited, to detect recursion.
type planner struct {
	stack []string
}

// planRecord plans the top-level record of a value schema.
func planRecord(s avro.Schema) (*node, error) {
	if s == nil {
		return nil, fmt.Errorf("avro to arrow: schema is nil")
	}
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro to arrow: the value schema must be a record, got %s", typeName(s))
	}
	p := &planner{}
	n, err := p.record("", rec)
	if err != nil {
		return nil, err
	}
	for _, name := range n.names {
		if strings.HasPrefix(name, ReservedPrefix) {
			return nil, fmt.Errorf("avro to arrow: field %s: names starting with %q are reserved for floe's metadata columns (__offset, __timestamp, __key, __headers); rename the field", name, ReservedPrefix)
		}
	}
	return n, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// plan maps one Avro type at path.
func (p *planner) plan(path string, s avro.Schema) (*node, error) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		return p.record(path, s)
	case *avro.EnumSchema:
		return &node{kind: kEnum, path: path, typ: arrow.BinaryTypes.String, symbols: s.Symbols(),
			meta: map[string]string{MetaEnum: strings.Join(s.Symbols(), ",")}, minSize: 1}, nil
	case *avro.ArraySchema:
		item, err := p.plan(join(path, "element"), s.Items())
		if err != nil {
			return nil, err
		}
		return &node{kind: kArray, path: path, typ: arrow.ListOfField(item.field("element")),
			children: []*node{item}, minSize: 1}, nil
	case *avro.MapSchema:
		val, err := p.plan(join(path, "value"), s.Values())
		if err != nil {
			return nil, err
		}
		key := arrow.Field{Name: "key", Type: arrow.BinaryTypes.String}
		return &node{kind: kMap, path: path, typ: arrow.MapOfFields(key, val.field("value")),
			children: []*node{val}, minSize: 1}, nil
	case *avro.UnionSchema:
		return p.union(path, s)
	case *avro.FixedSchema:
		return p.fixed(path, s)
	case *avro.NullSchema:
		return nil, fmt.Errorf("avro to arrow: field %s: the null type on its own has no column type; use a union such as [\"null\", \"string\"]", path)
	case *avro.PrimitiveSchema:
		return p.primitive(path, s)
	default:
		return nil, fmt.Errorf("avro to arrow: field %s: unsupported Avro type %s", path, typeName(s))
	}
}

func (p *planner) record(path string, s *avro.RecordSchema) (*node, error) {
	full := s.FullName()
	for _, seen := range p.stack {
		if seen == full {
			where := path
			if where == "" {
				where = "(top level)"
			}
			return nil, fmt.Errorf("avro to arrow: field %s: record %s is recursive (it contains itself); recursive types cannot be mapped to Arrow or Iceberg columns", where, full)
		}
	}
	p.stack = append(p.stack, full)
	defer func() { p.stack = p.stack[:len(p.stack)-1] }()

	fields := s.Fields()
	n := &node{kind: kRecord, path: path, names: make([]string, 0, len(fields)), children: make([]*node, 0, len(fields))}
	arrowFields := make([]arrow.Field, 0, len(fields))
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		fp := join(path, f.Name())
		if seen[f.Name()] {
			return nil, fmt.Errorf("avro to arrow: field %s: duplicate field name in record %s", fp, full)
		}
		seen[f.Name()] = true
		c, err := p.plan(fp, f.Type())
		if err != nil {
			return nil, err
		}
		af := c.field(f.Name())
		if doc := f.Doc(); doc != "" {
			m := map[string]string{MetaDoc: doc}
			for k, v := range c.meta {
				m[k] = v
			}
			af.Metadata = arrow.MetadataFrom(m)
		}
		n.names = append(n.names, f.Name())
		n.children = append(n.children, c)
		n.minSize += c.minSize
		arrowFields = append(arrowFields, af)
	}
	n.typ = arrow.StructOf(arrowFields...)
	return n, nil
}

func (p *planner) union(path string, s *avro.UnionSchema) (*node, error) {
	types := s.Types()
	nullIndex := int64(-1)
	var values []int
	for i, t := range types {
		if t.Type() == avro.Null {
			nullIndex = int64(i)
			continue
		}
		values = append(values, i)
	}
	switch len(values) {
	case 0:
		return nil, fmt.Errorf("avro to arrow: field %s: a union of only null has no column type", path)
	case 1:
		// ["null", T], [T, "null"] and [T] all map to T; only the first two
		// are nullable.
		v, err := p.plan(path, types[values[0]])
		if err != nil {
			return nil, err
		}
		if nullIndex >= 0 {
			v.nullable = true
		}
		return &node{kind: kOptional, path: path, typ: v.typ, nullable: v.nullable, meta: v.meta,
			children: []*node{v}, nullIndex: nullIndex, valueIndex: int64(values[0]), minSize: 1}, nil
	}
	// Two or more non-null branches: a struct with one nullable field per
	// branch, exactly one of which is set per row.
	n := &node{kind: kUnion, path: path, nullable: nullIndex >= 0, nullIndex: nullIndex,
		branchCol: make([]int, len(types)), minSize: 1}
	used := make(map[string]bool, len(values))
	arrowFields := make([]arrow.Field, 0, len(values))
	for i := range n.branchCol {
		n.branchCol[i] = -1
	}
	for _, i := range values {
		name := uniqueName(branchName(types[i]), used)
		c, err := p.plan(join(path, name), types[i])
		if err != nil {
			return nil, err
		}
		c.nullable = true
		n.branchCol[i] = len(n.children)
		n.children = append(n.children, c)
		n.names = append(n.names, name)
		arrowFields = append(arrowFields, c.field(name))
	}
	n.typ = arrow.StructOf(arrowFields...)
	return n, nil
}

// branchName names the struct field of a union branch after the branch's
// type: the short name of a named type, the logical type (with "_" for
// "-") or the primitive type name otherwise.
func branchName(s avro.Schema) string {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if named, ok := s.(avro.NamedSchema); ok {
		return named.Name()
	}
	if lt := logicalName(s); lt != "" {
		return strings.ReplaceAll(lt, "-", "_")
	}
	return string(s.Type())
}

func uniqueName(name string, used map[string]bool) string {
	candidate := name
	for i := 2; used[candidate]; i++ {
		candidate = fmt.Sprintf("%s_%d", name, i)
	}
	used[candidate] = true
	return candidate
}

// logicalName returns the logical type of s, including the ones hamba/avro
// leaves unparsed (timestamp-nanos, uuid on fixed), or "".
func logicalName(s avro.Schema) string {
	if ls, ok := s.(avro.LogicalTypeSchema); ok {
		if l := ls.Logical(); l != nil {
			return string(l.Type())
		}
	}
	if ps, ok := s.(avro.PropertySchema); ok {
		if lt, ok := ps.Prop("logicalType").(string); ok {
			return lt
		}
	}
	return ""
}

func (p *planner) fixed(path string, s *avro.FixedSchema) (*node, error) {
	size := s.Size()
	if l, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
		return decimalNode(kDecimalFixed, path, l, size)
	}
	switch logicalName(s) {
	case string(avro.Duration):
		if size == 12 {
			i32 := arrow.PrimitiveTypes.Int32
			typ := arrow.StructOf(
				arrow.Field{Name: "months", Type: i32},
				arrow.Field{Name: "days", Type: i32},
				arrow.Field{Name: "millis", Type: i32},
			)
			return &node{kind: kDuration, path: path, typ: typ, size: 12, minSize: 12}, nil
		}
	case string(avro.UUID):
		if size == 16 {
			return &node{kind: kUUIDFixed, path: path, typ: extensions.NewUUIDType(), size: 16, minSize: 16}, nil
		}
	}
	return &node{kind: kFixed, path: path, typ: &arrow.FixedSizeBinaryType{ByteWidth: size}, size: size, minSize: size}, nil
}

func decimalNode(k kind, path string, l *avro.DecimalLogicalSchema, size int) (*node, error) {
	if l.Precision() > MaxDecimalPrecision {
		return nil, fmt.Errorf("avro to arrow: field %s: decimal(%d,%d) has precision %d; Iceberg allows at most %d digits: use a smaller precision or a string",
			path, l.Precision(), l.Scale(), l.Precision(), MaxDecimalPrecision)
	}
	n := &node{kind: k, path: path, prec: int32(l.Precision()), scale: int32(l.Scale()), size: size, minSize: 1,
		typ: &arrow.Decimal128Type{Precision: int32(l.Precision()), Scale: int32(l.Scale())}}
	if k == kDecimalFixed {
		n.minSize = size
	}
	return n, nil
}

func (p *planner) primitive(path string, s *avro.PrimitiveSchema) (*node, error) {
	if l, ok := s.Logical().(*avro.DecimalLogicalSchema); ok && s.Type() == avro.Bytes {
		return decimalNode(kDecimalBytes, path, l, 0)
	}
	lt := logicalName(s)
	utc := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	local := &arrow.TimestampType{Unit: arrow.Microsecond}
	n := &node{path: path, minSize: 1}
	switch s.Type() {
	case avro.Boolean:
		n.kind, n.typ = kBool, arrow.FixedWidthTypes.Boolean
	case avro.Int:
		switch lt {
		case string(avro.Date):
			n.kind, n.typ = kDate, arrow.FixedWidthTypes.Date32
		case string(avro.TimeMillis):
			n.kind, n.typ = kTimeMillis, arrow.FixedWidthTypes.Time64us
		default:
			n.kind, n.typ = kInt, arrow.PrimitiveTypes.Int32
		}
	case avro.Long:
		switch lt {
		case string(avro.TimeMicros):
			n.kind, n.typ = kTimeMicros, arrow.FixedWidthTypes.Time64us
		case string(avro.TimestampMillis):
			n.kind, n.typ = kTimestampMillis, utc
		case string(avro.TimestampMicros):
			n.kind, n.typ = kTimestampMicros, utc
		case "timestamp-nanos":
			n.kind, n.typ = kTimestampNanos, utc
		case string(avro.LocalTimestampMillis):
			n.kind, n.typ = kTimestampMillis, local
		case string(avro.LocalTimestampMicros):
			n.kind, n.typ = kTimestampMicros, local
		case "local-timestamp-nanos":
			n.kind, n.typ = kTimestampNanos, local
		default:
			n.kind, n.typ = kLong, arrow.PrimitiveTypes.Int64
		}
	case avro.Float:
		n.kind, n.typ, n.minSize = kFloat, arrow.PrimitiveTypes.Float32, 4
	case avro.Double:
		n.kind, n.typ, n.minSize = kDouble, arrow.PrimitiveTypes.Float64, 8
	case avro.Bytes:
		n.kind, n.typ = kBytes, arrow.BinaryTypes.Binary
	case avro.String:
		if lt == string(avro.UUID) {
			n.kind, n.typ = kUUIDString, extensions.NewUUIDType()
		} else {
			n.kind, n.typ = kString, arrow.BinaryTypes.String
		}
	default:
		return nil, fmt.Errorf("avro to arrow: field %s: unsupported Avro type %s", path, s.Type())
	}
	return n, nil
}

// typeName describes an Avro schema for error messages.
func typeName(s avro.Schema) string {
	if s == nil {
		return "<nil>"
	}
	if named, ok := s.(avro.NamedSchema); ok {
		return fmt.Sprintf("%s %s", s.Type(), named.FullName())
	}
	if lt := logicalName(s); lt != "" {
		return fmt.Sprintf("%s (%s)", s.Type(), lt)
	}
	return string(s.Type())
}
