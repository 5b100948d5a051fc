package generate

import "math/bits"

// The per-record random state. A record's values depend only on (seed,
// partition, offset): recordSeed hashes the three with the splitmix64
// finalizer, and the record's fields draw from a splitmix64 stream started
// there. The key draws from its own stream (keySalt), so AppendKey does not
// have to generate the rest of the record.

const (
	golden  = 0x9e3779b97f4a7c15
	keySalt = 0x5851f42d4c957f2d
)

// mix64 is splitmix64's finalizer: a bijection on uint64 with full
// avalanche.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// recordSeed is the start of the random stream of record (p, o).
func recordSeed(seed uint64, p int, o int64) uint64 {
	h := mix64(seed + golden)
	h = mix64((h ^ uint64(p)) + golden)
	return mix64(h ^ uint64(o))
}

// state is what the compiled field closures share while one record is
// generated: the random stream, the record's key rank and event time, and
// a scratch buffer for text values.
type state struct {
	x       uint64
	keyRank uint64
	// eventMicros is the record's event time, Unix microseconds.
	eventMicros int64
	scratch     []byte
}

// next returns the next value of the stream (splitmix64).
func (s *state) next() uint64 {
	s.x += golden
	return mix64(s.x)
}

// intn returns a value in [0, n), n > 0 (Lemire's multiply-shift; the bias
// is far below anything a test could see).
func (s *state) intn(n uint64) uint64 {
	hi, _ := bits.Mul64(s.next(), n)
	return hi
}

// between returns a value in [lo, hi], hi >= lo and hi-lo < MaxUint64
// (hints.intRange sees to both).
func (s *state) between(lo, hi int64) int64 {
	v, _ := bits.Mul64(s.next(), uint64(hi-lo)+1)
	return lo + int64(v)
}

// float returns a value in [0, 1).
func (s *state) float() float64 {
	return float64(s.next()>>11) * 0x1p-53
}
