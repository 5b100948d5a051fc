package partitioners

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
	"github.com/twmb/murmur3"
)

// The functions here fix how floe hashes values. They use no per-process
// seed, so every process (and every restart) sends a key to the same
// writer. Changing any of them moves keys between writers: harmless for
// correctness, but it spreads each moved Iceberg partition over two
// writers for one checkpoint, so do it only with a reason.

// nullHash stands for a null value in a hashed key.
const nullHash uint64 = 0x9e3779b97f4a7c15

// mix64 is the SplitMix64 finaliser: a bijection on uint64 whose output bits
// all depend on all input bits, so fixed-width values can feed fastRange.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashBytes hashes a variable-width value (string, binary, key bytes).
func hashBytes(b []byte) uint64 { return xxhash.Sum64(b) }

// combine folds the hash of one more key part into the running hash h. The
// order of parts matters, as it should for a composite key.
func combine(h, part uint64) uint64 {
	return mix64(bits.RotateLeft64(h, 23)*0x9fb21c651e98df25 ^ part)
}

// fastRange maps a well-mixed hash onto [0, n) without a division
// (Lemire, "Fast random integer generation in an interval", 2019): it keeps
// the high bits of h*n, so every writer gets an equal slice of the hash space.
func fastRange(h uint64, n uint32) uint32 {
	hi, _ := bits.Mul64(h, uint64(n))
	return uint32(hi)
}

// modulus computes x % d for a fixed d without a division instruction
// (Lemire, Kaser, Kurz, "Faster remainder by direct computation", 2019).
type modulus struct {
	d uint32
	m uint64
}

func newModulus(d uint32) modulus {
	return modulus{d: d, m: ^uint64(0)/uint64(d) + 1}
}

func (m modulus) mod(x uint32) uint32 {
	hi, _ := bits.Mul64(m.m*uint64(x), uint64(m.d))
	return uint32(hi)
}

// icebergBucketInt is Iceberg's bucket hash of an int, long, date, time or
// timestamp: murmur3 x86_32 (seed 0) of the value as a little-endian long.
// It is murmur3 unrolled for exactly eight bytes, so it needs no buffer.
func icebergBucketInt(v int64) uint32 {
	const (
		c1 = 0xcc9e2d51
		c2 = 0x1b873593
	)
	round := func(h, k uint32) uint32 {
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		return h*5 + 0xe6546b64
	}
	h := round(round(0, uint32(v)), uint32(uint64(v)>>32))
	h ^= 8
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// icebergBucketBytes is Iceberg's bucket hash of a string (its UTF-8
// bytes), binary, fixed or UUID value.
func icebergBucketBytes(b []byte) uint32 { return murmur3.Sum32(b) }

// bucketOf turns an Iceberg bucket hash into the bucket number, as the spec
// says: (hash & Integer.MAX_VALUE) % N.
func bucketOf(h uint32, n int32) int32 { return int32(h&0x7fffffff) % n }
