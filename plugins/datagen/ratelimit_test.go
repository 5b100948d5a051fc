package datagen

import (
	"context"
	"testing"
	"time"
)

// A fast rate is kept up even when Read comes late: the bucket holds a
// tenth of a second.
func TestLimiterKeepsUpWithLateReads(t *testing.T) {
	if testing.Short() {
		t.Skip("takes half a second")
	}
	l := newLimiter(200_000, 5000)
	if l.chunk != 5000 || l.capacity != 20_000 {
		t.Fatalf("chunk %d, capacity %v", l.chunk, l.capacity)
	}
	start := time.Now()
	n := 0
	for time.Since(start) < 500*time.Millisecond {
		time.Sleep(40 * time.Millisecond) // a slow host: 8000 tokens accrue
		n += l.wait(context.Background(), 5000)
		for m := l.take(5000); m > 0; m = l.take(5000) {
			n += m
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	t.Logf("%.0f records/s at 200000/s with a Read every 40 ms", rate)
	if rate < 150_000 || rate > 230_000 {
		t.Fatalf("%.0f records/s at 200000/s", rate)
	}
}
