package iceberg

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk"
)

func TestChunksAreEvenAndBounded(t *testing.T) {
	for _, n := range []int{0, 1, itemRows - 1, itemRows, itemRows + 1, 2 * itemRows, 3*itemRows + 7} {
		next, runs := 0, 0
		for lo, hi := range chunks(n) {
			if lo != next || hi-lo > itemRows || hi-lo < itemRows/2 && n > itemRows {
				t.Fatalf("n=%d: run [%d, %d) after %d", n, lo, hi, next)
			}
			next, runs = hi, runs+1
		}
		if next != n || runs != (n+itemRows-1)/itemRows {
			t.Errorf("n=%d: %d runs ending at %d", n, runs, next)
		}
	}
}

// TestSplitBoundsItems: a batch bigger than itemRows reaches the writers
// in pieces of at most itemRows rows, each row exactly once and with its
// writer, whether one writer takes all or two share it.
func TestSplitBoundsItems(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(2)
	prepare(t, tk, 1, schemaV1)
	const n = 2*itemRows + 1001
	b := batchV1("p0", 100, n)
	defer b.Records.Release()
	r, err := tk.route(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	alternate := make([]uint32, n)
	for i := range alternate {
		alternate[i] = uint32(i % 2)
	}
	for name, writers := range map[string][]uint32{"one writer": nil, "two writers": alternate} {
		t.Run(name, func(t *testing.T) {
			items, err := tk.split(context.Background(), sdk.WriteRequest{Checkpoint: 1, Batch: b, Writers: writers}, r)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int64]int{}
			for _, it := range items {
				rec := it.item.rec
				if rec.NumRows() > itemRows {
					t.Errorf("an item of %d rows", rec.NumRows())
				}
				ids := rec.Column(0).(*array.Int64)
				for i := range ids.Len() {
					id := ids.Value(i)
					seen[id]++
					if writers != nil && int(alternate[id-100]) != it.writer {
						t.Errorf("row %d went to writer %d", id-100, it.writer)
					}
				}
				rec.Release()
			}
			if len(seen) != n {
				t.Errorf("%d distinct rows, want %d", len(seen), n)
			}
			for id, c := range seen {
				if c != 1 {
					t.Errorf("row %d in %d items", id-100, c)
				}
			}
		})
	}
}
