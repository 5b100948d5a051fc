package sdk

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// offsetColumn returns the batch's __offset column.
func offsetColumn(b Batch) (*array.Int64, error) {
	idx := b.Records.Schema().FieldIndices(ColumnOffset)
	if len(idx) == 0 {
		return nil, fmt.Errorf("partition %s batch [%d, %d) has no %s column; every batch needs one (int64)",
			b.Partition, b.From, b.Next, ColumnOffset)
	}
	col, ok := b.Records.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("partition %s batch [%d, %d): column %s is %s, want int64",
			b.Partition, b.From, b.Next, ColumnOffset, b.Records.Column(idx[0]).DataType())
	}
	return col, nil
}

// splitBatch cuts b before row mid, whose offset is midOffset, without
// copying: the halves are slices of b.Records (release both). The halves
// chain: the first covers [From, midOffset), the second [midOffset, Next).
// Skipped records are counted in the first half as far as its range has
// room for them, the rest in the second.
func splitBatch(b Batch, midOffset, mid int64) (Batch, Batch) {
	rows := b.Records.NumRows()
	left, right := b, b
	left.Records = b.Records.NewSlice(0, mid)
	right.Records = b.Records.NewSlice(mid, rows)
	left.Next, right.From = midOffset, midOffset
	room := max(0, midOffset-b.From-mid)
	left.Skipped = min(b.Skipped, room)
	right.Skipped = b.Skipped - left.Skipped
	return left, right
}

// releaseBatches releases the records of every batch.
func releaseBatches(bs []Batch) {
	for _, b := range bs {
		if b.Records != nil {
			b.Records.Release()
		}
	}
}
