package partitioners

import (
	"context"
	"sync"
	"testing"
)

// TestRoundRobinEven: over W consecutive batches of any size, every writer
// gets the same number of records (± one per batch); within a batch each
// writer's records are one contiguous run.
func TestRoundRobinEven(t *testing.T) {
	for _, writers := range []int{1, 3, 8} {
		for _, size := range []int{1, 3, 7, 8, 100, 5003} {
			task := open(t, "roundrobin", writers, nil)
			counts := make([]int, writers)
			for range writers {
				out := partition(t, task, newBatch(t, nil, int64Col("v", make([]int64, size))))
				runs := map[uint32]int{}
				for i, w := range out {
					if i == 0 || out[i-1] != w {
						runs[w]++
					}
					counts[w]++
				}
				for w, r := range runs {
					if r != 1 {
						t.Fatalf("W=%d n=%d: writer %d has %d runs in one batch: %v", writers, size, w, r, out)
					}
				}
			}
			if lo, hi := minMax(counts); hi-lo > 0 {
				t.Errorf("W=%d n=%d: after %d batches counts %v", writers, size, writers, counts)
			}
		}
	}
}

// TestRoundRobinConcurrent: batches from many goroutines still spread
// evenly (run with -race).
func TestRoundRobinConcurrent(t *testing.T) {
	const writers = 8
	task := open(t, "roundrobin", writers, nil)
	b := newBatch(t, nil, int64Col("v", make([]int64, 1001)))
	var mu sync.Mutex
	counts := make([]int, writers)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			local := make([]int, writers)
			for range 100 {
				out, err := task.Partition(context.Background(), b)
				if err != nil {
					t.Error(err)
					return
				}
				for _, w := range out {
					local[w]++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for i, c := range local {
				counts[i] += c
			}
		})
	}
	wg.Wait()
	// 800 batches = 100 full rotations: exactly even.
	if lo, hi := minMax(counts); lo != hi {
		t.Errorf("counts %v", counts)
	}
	load := task.(interface{ Load() []float64 }).Load()
	for _, l := range load {
		if l < 0.99 || l > 1.01 {
			t.Errorf("Load %v, want all 1.0", load)
			break
		}
	}
}

func minMax(v []int) (lo, hi int) {
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
