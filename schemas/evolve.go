package schemas

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ChangeKind is the kind of one schema change in an Evolution.
type ChangeKind string

const (
	// AddColumn adds an optional column (top-level, or a field of a
	// struct, including structs inside lists and maps).
	AddColumn ChangeKind = "add-column"
	// WidenType promotes a column: int to long, float to double, or
	// decimal(p,s) to decimal(p',s) with p' > p.
	WidenType ChangeKind = "widen-type"
	// MakeOptional turns a required column optional.
	MakeOptional ChangeKind = "make-optional"
)

// Change is one schema change of an Evolution.
type Change struct {
	Kind ChangeKind
	// Path is the column's Iceberg path, outermost first; fields inside a
	// list are under "element", inside a map under "key"/"value"
	// ({"orders", "element", "sku"}).
	Path []string
	// Type is the added column's type (AddColumn), the wider type
	// (WidenType) or the column's unchanged type (MakeOptional).
	Type iceberg.Type
	// From is the column's type before a WidenType change.
	From iceberg.Type
	// Doc is the added column's doc (AddColumn).
	Doc string
}

// String describes the change for logs.
func (c Change) String() string {
	path := strings.Join(c.Path, ".")
	switch c.Kind {
	case AddColumn:
		s := fmt.Sprintf("add optional column %s %s", path, c.Type)
		if c.Doc != "" {
			s += fmt.Sprintf(" (%q)", c.Doc)
		}
		return s
	case WidenType:
		return fmt.Sprintf("widen column %s from %s to %s", path, c.From, c.Type)
	case MakeOptional:
		return fmt.Sprintf("make column %s optional", path)
	}
	return fmt.Sprintf("%s %s", c.Kind, path)
}

// Evolution is the set of changes that make a table able to hold records
// of an incoming schema. The zero value is empty (nothing to change).
type Evolution struct {
	Changes []Change
}

// Empty reports whether the table needs no change.
func (e Evolution) Empty() bool { return len(e.Changes) == 0 }

// String lists the changes for logs, separated by "; ".
func (e Evolution) String() string {
	if e.Empty() {
		return "no schema change"
	}
	parts := make([]string, len(e.Changes))
	for i, c := range e.Changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// Apply stages the changes on u with AddColumn and UpdateColumn. The
// changes are checked when u is committed (u.Commit), which is where
// iceberg-go reports problems; new columns get new field ids there and
// existing columns keep theirs. Create u case-sensitive and without
// incompatible changes: txn.UpdateSchema(true, false, ...). Prefer Stage,
// which also keeps the table's name mapping current.
func (e Evolution) Apply(u *table.UpdateSchema) error {
	if u == nil {
		return errors.New("schema evolution: UpdateSchema is nil")
	}
	for _, c := range e.Changes {
		path := append([]string(nil), c.Path...)
		switch c.Kind {
		case AddColumn:
			u.AddColumn(path, c.Type, c.Doc, false, nil)
		case WidenType:
			u.UpdateColumn(path, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: c.Type}})
		case MakeOptional:
			u.UpdateColumn(path, table.ColumnUpdate{Required: iceberg.Optional[bool]{Valid: true, Val: false}})
		default:
			return fmt.Errorf("schema evolution: column %s: unknown change kind %q", strings.Join(c.Path, "."), c.Kind)
		}
	}
	return nil
}

// Stage applies the changes to txn's table schema (Apply plus
// UpdateSchema.Commit) and keeps the table's name mapping
// ("schema.name-mapping.default") in step with the new columns: iceberg-go
// only updates an existing mapping when UpdateSchema is given it. The
// caller commits txn. An empty Evolution stages nothing.
func (e Evolution) Stage(txn *table.Transaction) error {
	if e.Empty() {
		return nil
	}
	if txn == nil {
		return errors.New("schema evolution: transaction is nil")
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return fmt.Errorf("schema evolution: %w", err)
	}
	u := txn.UpdateSchema(true, false, table.WithNameMapping(staged.NameMapping()))
	if err := e.Apply(u); err != nil {
		return err
	}
	if err := u.Commit(); err != nil {
		return fmt.Errorf("schema evolution: %s: %w", e, err)
	}
	return nil
}

// IncompatibleError is returned by PlanEvolution when records of the
// incoming schema cannot be written to the table even after any legal
// Iceberg schema change.
type IncompatibleError struct {
	Path       string // dotted column path
	TableType  string // the column's type in the table
	RecordType string // the field's type in the record schema, or "missing"
	Reason     string
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("schema evolution: column %s: table has %s, record has %s: %s", e.Path, e.TableType, e.RecordType, e.Reason)
}

// PlanEvolution compares a table's current schema with the Arrow schema of
// incoming records (ArrowSchema's output, possibly with metadata columns)
// and returns the changes the table needs before the records can be
// written. Fields are matched by name, case-sensitively.
//
// Planned automatically (all legal Iceberg changes):
//   - a field missing from the table is added as an optional column, even
//     if the record declares it required, because rows already in the
//     table have no value for it; this works at any depth, including
//     fields of structs inside lists and map values;
//   - int widens to long, float to double, decimal(p,s) to decimal(p',s)
//     with p' > p;
//   - a required table column becomes optional when the record's field is
//     nullable.
//
// Needing no change: a record field narrower than its column (int into a
// long column, decimal(9,2) into decimal(12,2), float into double), a
// required field into an optional column, new enum symbols (enums are
// strings), and optional table columns the record lacks (their rows are
// null). Such records are written after Conform widens them, so records of
// older schema versions still fit a table evolved for newer ones.
//
// Anything else is an *IncompatibleError naming the column and both types:
// a type change that is not a widening (string vs int, long vs double,
// decimal scale change, struct vs list…), and a required table column the
// record lacks.
func PlanEvolution(tableSchema *iceberg.Schema, incoming *arrow.Schema) (Evolution, error) {
	if tableSchema == nil || incoming == nil {
		return Evolution{}, errors.New("schema evolution: table schema and incoming schema must not be nil")
	}
	rec, err := IcebergSchema(incoming)
	if err != nil {
		return Evolution{}, fmt.Errorf("schema evolution: incoming schema: %w", err)
	}
	var p evolutionPlanner
	if err := p.structs(nil, tableSchema.AsStruct(), rec.AsStruct()); err != nil {
		return Evolution{}, err
	}
	return Evolution{Changes: p.changes}, nil
}

type evolutionPlanner struct {
	changes []Change
}

func childPath(path []string, name string) []string {
	out := make([]string, len(path)+1)
	copy(out, path)
	out[len(path)] = name
	return out
}

func (p *evolutionPlanner) structs(path []string, tbl, rec iceberg.StructType) error {
	for _, rf := range rec.FieldList {
		fp := childPath(path, rf.Name)
		tf, ok := fieldByName(tbl, rf.Name)
		if !ok {
			p.changes = append(p.changes, Change{Kind: AddColumn, Path: fp, Type: rf.Type, Doc: rf.Doc})
			continue
		}
		if err := p.field(fp, tf.Required, tf.Type, rf.Required, rf.Type); err != nil {
			return err
		}
	}
	for _, tf := range tbl.FieldList {
		if _, ok := fieldByName(rec, tf.Name); ok || !tf.Required {
			continue
		}
		return &IncompatibleError{
			Path: strings.Join(childPath(path, tf.Name), "."), TableType: "required " + tf.Type.String(), RecordType: "missing",
			Reason: "the column is required but the record schema has no such field, so its rows would violate the table; make the column optional in the table or add the field back",
		}
	}
	return nil
}

func fieldByName(st iceberg.StructType, name string) (iceberg.NestedField, bool) {
	for _, f := range st.FieldList {
		if f.Name == name {
			return f, true
		}
	}
	return iceberg.NestedField{}, false
}

// field compares one column that exists in both schemas.
func (p *evolutionPlanner) field(path []string, tblRequired bool, tbl iceberg.Type, recRequired bool, rec iceberg.Type) error {
	if tblRequired && !recRequired {
		p.changes = append(p.changes, Change{Kind: MakeOptional, Path: path, Type: tbl})
	}
	return p.types(path, tbl, rec)
}

func (p *evolutionPlanner) types(path []string, tbl, rec iceberg.Type) error {
	incompatible := func(reason string) error {
		return &IncompatibleError{Path: strings.Join(path, "."), TableType: tbl.String(), RecordType: rec.String(), Reason: reason}
	}
	switch tt := tbl.(type) {
	case *iceberg.StructType:
		rt, ok := rec.(*iceberg.StructType)
		if !ok {
			return incompatible("a struct column cannot change to another type")
		}
		return p.structs(path, *tt, *rt)
	case *iceberg.ListType:
		rt, ok := rec.(*iceberg.ListType)
		if !ok {
			return incompatible("a list column cannot change to another type")
		}
		return p.field(childPath(path, "element"), tt.ElementRequired, tt.Element, rt.ElementRequired, rt.Element)
	case *iceberg.MapType:
		rt, ok := rec.(*iceberg.MapType)
		if !ok {
			return incompatible("a map column cannot change to another type")
		}
		if !tt.KeyType.Equals(rt.KeyType) {
			return &IncompatibleError{Path: strings.Join(childPath(path, "key"), "."), TableType: tt.KeyType.String(),
				RecordType: rt.KeyType.String(), Reason: "map key types cannot change"}
		}
		return p.field(childPath(path, "value"), tt.ValueRequired, tt.ValueType, rt.ValueRequired, rt.ValueType)
	}
	tp, ok1 := tbl.(iceberg.PrimitiveType)
	rp, ok2 := rec.(iceberg.PrimitiveType)
	if !ok1 || !ok2 {
		return incompatible("a primitive column cannot change to a nested type")
	}
	switch {
	case tp.Equals(rp):
		return nil
	case widens(rp, tp):
		return nil // records are widened on write (Conform)
	case widens(tp, rp):
		p.changes = append(p.changes, Change{Kind: WidenType, Path: path, Type: rp, From: tp})
		return nil
	}
	if td, ok := tp.(iceberg.DecimalType); ok {
		if rd, ok := rp.(iceberg.DecimalType); ok && td.Scale() != rd.Scale() {
			return incompatible("a decimal's scale cannot change")
		}
	}
	return incompatible("only int to long, float to double and decimal precision widening are allowed")
}

// widens reports whether Iceberg allows promoting a column of type from to
// type to. It is stricter than iceberg.PromoteType, which also accepts
// read-time conversions (string/binary, fixed[16]/uuid) that are not legal
// schema changes.
func widens(from, to iceberg.PrimitiveType) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() > f.Precision()
	}
	return false
}
