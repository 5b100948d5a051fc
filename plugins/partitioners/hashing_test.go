package partitioners

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestModulus(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, d := range []uint32{1, 2, 3, 7, 8, 12, 1000, 1 << 24, math.MaxUint32} {
		m := newModulus(d)
		for _, x := range []uint32{0, 1, d - 1, d, d + 1, math.MaxUint32, math.MaxUint32 - 1} {
			if got := m.mod(x); got != x%d {
				t.Fatalf("%d mod %d = %d, want %d", x, d, got, x%d)
			}
		}
		for range 10000 {
			x := r.Uint32()
			if got := m.mod(x); got != x%d {
				t.Fatalf("%d mod %d = %d, want %d", x, d, got, x%d)
			}
		}
	}
}

func TestFastRange(t *testing.T) {
	for _, n := range []uint32{1, 3, 8, 1000} {
		counts := make([]int, n)
		for i := range uint64(100_000) {
			w := fastRange(mix64(i), n)
			if w >= n {
				t.Fatalf("fastRange gave %d for n=%d", w, n)
			}
			counts[w]++
		}
		if n <= 8 {
			if mm := maxOverMean(counts); mm > 1.03 {
				t.Errorf("n=%d: uneven %v", n, counts)
			}
		}
	}
}

func TestCivil(t *testing.T) {
	for _, c := range []struct {
		days        int64
		year, month int64
	}{
		{0, 1970, 1}, {-1, 1969, 12}, {31, 1970, 2}, {59, 1970, 3}, {17486, 2017, 11}, {-719468, 0, 3}, {11016, 2000, 2}, {11017, 2000, 3},
	} {
		if y, m := civil(c.days); y != c.year || m != c.month {
			t.Errorf("civil(%d) = %d-%d, want %d-%d", c.days, y, m, c.year, c.month)
		}
	}
}
