package partitioners

import (
	"math/bits"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// This file applies Iceberg's partition transforms to whole Arrow columns,
// as the Iceberg spec defines them (https://iceberg.apache.org/spec/#partition-transforms).
// iceberg-go applies them one boxed value at a time, which allocates per
// record; the tests check these against iceberg-go's results.
//
// Integer-valued transforms work in place on an []int64 holding the column's
// values (loadInts); rows that are null hold garbage and are masked later.

// loadInts copies an integer-like column (integers, dates, times,
// timestamps, durations) into dst as int64 values in the column's own unit.
// It reports false for any other type.
func loadInts(arr arrow.Array, dst []int64) bool {
	switch a := arr.(type) {
	case *array.Int8:
		widen(dst, a.Int8Values())
	case *array.Int16:
		widen(dst, a.Int16Values())
	case *array.Int32:
		widen(dst, a.Int32Values())
	case *array.Int64:
		copy(dst, a.Int64Values())
	case *array.Uint8:
		widen(dst, a.Uint8Values())
	case *array.Uint16:
		widen(dst, a.Uint16Values())
	case *array.Uint32:
		widen(dst, a.Uint32Values())
	case *array.Uint64:
		widen(dst, a.Uint64Values())
	case *array.Date32:
		widen(dst, a.Date32Values())
	case *array.Date64:
		widen(dst, a.Date64Values())
	case *array.Time32:
		widen(dst, a.Time32Values())
	case *array.Time64:
		widen(dst, a.Time64Values())
	case *array.Timestamp:
		widen(dst, a.TimestampValues())
	case *array.Duration:
		widen(dst, a.DurationValues())
	default:
		return false
	}
	return true
}

func widen[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64](dst []int64, src []T) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = int64(v)
	}
}

// Units per second of each Arrow time unit.
var unitsPerSecond = [...]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}

// timeUnit returns the unit of a time-like type and whether it has one.
// Dates count days (date32) or milliseconds (date64).
func timeUnit(dt arrow.DataType) (unit arrow.TimeUnit, ok bool) {
	switch t := dt.(type) {
	case *arrow.TimestampType:
		return t.Unit, true
	case *arrow.Time32Type:
		return t.Unit, true
	case *arrow.Time64Type:
		return t.Unit, true
	case *arrow.Date64Type:
		return arrow.Millisecond, true
	}
	return 0, false
}

// floorDiv divides rounding towards negative infinity, as Iceberg's time
// transforms do for instants before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// floorMod is the remainder of floorDiv: always in [0, b) for b > 0.
func floorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}

// divAll floor-divides every value by d (d == 1 leaves them).
func divAll(v []int64, d int64) {
	if d == 1 {
		return
	}
	for i := range v {
		v[i] = floorDiv(v[i], d)
	}
}

// toMicros converts values in unit to microseconds, Iceberg's unit for
// time and timestamp (nanoseconds floor, as Iceberg buckets timestamp_ns).
func toMicros(v []int64, unit arrow.TimeUnit) {
	switch unit {
	case arrow.Second, arrow.Millisecond:
		f := 1e6 / unitsPerSecond[unit]
		for i := range v {
			v[i] *= f
		}
	case arrow.Nanosecond:
		divAll(v, 1000)
	}
}

// toDays converts a date or timestamp column's values to days since
// 1970-01-01. isDate32 columns already count days.
func toDays(v []int64, dt arrow.DataType) {
	if unit, ok := timeUnit(dt); ok {
		divAll(v, 86400*unitsPerSecond[unit])
	}
}

// toHours converts timestamps to hours since the epoch.
func toHours(v []int64, unit arrow.TimeUnit) {
	divAll(v, 3600*unitsPerSecond[unit])
}

// daysToMonths turns days since the epoch into months since 1970-01, and
// daysToYears into years since 1970, with Hinnant's civil-from-days
// algorithm (exact over the whole int32 day range, no time.Time).
func daysToMonths(v []int64) {
	for i, d := range v {
		y, m := civil(d)
		v[i] = (y-1970)*12 + m - 1
	}
}

func daysToYears(v []int64) {
	for i, d := range v {
		y, _ := civil(d)
		v[i] = y - 1970
	}
}

// civil returns the proleptic Gregorian year and month (1–12) of a day
// number (http://howardhinnant.github.io/date_algorithms.html#civil_from_days).
func civil(days int64) (year, month int64) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	month = mp + 3
	if month > 12 {
		month -= 12
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year, month
}

// bucketInts replaces each value (already in Iceberg's representation: a
// long, days, or microseconds) by its Iceberg bucket number.
func bucketInts(v []int64, n int32) {
	for i, x := range v {
		v[i] = int64(bucketOf(icebergBucketInt(x), n))
	}
}

// truncateInts applies Iceberg's integer truncate: v - (v mod W), with the
// remainder taken towards negative infinity (truncate(10, -1) = -10).
func truncateInts(v []int64, w int64) {
	for i, x := range v {
		v[i] = x - floorMod(x, w)
	}
}

// truncateDecimal applies Iceberg's decimal truncate to the unscaled value:
// unscaled - (unscaled mod W), remainder towards negative infinity, in 128
// bits without big.Int.
func truncateDecimal(n decimal128.Num, w uint64) decimal128.Num {
	neg := n.Sign() < 0
	abs := n
	if neg {
		abs = n.Negate()
	}
	hi, lo := uint64(abs.HighBits()), abs.LowBits()
	r := bits.Rem64(hi%w, lo, w)
	if neg && r != 0 {
		r = w - r
	}
	return n.Sub(decimal128.FromU64(r))
}

// decimalBucketHash is Iceberg's bucket hash of a decimal: murmur3 of the
// unscaled value's shortest two's-complement big-endian bytes.
func decimalBucketHash(n decimal128.Num) uint32 {
	var buf [16]byte
	hi, lo := uint64(n.HighBits()), n.LowBits()
	for i := 0; i < 8; i++ {
		buf[i] = byte(hi >> (56 - 8*i))
		buf[8+i] = byte(lo >> (56 - 8*i))
	}
	start := 0
	if n.Sign() >= 0 {
		for start < 15 && buf[start] == 0 && buf[start+1]&0x80 == 0 {
			start++
		}
	} else {
		for start < 15 && buf[start] == 0xff && buf[start+1]&0x80 != 0 {
			start++
		}
	}
	return icebergBucketBytes(buf[start:])
}

// truncateString returns the first w Unicode code points of s, as Iceberg's
// string truncate does (invalid UTF-8 counts one code point per bad byte).
func truncateString(s []byte, w int) []byte {
	if len(s) <= w {
		return s
	}
	i := 0
	for n := 0; n < w && i < len(s); n++ {
		_, size := utf8.DecodeRune(s[i:])
		i += size
	}
	return s[:i]
}
