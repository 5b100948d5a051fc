package datagen

import (
	"context"
	"math"
	"time"
)

// limiter is a token bucket of records. Each task has its own, filled at
// its share of datagen.rate, so the connector as a whole generates
// datagen.rate records per second.
//
// Under a rate limit a batch is one chunk: about a tenth of a second of the
// rate, capped at the batch size, so the rate is smooth at every time scale
// the host sees. The bucket holds a tenth of a second of tokens (at least a
// chunk): enough that a host calling Read a little late loses no rate, too
// little for an idle pipeline to bank a burst.
type limiter struct {
	rate     float64 // records per second
	chunk    int
	capacity float64
	tokens   float64
	last     time.Time
}

func newLimiter(rate float64, batchSize int) *limiter {
	chunk := int(math.Min(float64(batchSize), math.Max(1, math.Ceil(rate/10))))
	// The bucket starts with one chunk: the first batch need not wait.
	return &limiter{
		rate:     rate,
		chunk:    chunk,
		capacity: math.Max(float64(chunk), rate/10),
		tokens:   float64(chunk),
		last:     time.Now(),
	}
}

// refill adds the tokens accrued since the last call.
func (l *limiter) refill(now time.Time) {
	l.tokens = math.Min(l.capacity, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
}

// wait takes up to want records (at most a chunk), sleeping until they are
// available. It returns 0 when ctx ends first.
func (l *limiter) wait(ctx context.Context, want int) int {
	want = min(want, l.chunk)
	for {
		l.refill(time.Now())
		if l.tokens >= float64(want) {
			l.tokens -= float64(want)
			return want
		}
		d := time.Duration((float64(want) - l.tokens) / l.rate * float64(time.Second))
		t := time.NewTimer(max(d, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return 0
		case <-t.C:
		}
	}
}

// take takes up to want records (at most a chunk) without waiting: all of
// them or none.
func (l *limiter) take(want int) int {
	want = min(want, l.chunk)
	l.refill(time.Now())
	if l.tokens >= float64(want) {
		l.tokens -= float64(want)
		return want
	}
	return 0
}
