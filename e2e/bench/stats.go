package bench

import (
	"math"
	"slices"
)

// Median is the middle value (mean of the two middle ones for an even
// count); NaN for none.
func Median(xs []float64) float64 { return Quantile(xs, 0.5) }

// Quantile is the q-quantile of xs with linear interpolation between
// order statistics; NaN for none.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if lo == hi {
		return s[lo]
	}
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// Max is the largest value; NaN for none.
func Max(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Max(xs)
}

// Min is the smallest value; NaN for none.
func Min(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Min(xs)
}

// Mean is the arithmetic mean; NaN for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// MsHistogram counts non-negative millisecond values exactly up to a
// bound (one bucket per millisecond), for percentiles over millions of
// rows without keeping them. Values below 0 count as 0 (clock skew
// between producer and committer is at most a millisecond here: one
// machine), values above the bound in the last bucket.
type MsHistogram struct {
	counts   []int64
	n        int64
	negative int64
	sum      float64
}

// NewMsHistogram makes a histogram of values 0..maxMs.
func NewMsHistogram(maxMs int) *MsHistogram {
	return &MsHistogram{counts: make([]int64, maxMs+1)}
}

// Add counts one value.
func (h *MsHistogram) Add(ms int64) {
	if ms < 0 {
		h.negative++
		ms = 0
	}
	if ms >= int64(len(h.counts)) {
		ms = int64(len(h.counts) - 1)
	}
	h.counts[ms]++
	h.n++
	h.sum += float64(ms)
}

// N is the number of values.
func (h *MsHistogram) N() int64 { return h.n }

// Negative is how many values were below zero.
func (h *MsHistogram) Negative() int64 { return h.negative }

// Mean is the mean value.
func (h *MsHistogram) Mean() float64 {
	if h.n == 0 {
		return math.NaN()
	}
	return h.sum / float64(h.n)
}

// Quantile is the smallest value v with at least q of the values ≤ v.
func (h *MsHistogram) Quantile(q float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	want := int64(math.Ceil(q * float64(h.n)))
	want = max(want, 1)
	var seen int64
	for v, c := range h.counts {
		seen += c
		if seen >= want {
			return float64(v)
		}
	}
	return float64(len(h.counts) - 1)
}

// Max is the largest value counted.
func (h *MsHistogram) Max() float64 {
	for v := len(h.counts) - 1; v >= 0; v-- {
		if h.counts[v] > 0 {
			return float64(v)
		}
	}
	return math.NaN()
}
