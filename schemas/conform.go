package schemas

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Conform converts rec to the target schema, typically ArrowForTable of
// the (evolved) table schema, so batches of every schema version can go
// through one writer:
//   - columns and struct fields are matched by name and put in target order;
//   - columns and struct fields the target has but rec lacks are filled
//     with nulls, at any depth (structs, list elements, map values);
//   - int32 is widened to int64, float32 to float64, decimal(p,s) to
//     decimal(p',s) with p' >= p;
//   - a non-nullable field may become nullable.
//
// It fails, naming the column, when rec has a field the target lacks
// (evolve the table first), when types differ otherwise, or when a
// non-nullable top-level target column is missing or has nulls.
//
// Unchanged columns are shared with rec, not copied. The caller still
// owns rec and must release the result. mem may be nil for the default
// allocator.
func Conform(rec arrow.RecordBatch, target *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	if rec == nil || target == nil {
		return nil, fmt.Errorf("conform: record and target schema must not be nil")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	src := rec.Schema()
	cols := make([]arrow.Array, target.NumFields())
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	for _, f := range src.Fields() {
		if len(target.FieldIndices(f.Name)) == 0 {
			release()
			return nil, fmt.Errorf("conform: column %s is not in the target schema: evolve the table before writing this batch", f.Name)
		}
	}
	n := int(rec.NumRows())
	for i, tf := range target.Fields() {
		idx := src.FieldIndices(tf.Name)
		var (
			col arrow.Array
			err error
		)
		if len(idx) == 0 {
			if !tf.Nullable {
				err = fmt.Errorf("conform: column %s is required by the target schema but missing from the batch", tf.Name)
			} else {
				col = array.MakeArrayOfNull(mem, tf.Type, n)
			}
		} else {
			col, err = conformArray(tf.Name, rec.Column(idx[0]), tf.Type, mem)
			if err == nil && !tf.Nullable && col.NullN() > 0 {
				err = fmt.Errorf("conform: column %s is required by the target schema but has %d nulls", tf.Name, col.NullN())
			}
		}
		if err != nil {
			if col != nil {
				col.Release()
			}
			release()
			return nil, err
		}
		cols[i] = col
	}
	out := array.NewRecordBatch(target, cols, int64(n))
	release()
	return out, nil
}

// conformArray returns arr as type dst (a new reference the caller
// releases).
func conformArray(path string, arr arrow.Array, dst arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	src := arr.DataType()
	if arrow.TypeEqual(src, dst, arrow.CheckMetadata()) {
		arr.Retain()
		return arr, nil
	}
	if arrow.TypeEqual(src, dst) {
		// Same layout; only nested metadata (such as field ids) differs.
		return retype(arr.Data(), dst, arr.Data().Children()), nil
	}
	mismatch := func() error {
		return fmt.Errorf("conform: column %s: batch has %s, target has %s", path, src, dst)
	}
	data := arr.Data()
	switch dt := dst.(type) {
	case *arrow.StructType:
		st, ok := src.(*arrow.StructType)
		if !ok {
			return nil, mismatch()
		}
		children, err := conformChildren(path, data, st, dt, mem)
		if err != nil {
			return nil, err
		}
		defer releaseData(children)
		return retype(data, dst, children), nil
	case *arrow.MapType:
		sm, ok := src.(*arrow.MapType)
		if !ok {
			return nil, mismatch()
		}
		entries, err := conformChild(path, data.Children()[0], sm.Elem(), dt.Elem(), mem)
		if err != nil {
			return nil, err
		}
		defer entries.Release()
		return retype(data, dst, []arrow.ArrayData{entries}), nil
	case *arrow.ListType:
		sl, ok := src.(*arrow.ListType)
		if !ok {
			return nil, mismatch()
		}
		values, err := conformChild(path+".element", data.Children()[0], sl.Elem(), dt.Elem(), mem)
		if err != nil {
			return nil, err
		}
		defer values.Release()
		return retype(data, dst, []arrow.ArrayData{values}), nil
	case *arrow.Int64Type:
		if a, ok := arr.(*array.Int32); ok {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.Reserve(a.Len())
			for i := 0; i < a.Len(); i++ {
				if a.IsNull(i) {
					b.AppendNull()
				} else {
					b.UnsafeAppend(int64(a.Value(i)))
				}
			}
			return b.NewArray(), nil
		}
	case *arrow.Float64Type:
		if a, ok := arr.(*array.Float32); ok {
			b := array.NewFloat64Builder(mem)
			defer b.Release()
			b.Reserve(a.Len())
			for i := 0; i < a.Len(); i++ {
				if a.IsNull(i) {
					b.AppendNull()
				} else {
					b.UnsafeAppend(float64(a.Value(i)))
				}
			}
			return b.NewArray(), nil
		}
	case *arrow.Decimal128Type:
		if sd, ok := src.(*arrow.Decimal128Type); ok && sd.Scale == dt.Scale && sd.Precision <= dt.Precision {
			return retype(data, dst, nil), nil // same 16-byte values, wider precision
		}
	}
	return nil, mismatch()
}

// conformChild conforms one child ArrayData (a list's values, a map's
// entries) from type src to dst and returns new ArrayData.
func conformChild(path string, child arrow.ArrayData, src, dst arrow.DataType, mem memory.Allocator) (arrow.ArrayData, error) {
	arr := array.MakeFromData(child)
	defer arr.Release()
	out, err := conformArray(path, arr, dst, mem)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	d := out.Data()
	d.Retain()
	return d, nil
}

// conformChildren conforms the fields of a struct array's data, filling
// fields missing from src with nulls. Child data are used unsliced: the
// struct keeps its own offset and length.
func conformChildren(path string, data arrow.ArrayData, src, dst *arrow.StructType, mem memory.Allocator) ([]arrow.ArrayData, error) {
	childLen := data.Offset() + data.Len()
	for _, c := range data.Children() {
		childLen = max(childLen, c.Len())
	}
	for _, f := range src.Fields() {
		if _, ok := dst.FieldIdx(f.Name); !ok {
			return nil, fmt.Errorf("conform: field %s.%s is not in the target schema: evolve the table before writing this batch", path, f.Name)
		}
	}
	out := make([]arrow.ArrayData, 0, dst.NumFields())
	for _, f := range dst.Fields() {
		fp := path + "." + f.Name
		si, ok := src.FieldIdx(f.Name)
		if !ok {
			nulls := array.MakeArrayOfNull(mem, f.Type, childLen)
			d := nulls.Data()
			d.Retain()
			nulls.Release()
			out = append(out, d)
			continue
		}
		d, err := conformChild(fp, data.Children()[si], src.Field(si).Type, f.Type, mem)
		if err != nil {
			releaseData(out)
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// retype makes an array of type dst over data's buffers with the given
// children, keeping data's offset, length and validity.
func retype(data arrow.ArrayData, dst arrow.DataType, children []arrow.ArrayData) arrow.Array {
	d := array.NewData(dst, data.Len(), data.Buffers(), children, data.NullN(), data.Offset())
	defer d.Release()
	return array.MakeFromData(d)
}

func releaseData(ds []arrow.ArrayData) {
	for _, d := range ds {
		d.Release()
	}
}
