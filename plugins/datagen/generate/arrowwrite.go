package generate

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Writers that put one generated value into an Arrow builder. Each is
// picked once, at compile time, from the column's Arrow type as
// schemas.ArrowSchema gives it: the Avro → Arrow mapping lives there only,
// and a mapping the generator cannot follow is a compile error, not a
// silent difference.

// unit is the unit of a generated integer.
type unit int

const (
	plain  unit = iota
	nanos       // timestamp-nanos, local-timestamp-nanos
	micros      // timestamp-micros, local-timestamp-micros, time-micros
	millis      // timestamp-millis, local-timestamp-millis, time-millis
	days        // date
)

// nanos returns the unit's length in nanoseconds.
func (u unit) nanos() int64 {
	switch u {
	case nanos:
		return 1
	case micros:
		return 1e3
	case millis:
		return 1e6
	case days:
		return 86400e9
	}
	return 1
}

func timeUnitNanos(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1e9
	case arrow.Millisecond:
		return 1e6
	case arrow.Microsecond:
		return 1e3
	}
	return 1
}

// rescale returns a function converting a value of from nanoseconds per
// unit into to nanoseconds per unit (flooring).
func rescale(from, to int64) func(int64) int64 {
	switch {
	case from == to:
		return func(v int64) int64 { return v }
	case from > to:
		m := from / to
		return func(v int64) int64 { return v * m }
	}
	d := to / from
	return func(v int64) int64 {
		q := v / d
		if v%d < 0 {
			q--
		}
		return q
	}
}

// intArrow writes val, an integer of unit u, into a column of type dt.
func intArrow(dt arrow.DataType, u unit, val func(*state) int64) (func(*state, array.Builder), error) {
	temporal := u != plain
	switch dt := dt.(type) {
	case *arrow.Int64Type:
		if !temporal {
			return func(s *state, b array.Builder) { b.(*array.Int64Builder).Append(val(s)) }, nil
		}
	case *arrow.Int32Type:
		if !temporal {
			return func(s *state, b array.Builder) { b.(*array.Int32Builder).Append(int32(val(s))) }, nil
		}
	case *arrow.TimestampType:
		if temporal && u != days {
			conv := rescale(u.nanos(), timeUnitNanos(dt.Unit))
			return func(s *state, b array.Builder) {
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(conv(val(s))))
			}, nil
		}
	case *arrow.Date32Type:
		if u == days {
			return func(s *state, b array.Builder) { b.(*array.Date32Builder).Append(arrow.Date32(val(s))) }, nil
		}
	case *arrow.Time32Type:
		if temporal && u != days {
			conv := rescale(u.nanos(), timeUnitNanos(dt.Unit))
			return func(s *state, b array.Builder) { b.(*array.Time32Builder).Append(arrow.Time32(conv(val(s)))) }, nil
		}
	case *arrow.Time64Type:
		if temporal && u != days {
			conv := rescale(u.nanos(), timeUnitNanos(dt.Unit))
			return func(s *state, b array.Builder) { b.(*array.Time64Builder).Append(arrow.Time64(conv(val(s)))) }, nil
		}
	}
	return nil, fmt.Errorf("cannot write an integer into Arrow type %s", dt)
}

// decimalArrow writes val, an unscaled decimal, into a decimal column.
func decimalArrow(dt arrow.DataType, val func(*state) int64) (func(*state, array.Builder), error) {
	if _, ok := dt.(*arrow.Decimal128Type); ok {
		return func(s *state, b array.Builder) { b.(*array.Decimal128Builder).Append(decimal128.FromI64(val(s))) }, nil
	}
	return nil, fmt.Errorf("cannot write a decimal into Arrow type %s", dt)
}

// bytesArrow writes val, text or bytes, into a string, binary or
// fixed-size binary column (the caller checks a fixed width).
func bytesArrow(dt arrow.DataType, val func(*state) []byte) (func(*state, array.Builder), error) {
	switch dt.(type) {
	case *arrow.StringType:
		return func(s *state, b array.Builder) { b.(*array.StringBuilder).BinaryBuilder.Append(val(s)) }, nil
	case *arrow.BinaryType:
		return func(s *state, b array.Builder) { b.(*array.BinaryBuilder).Append(val(s)) }, nil
	case *arrow.FixedSizeBinaryType:
		return func(s *state, b array.Builder) { b.(*array.FixedSizeBinaryBuilder).Append(val(s)) }, nil
	}
	return nil, fmt.Errorf("cannot write text or bytes into Arrow type %s", dt)
}

// bytesWriter writes text or bytes into a string, binary or fixed-size
// binary column (the caller checks a fixed width).
func bytesWriter(dt arrow.DataType) (func(b array.Builder, v []byte), error) {
	switch dt.(type) {
	case *arrow.StringType:
		return func(b array.Builder, v []byte) { b.(*array.StringBuilder).BinaryBuilder.Append(v) }, nil
	case *arrow.BinaryType:
		return func(b array.Builder, v []byte) { b.(*array.BinaryBuilder).Append(v) }, nil
	case *arrow.FixedSizeBinaryType:
		return func(b array.Builder, v []byte) { b.(*array.FixedSizeBinaryBuilder).Append(v) }, nil
	}
	return nil, fmt.Errorf("cannot write text or bytes into Arrow type %s", dt)
}

// storageBuilder is implemented by Arrow extension builders.
type storageBuilder interface{ StorageBuilder() array.Builder }
