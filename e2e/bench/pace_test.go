package bench

import "testing"

// TestPacerEndCountsEachPartitionsRecords: the end offsets pacerEnd gives
// for the first n records are those the pacer's order (record i to
// partition i % parts) puts in each partition.
func TestPacerEndCountsEachPartitionsRecords(t *testing.T) {
	const parts = 6
	for n := int64(0); n <= 40; n++ {
		want := make([]int64, parts)
		for i := range n {
			want[i%parts]++
		}
		for p := range parts {
			if got := pacerEnd(n, parts, p); got != want[p] {
				t.Errorf("pacerEnd(%d, %d, %d) = %d, want %d", n, parts, p, got, want[p])
			}
		}
	}
}
