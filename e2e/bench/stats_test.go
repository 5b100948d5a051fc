package bench

import (
	"testing"
	"time"
)

func TestQuantileInterpolates(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	if got := Median(xs); got != 2.5 {
		t.Errorf("Median = %v, want 2.5", got)
	}
	if got := Quantile(xs, 1); got != 4 {
		t.Errorf("Quantile(1) = %v, want 4", got)
	}
	if xs[0] != 4 {
		t.Errorf("Quantile sorted its input in place")
	}
}

func TestMsHistogramQuantiles(t *testing.T) {
	h := NewMsHistogram(1000)
	for v := int64(1); v <= 100; v++ {
		h.Add(v)
	}
	h.Add(-3)   // counted as 0
	h.Add(5000) // clamped to the last bucket
	if h.N() != 102 || h.Negative() != 1 {
		t.Fatalf("N %d, negative %d", h.N(), h.Negative())
	}
	if got := h.Quantile(0.5); got != 50 {
		t.Errorf("p50 = %v, want 50", got)
	}
	if got := h.Max(); got != 1000 {
		t.Errorf("max = %v, want 1000", got)
	}
}

func TestCommitDurationsFromHistogramDeltas(t *testing.T) {
	at := time.Now()
	s := []MetricSample{
		{At: at, CommitCount: 0, CommitSum: 0},
		{At: at, CommitCount: 1, CommitSum: 0.05},
		{At: at, CommitCount: 1, CommitSum: 0.05},
		{At: at, CommitCount: 3, CommitSum: 0.25, Commits: 3},
	}
	d, merged := CommitDurations(s)
	if len(d) != 3 || merged != 2 {
		t.Fatalf("durations %v, merged %d; want 3 durations, 2 merged", d, merged)
	}
	if d[0] != 0.05 || d[1] != 0.1 || d[2] != 0.1 {
		t.Errorf("durations %v, want [0.05 0.1 0.1]", d)
	}
}
