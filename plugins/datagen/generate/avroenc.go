package generate

import (
	"encoding/binary"
	"math"
)

// Avro binary encoding of the values the generator makes. Avro's int and
// long are zig-zag varints, which is exactly encoding/binary's signed
// varint.

func appendLong(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

func appendBytes(dst, v []byte) []byte {
	dst = binary.AppendVarint(dst, int64(len(v)))
	return append(dst, v...)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendFloat(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
}

func appendDouble(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

// decimalWidth is the length of the shortest two's-complement big-endian
// encoding of v, as Avro's bytes decimals use.
func decimalWidth(v int64) int {
	n := 1
	for n < 8 {
		shift := uint(8*n - 1)
		if v>>shift == 0 || v>>shift == -1 {
			break
		}
		n++
	}
	return n
}

// appendDecimal appends v's two's-complement big-endian bytes, width long
// (sign-extended when width > 8).
func appendDecimal(dst []byte, v int64, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		if i >= 8 {
			if v < 0 {
				dst = append(dst, 0xff)
			} else {
				dst = append(dst, 0)
			}
			continue
		}
		dst = append(dst, byte(v>>(8*uint(i))))
	}
	return dst
}
