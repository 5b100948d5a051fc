package iceberg

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
)

// recordBytes estimates the bytes of a record's rows: what its columns
// hold for its own rows, not the whole buffers a slice of a larger batch
// shares (the sink's sub-batches are slices).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	rows, off := int64(d.Len()), int64(d.Offset())
	bufs := d.Buffers()
	validity := (rows + 7) / 8
	switch dt := d.DataType().(type) {
	case arrow.FixedWidthDataType:
		return validity + rows*int64(dt.BitWidth())/8
	case *arrow.StringType, *arrow.BinaryType:
		if len(bufs) > 1 && bufs[1] != nil && bufs[1].Len() >= int((off+rows+1)*4) {
			o := bufs[1].Bytes()
			start := int64(int32(binary.LittleEndian.Uint32(o[off*4:])))
			end := int64(int32(binary.LittleEndian.Uint32(o[(off+rows)*4:])))
			return validity + (rows+1)*4 + end - start
		}
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		if len(bufs) > 1 && bufs[1] != nil && bufs[1].Len() >= int((off+rows+1)*8) {
			o := bufs[1].Bytes()
			start := int64(binary.LittleEndian.Uint64(o[off*8:]))
			end := int64(binary.LittleEndian.Uint64(o[(off+rows)*8:]))
			return validity + (rows+1)*8 + end - start
		}
	}
	// Nested and other types: their buffers and children whole (an
	// over-estimate for slices, which only closes files sooner).
	var n int64
	for _, b := range bufs {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}
