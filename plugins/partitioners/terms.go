package partitioners

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/floehq/floe/lake/partspec"
)

// termFn writes one key part per row of arr into dst: a well-mixed 64-bit
// hash of the (transformed) value, or nullHash for a null row. tmp is
// scratch at least as long as arr. A raw term writes the bucket number
// itself instead (see keySpec.bucket).
type termFn func(arr arrow.Array, dst []uint64, tmp []int64)

// compileTerm picks the code that computes term t for a column of type dt.
// raw asks for the plain bucket number (bucket terms only); its null rows
// get the number of buckets, one past the last bucket.
func compileTerm(t keyTerm, dt arrow.DataType, raw bool) (termFn, error) {
	switch d := dt.(type) {
	case arrow.ExtensionType:
		inner, err := compileTerm(t, d.StorageType(), raw)
		if err != nil {
			return nil, err
		}
		return func(arr arrow.Array, dst []uint64, tmp []int64) {
			inner(arr.(array.ExtensionArray).Storage(), dst, tmp)
		}, nil
	case *arrow.DictionaryType:
		inner, err := compileTerm(t, d.ValueType, raw)
		if err != nil {
			return nil, err
		}
		return dictionaryTerm(inner, nullPart(t, raw)), nil
	}

	cant := func(need string) error {
		return fmt.Errorf("%s: column %q is %s; %s needs %s", t.text, t.path, dt, partspec.TransformName(t.tf), need)
	}
	switch tf := t.tf.(type) {
	case iceberg.IdentityTransform:
		switch {
		case isIntLike(dt):
			return intTerm(nil, raw, 0), nil
		case dt.ID() == arrow.BOOL:
			return boolTerm, nil
		case dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64:
			return floatTerm, nil
		case dt.ID() == arrow.DECIMAL128:
			return decimalTerm(nil), nil
		case isBytesLike(dt):
			return bytesTerm(nil), nil
		case dt.ID() == arrow.NULL:
			return nullTerm, nil
		}
		return nil, fmt.Errorf("%s: column %q is %s, which floe cannot hash (use a primitive column or a nested field of one)", t.text, t.path, dt)

	case iceberg.BucketTransform:
		n := int32(tf.NumBuckets)
		switch {
		case isIntLike(dt) && dt.ID() != arrow.DURATION && !isUnsigned(dt):
			unit, timed := timeUnit(dt)
			return intTerm(func(v []int64) {
				switch {
				case dt.ID() == arrow.DATE64:
					toDays(v, dt)
				case timed:
					toMicros(v, unit)
				}
				bucketInts(v, n)
			}, raw, n), nil
		case dt.ID() == arrow.DECIMAL128:
			return decimalBucketTerm(n, raw), nil
		case isBytesLike(dt):
			return bytesBucketTerm(n, raw), nil
		}
		return nil, cant("an int, long, date, time, timestamp, decimal, string, binary or uuid column")

	case iceberg.TruncateTransform:
		w := tf.Width
		switch {
		case isInteger(dt) && !isUnsigned(dt):
			return intTerm(func(v []int64) { truncateInts(v, int64(w)) }, false, 0), nil
		case dt.ID() == arrow.DECIMAL128:
			return decimalTerm(func(n decimal128.Num) decimal128.Num { return truncateDecimal(n, uint64(w)) }), nil
		case isString(dt):
			return bytesTerm(func(b []byte) []byte { return truncateString(b, w) }), nil
		case isBytesLike(dt) && dt.ID() != arrow.FIXED_SIZE_BINARY:
			return bytesTerm(func(b []byte) []byte { return b[:min(len(b), w)] }), nil
		}
		return nil, cant("an int, long, decimal, string or binary column")

	case iceberg.YearTransform, iceberg.MonthTransform, iceberg.DayTransform:
		if dt.ID() != arrow.DATE32 && dt.ID() != arrow.DATE64 && dt.ID() != arrow.TIMESTAMP {
			return nil, cant("a date or timestamp column")
		}
		var then func([]int64)
		switch tf.(type) {
		case iceberg.YearTransform:
			then = daysToYears
		case iceberg.MonthTransform:
			then = daysToMonths
		}
		return intTerm(func(v []int64) {
			toDays(v, dt)
			if then != nil {
				then(v)
			}
		}, false, 0), nil

	case iceberg.HourTransform:
		ts, ok := dt.(*arrow.TimestampType)
		if !ok {
			return nil, cant("a timestamp column")
		}
		return intTerm(func(v []int64) { toHours(v, ts.Unit) }, false, 0), nil
	}
	return nil, fmt.Errorf("%s: transform %s is not supported", t.text, t.tf)
}

func nullPart(t keyTerm, raw bool) uint64 {
	if b, ok := t.tf.(iceberg.BucketTransform); ok && raw {
		return uint64(b.NumBuckets)
	}
	return nullHash
}

func isInteger(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isUnsigned(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// isIntLike reports the types loadInts reads.
func isIntLike(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION:
		return true
	}
	return isInteger(dt)
}

func isString(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

func isBytesLike(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		return true
	}
	return isString(dt)
}

// intTerm loads an integer-like column, applies op (a transform, or nil for
// identity) and writes mixed values, or raw ones for a raw bucket term.
func intTerm(op func([]int64), raw bool, buckets int32) termFn {
	null := nullHash
	if raw {
		null = uint64(buckets)
	}
	return func(arr arrow.Array, dst []uint64, tmp []int64) {
		v := tmp[:arr.Len()]
		loadInts(arr, v)
		if op != nil {
			op(v)
		}
		if raw {
			for i, x := range v {
				dst[i] = uint64(x)
			}
		} else {
			for i, x := range v {
				dst[i] = mix64(uint64(x))
			}
		}
		maskNulls(arr, dst, null)
	}
}

func boolTerm(arr arrow.Array, dst []uint64, _ []int64) {
	a := arr.(*array.Boolean)
	for i := range a.Len() {
		if a.Value(i) {
			dst[i] = mix64(1)
		} else {
			dst[i] = mix64(0)
		}
	}
	maskNulls(arr, dst, nullHash)
}

// floatTerm hashes floats by their float64 bits, with -0 and every NaN made
// one value, so a float widened to double keeps its hash.
func floatTerm(arr arrow.Array, dst []uint64, _ []int64) {
	put := func(i int, f float64) {
		switch {
		case f == 0:
			f = 0
		case f != f:
			f = math.NaN()
		}
		dst[i] = mix64(math.Float64bits(f))
	}
	switch a := arr.(type) {
	case *array.Float32:
		for i, f := range a.Float32Values() {
			put(i, float64(f))
		}
	case *array.Float64:
		for i, f := range a.Float64Values() {
			put(i, f)
		}
	}
	maskNulls(arr, dst, nullHash)
}

func nullTerm(arr arrow.Array, dst []uint64, _ []int64) {
	for i := range arr.Len() {
		dst[i] = nullHash
	}
}

// decimalTerm hashes a decimal's unscaled 128-bit value, after op (nil for
// identity).
func decimalTerm(op func(decimal128.Num) decimal128.Num) termFn {
	return func(arr arrow.Array, dst []uint64, _ []int64) {
		for i, n := range arr.(*array.Decimal128).Values() {
			if op != nil {
				n = op(n)
			}
			dst[i] = combine(mix64(n.LowBits()), uint64(n.HighBits()))
		}
		maskNulls(arr, dst, nullHash)
	}
}

func decimalBucketTerm(n int32, raw bool) termFn {
	return func(arr arrow.Array, dst []uint64, tmp []int64) {
		for i, d := range arr.(*array.Decimal128).Values() {
			tmp[i] = int64(bucketOf(decimalBucketHash(d), n))
		}
		finishInts(arr, dst, tmp, raw, n)
	}
}

func bytesBucketTerm(n int32, raw bool) termFn {
	return func(arr arrow.Array, dst []uint64, tmp []int64) {
		c := bytesColumn(arr)
		for i := range arr.Len() {
			tmp[i] = int64(bucketOf(icebergBucketBytes(c.at(i)), n))
		}
		finishInts(arr, dst, tmp, raw, n)
	}
}

// finishInts writes computed bucket numbers as key parts.
func finishInts(arr arrow.Array, dst []uint64, v []int64, raw bool, buckets int32) {
	v = v[:arr.Len()]
	null := nullHash
	if raw {
		null = uint64(buckets)
		for i, x := range v {
			dst[i] = uint64(x)
		}
	} else {
		for i, x := range v {
			dst[i] = mix64(uint64(x))
		}
	}
	maskNulls(arr, dst, null)
}

// bytesTerm hashes string and binary values, after op (nil for identity).
func bytesTerm(op func([]byte) []byte) termFn {
	return func(arr arrow.Array, dst []uint64, _ []int64) {
		c := bytesColumn(arr)
		if op == nil {
			for i := range arr.Len() {
				dst[i] = hashBytes(c.at(i))
			}
		} else {
			for i := range arr.Len() {
				dst[i] = hashBytes(op(c.at(i)))
			}
		}
		maskNulls(arr, dst, nullHash)
	}
}

// dictionaryTerm computes the term once per dictionary value, then looks
// each row's value up by its index.
func dictionaryTerm(inner termFn, null uint64) termFn {
	return func(arr arrow.Array, dst []uint64, tmp []int64) {
		d := arr.(*array.Dictionary)
		values := d.Dictionary()
		parts := make([]uint64, values.Len())
		inner(values, parts, make([]int64, values.Len()))
		idx := tmp[:arr.Len()]
		loadInts(d.Indices(), idx)
		for i, j := range idx {
			if j >= 0 && j < int64(len(parts)) {
				dst[i] = parts[j]
			} else {
				dst[i] = null
			}
		}
		maskNulls(arr, dst, null)
	}
}

// maskNulls sets the null rows of arr to null.
func maskNulls(arr arrow.Array, dst []uint64, null uint64) {
	if arr.NullN() == 0 {
		return
	}
	for i := range arr.Len() {
		if arr.IsNull(i) {
			dst[i] = null
		}
	}
}

// bytesCol reads the values of any string or binary layout without copying.
type bytesCol struct {
	offs32 []int32
	offs64 []int64
	data   []byte
	view   interface{ Value(int) []byte }
	sview  *array.StringView
}

func bytesColumn(arr arrow.Array) bytesCol {
	switch a := arr.(type) {
	case *array.Binary:
		return bytesCol{offs32: a.ValueOffsets(), data: a.ValueBytes()}
	case *array.String:
		return bytesCol{offs32: a.ValueOffsets(), data: a.ValueBytes()}
	case *array.LargeBinary:
		return bytesCol{offs64: a.ValueOffsets(), data: a.ValueBytes()}
	case *array.LargeString:
		return bytesCol{offs64: a.ValueOffsets(), data: a.ValueBytes()}
	case *array.FixedSizeBinary:
		return bytesCol{view: a}
	case *array.BinaryView:
		return bytesCol{view: a}
	case *array.StringView:
		return bytesCol{sview: a}
	}
	return bytesCol{}
}

// at returns row i's bytes (empty for a null row).
func (c *bytesCol) at(i int) []byte {
	switch {
	case c.offs32 != nil:
		base := c.offs32[0]
		return c.data[c.offs32[i]-base : c.offs32[i+1]-base]
	case c.offs64 != nil:
		base := c.offs64[0]
		return c.data[c.offs64[i]-base : c.offs64[i+1]-base]
	case c.view != nil:
		return c.view.Value(i)
	case c.sview != nil:
		s := c.sview.Value(i)
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	return nil
}
