package iceberg

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// With iceberg.tables.schema-case-insensitive, as in the Apache Iceberg
// sink, a record field finds its table column by a case-insensitive name:
// field ID of a record writes to column id, and schema evolution adds no
// column ID beside it. floe does this by renaming: before a schema is
// planned against a table, and before a batch is conformed to it, every
// field (nested struct fields too) that has no exact match in the table
// but one case-insensitive match takes that column's name. Types are left
// alone; schemas.PlanEvolution and schemas.Conform then work by exact
// names as always. A field with no match keeps its name (evolution adds
// it as it is).

// foldNames returns in with its field names matched to table's
// case-insensitively, and whether any name changed. Two fields of one
// struct that would take the same name are an error naming both.
func foldNames(in, table *arrow.Schema) (*arrow.Schema, bool, error) {
	fields, changed, err := foldFields(in.Fields(), table.Fields(), "")
	if err != nil || !changed {
		return in, false, err
	}
	md := in.Metadata()
	return arrow.NewSchema(fields, &md), true, nil
}

// foldFields matches fields to the table's fields of the same struct.
// path prefixes names in errors.
func foldFields(fields, table []arrow.Field, path string) ([]arrow.Field, bool, error) {
	out := make([]arrow.Field, len(fields))
	changed := false
	taken := make(map[string]string, len(fields)) // table name → the field that took it
	for i, f := range fields {
		name := f.Name
		tf, ok := exactField(table, name)
		if !ok {
			if tf, ok = foldField(table, name); ok {
				name = tf.Name
			}
		}
		if prev, dup := taken[name]; dup {
			return nil, false, fmt.Errorf("fields %s%s and %s%s both match column %s%s with %s=true: rename one",
				path, prev, path, f.Name, path, name, keyCaseInsensitive)
		}
		taken[name] = f.Name
		if ok {
			t, c, err := foldType(f.Type, tf.Type, path+name+".")
			if err != nil {
				return nil, false, err
			}
			if c {
				f.Type, changed = t, true
			}
		}
		if name != f.Name {
			f.Name, changed = name, true
		}
		out[i] = f
	}
	return out, changed, nil
}

// foldType matches the struct fields inside t (a struct, or a list or
// map of them) to those of the table's type tt.
func foldType(t, tt arrow.DataType, path string) (arrow.DataType, bool, error) {
	switch t := t.(type) {
	case *arrow.StructType:
		ts, ok := tt.(*arrow.StructType)
		if !ok {
			return t, false, nil
		}
		fs, changed, err := foldFields(t.Fields(), ts.Fields(), path)
		if err != nil || !changed {
			return t, false, err
		}
		return arrow.StructOf(fs...), true, nil
	case *arrow.ListType:
		tl, ok := tt.(*arrow.ListType)
		if !ok {
			return t, false, nil
		}
		e, changed, err := foldType(t.Elem(), tl.Elem(), path+"element.")
		if err != nil || !changed {
			return t, false, err
		}
		ef := t.ElemField()
		ef.Type = e
		return arrow.ListOfField(ef), true, nil
	case *arrow.MapType:
		tm, ok := tt.(*arrow.MapType)
		if !ok {
			return t, false, nil
		}
		v, changed, err := foldType(t.ItemType(), tm.ItemType(), path+"value.")
		if err != nil || !changed {
			return t, false, err
		}
		m := arrow.MapOfWithMetadata(t.KeyType(), t.KeyField().Metadata, v, t.ItemField().Metadata)
		m.SetItemNullable(t.ItemField().Nullable)
		m.KeysSorted = t.KeysSorted
		return m, true, nil
	}
	return t, false, nil
}

func exactField(fs []arrow.Field, name string) (arrow.Field, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	return arrow.Field{}, false
}

// foldField finds the one field whose name equals name ignoring case;
// none when no field or several do (the table has ID and id: only an
// exact name can choose).
func foldField(fs []arrow.Field, name string) (arrow.Field, bool) {
	var found arrow.Field
	n := 0
	for _, f := range fs {
		if strings.EqualFold(f.Name, name) {
			found, n = f, n+1
		}
	}
	return found, n == 1
}

// renameBatch returns rec under schema to, which differs from rec's only
// in field names (foldNames): the columns' buffers are shared, not
// copied. The caller releases the result.
func renameBatch(rec arrow.RecordBatch, to *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		d := retype(c.Data(), to.Field(i).Type)
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecordBatch(to, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// retype gives d the type to, equal to d's but for field names, down
// through its children. The caller releases the result.
func retype(d arrow.ArrayData, to arrow.DataType) arrow.ArrayData {
	var childTypes []arrow.DataType
	switch t := to.(type) {
	case *arrow.StructType:
		for _, f := range t.Fields() {
			childTypes = append(childTypes, f.Type)
		}
	case *arrow.MapType:
		childTypes = []arrow.DataType{t.Elem()}
	case *arrow.ListType:
		childTypes = []arrow.DataType{t.Elem()}
	case *arrow.LargeListType:
		childTypes = []arrow.DataType{t.Elem()}
	case *arrow.FixedSizeListType:
		childTypes = []arrow.DataType{t.Elem()}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		if i < len(childTypes) {
			children[i] = retype(c, childTypes[i])
		} else {
			c.Retain()
			children[i] = c
		}
	}
	out := array.NewData(to, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}
