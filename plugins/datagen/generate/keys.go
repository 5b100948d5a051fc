package generate

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Skew is how record keys are distributed over the key space.
type Skew string

// Key distributions.
const (
	// Uniform draws every key with the same probability.
	Uniform Skew = "uniform"
	// Zipf draws key rank k (0-based) with probability proportional to
	// 1/(k+1)^s: a few hot keys and a long tail.
	Zipf Skew = "zipf"
)

// keyDist maps a uniform 64-bit draw to a key rank in [0, cardinality).
type keyDist struct {
	n uint64
	// cdf is nil for Uniform; for Zipf cdf[k] is P(rank <= k), so a draw
	// is one binary search and no allocation.
	cdf []float64
}

func newKeyDist(skew Skew, cardinality int, s float64) (keyDist, error) {
	if cardinality < 1 {
		return keyDist{}, fmt.Errorf("key cardinality must be at least 1, got %d", cardinality)
	}
	d := keyDist{n: uint64(cardinality)}
	switch skew {
	case Uniform, "":
		return d, nil
	case Zipf:
	default:
		return keyDist{}, fmt.Errorf("unknown key skew %q (want %s or %s)", skew, Uniform, Zipf)
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return keyDist{}, fmt.Errorf("zipf exponent must be positive, got %v", s)
	}
	d.cdf = make([]float64, cardinality)
	sum := 0.0
	for k := range d.cdf {
		sum += math.Pow(float64(k+1), -s)
		d.cdf[k] = sum
	}
	for k := range d.cdf {
		d.cdf[k] /= sum
	}
	d.cdf[cardinality-1] = 1
	return d, nil
}

// rank maps the draw u to a key rank.
func (d *keyDist) rank(u uint64) uint64 {
	if d.cdf == nil {
		hi, _ := bits.Mul64(u, d.n)
		return hi
	}
	f := float64(u>>11) * 0x1p-53
	i, _ := slices.BinarySearch(d.cdf, f)
	return uint64(i)
}
