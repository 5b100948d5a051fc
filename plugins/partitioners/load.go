package partitioners

import (
	"math"
	"sync"
)

// decay weighs records by age with forward decay (Cormode, Shkapenyuk,
// Srivastava, Xu: "Forward Decay", ICDE 2009). Rather than shrinking every
// counter as records pass, a record arriving later counts for more: its
// weight doubles every half-life. Ratios of counters then equal ratios of
// exponentially decayed counts, which is all the partitioners use, and only
// a rare rescale (when weights grow too large) touches every counter.
type decay struct {
	perRecord float64 // ln 2 / half-life
	weight    float64 // weight of a record arriving now
}

// rescaleAt bounds the weight; float64 keeps 1e-16 relative precision far
// beyond it.
const rescaleAt = 1 << 60

func newDecay(halfLife float64) decay {
	return decay{perRecord: math.Ln2 / halfLife, weight: 1}
}

// advance moves time on by n records. When the weight grew past rescaleAt
// it returns the factor the caller must multiply every counter by (and
// resets the weight to 1); otherwise 0.
func (d *decay) advance(n int) (rescale float64) {
	d.weight *= math.Exp(d.perRecord * float64(n))
	if d.weight < rescaleAt {
		return 0
	}
	f := 1 / d.weight
	d.weight = 1
	return f
}

// loadMeter tracks how many recent records each writer got. Safe for
// concurrent use: callers count a batch locally and merge it under a
// short lock.
type loadMeter struct {
	mu    sync.Mutex
	decay decay
	loads []float64
	total float64
}

// loadHalfLife is the hash and roundrobin partitioners' load window, in
// records.
const loadHalfLife = defaultDecay

func newLoadMeter(writers int) *loadMeter {
	return &loadMeter{decay: newDecay(loadHalfLife), loads: make([]float64, writers)}
}

// addWriters counts one batch's assignments.
func (m *loadMeter) addWriters(out []uint32) {
	if len(out) == 0 {
		return
	}
	if len(m.loads) > 256 {
		counts := make([]uint32, len(m.loads))
		for _, w := range out {
			counts[w]++
		}
		m.add(counts, len(out))
		return
	}
	// Four tables, so consecutive records to one writer do not wait on
	// each other's increment; byte indexes need no bounds checks.
	var c [4][256]uint32
	i := 0
	for ; i+4 <= len(out); i += 4 {
		c[0][uint8(out[i])]++
		c[1][uint8(out[i+1])]++
		c[2][uint8(out[i+2])]++
		c[3][uint8(out[i+3])]++
	}
	for ; i < len(out); i++ {
		c[0][uint8(out[i])]++
	}
	counts := c[0][:len(m.loads)]
	for j := range counts {
		counts[j] += c[1][j] + c[2][j] + c[3][j]
	}
	m.add(counts, len(out))
}

// add merges per-writer counts of a batch of n records.
func (m *loadMeter) add(counts []uint32, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.decay.weight
	for i, c := range counts {
		m.loads[i] += float64(c) * w
	}
	m.total += float64(n) * w
	if f := m.decay.advance(n); f != 0 {
		scaleAll(m.loads, f)
		m.total *= f
	}
}

// Load returns each writer's share of the recent records relative to a fair
// share: 1.0 is even, 2.0 twice its share. All zero before the first record.
func (m *loadMeter) Load() []float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return relativeLoads(m.loads, m.total)
}

func relativeLoads(loads []float64, total float64) []float64 {
	out := make([]float64, len(loads))
	if total <= 0 {
		return out
	}
	fair := total / float64(len(loads))
	for i, l := range loads {
		out[i] = l / fair
	}
	return out
}

func scaleAll(v []float64, f float64) {
	for i := range v {
		v[i] *= f
	}
}
