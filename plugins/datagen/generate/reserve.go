package generate

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// sizing is what one compiled value takes in its builder, on average.
// Sizing a batch's builders up front spares Arrow's builders their
// grow-and-copy steps, which otherwise cost more than making the values.
type sizing struct {
	// bytes is the mean data length of a string or binary value.
	bytes float64
	// per is the mean number of items of a list or entries of a map.
	per float64
	// children: a struct's fields in Arrow order; a list's item; a map's
	// key and item.
	children []*sizing
}

// Reserve makes room in cols (builders of [Generator.ArrowSchema]'s
// columns) for about n more records, nested values and string data
// included. It is optional: AppendArrow works without it, only slower.
func (g *Generator) Reserve(cols []array.Builder, n int) {
	for i := range g.fields {
		reserve(cols[i], g.fields[i].size, float64(n))
	}
}

func reserve(b array.Builder, sz *sizing, n float64) {
	if sb, ok := b.(storageBuilder); ok {
		b = sb.StorageBuilder()
	}
	grow(b, int(math.Ceil(n)))
	if sz == nil {
		return
	}
	switch b := b.(type) {
	case *array.StructBuilder:
		for i, c := range sz.children {
			reserve(b.FieldBuilder(i), c, n)
		}
	case *array.ListBuilder:
		reserve(b.ValueBuilder(), sz.children[0], n*sz.per)
	case *array.MapBuilder:
		reserve(b.KeyBuilder(), sz.children[0], n*sz.per)
		reserve(b.ItemBuilder(), sz.children[1], n*sz.per)
	case *array.StringBuilder:
		b.ReserveData(int(math.Ceil(n * sz.bytes)))
	case *array.BinaryBuilder:
		b.ReserveData(int(math.Ceil(n * sz.bytes)))
	}
}

// grow makes room for n more values in b. Unlike Reserve it allocates
// exactly that, not the next power of two: 5000 records would otherwise
// take buffers for 8192.
func grow(b array.Builder, n int) {
	if need := b.Len() + n; b.Cap() < need {
		b.Resize(need)
	}
}

// meanLen is the mean length of the strings.
func meanLen(list []string) float64 {
	if len(list) == 0 {
		return 0
	}
	n := 0
	for _, s := range list {
		n += len(s)
	}
	return float64(n) / float64(len(list))
}

// digits is the length of v in decimal.
func digits(v int64) float64 { return float64(len(strconv.FormatInt(v, 10))) }
