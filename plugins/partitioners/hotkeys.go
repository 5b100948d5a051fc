package partitioners

import (
	"cmp"
	"math"
	"slices"
)

// warmup is how many records the partitioner counts before it calls any
// key hot: a share measured over fewer records is mostly noise.
const warmup = 1000

// exitFactor is the hysteresis of the hot set: a hot key stays hot until
// its share falls below exitFactor × the threshold, so a key hovering at
// the threshold does not flip between one writer and several each batch.
const exitFactor = 0.8

// hotSet is an immutable view of the hot keys, with an open-addressing
// index for the per-record lookup.
type hotSet struct {
	keys  []hotKey
	slots []int32 // index+1 into keys; 0 = empty
	mask  uint64
}

// hotCand is a key refreshHot found hot, before it joins a snapshot.
type hotCand struct {
	key    uint64
	share  float64
	spread int
}

type hotKey struct {
	key   uint64
	share float64
	// writers are the candidates for the key's records: its home writer
	// first, then the next ones in the key's rendezvous order.
	writers []uint32
}

func (h *hotSet) find(key, mixed uint64) int {
	for i := mixed & h.mask; ; i = (i + 1) & h.mask {
		s := h.slots[i]
		if s == 0 {
			return -1
		}
		if h.keys[s-1].key == key {
			return int(s - 1)
		}
	}
}

// refreshHot recomputes the hot set from the heavy table and publishes a
// new snapshot when the hot keys or their spreads changed.
func (t *skewTask) refreshHot() {
	st := &t.st
	if st.seen < warmup || st.total <= 0 {
		return
	}
	cands := st.cands[:0]
	for _, e := range st.sketch.heavy {
		share := min(1, e.est/st.total)
		_, was := st.hot[e.key]
		if !(share > t.cfg.threshold || was && share >= exitFactor*t.cfg.threshold) {
			continue
		}
		spread := int(math.Ceil(share * float64(t.writers) * t.cfg.spread))
		spread = min(max(spread, 1), t.writers)
		cands = append(cands, hotCand{key: e.key, share: share, spread: spread})
	}
	st.cands = cands
	same := len(cands) == len(st.hot)
	for _, c := range cands {
		if r, ok := st.hot[c.key]; !ok || r != c.spread {
			same = false
			break
		}
	}
	if same {
		return
	}
	clear(st.hot)
	keys := make([]hotKey, len(cands))
	for i, c := range cands {
		keys[i] = hotKey{key: c.key, share: c.share, writers: candidates(t.keys.route, c.key, make([]uint32, c.spread))}
		st.hot[c.key] = c.spread
	}
	t.hotSet.Store(newHotSet(keys))
	t.log.Debug("skew-aware partitioner: hot keys changed", "hot", len(keys))
}

func newHotSet(keys []hotKey) *hotSet {
	if len(keys) == 0 {
		return nil
	}
	size := 8
	for size < 4*len(keys) {
		size <<= 1
	}
	h := &hotSet{keys: keys, slots: make([]int32, size), mask: uint64(size - 1)}
	for i, k := range keys {
		j := mix64(k.key) & h.mask
		for h.slots[j] != 0 {
			j = (j + 1) & h.mask
		}
		h.slots[j] = int32(i + 1)
	}
	return h
}

// candidates fills dst with the writers a hot key may use: its home
// writer first, then the other writers in the key's rendezvous
// (highest-random-weight) order. The choice depends only on the key, the
// writer count and len(dst), so every process and restart picks the same
// writers; the set for r writers holds the set for r-1, so a key whose share
// grows or shrinks a little moves few records. Two hot keys get unrelated
// orders, unlike hash+i, where keys with neighbouring homes pile onto the
// same writers.
func candidates(r router, key uint64, dst []uint32) []uint32 {
	home := r.home(key)
	dst[0] = home
	if len(dst) == 1 {
		return dst
	}
	type scored struct {
		w     uint32
		score uint64
	}
	all := make([]scored, 0, r.w-1)
	for w := range r.w {
		if w != home {
			all = append(all, scored{w, mix64(key ^ mix64(uint64(w)+1))})
		}
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	for i := 1; i < len(dst); i++ {
		dst[i] = all[i-1].w
	}
	return dst
}

// hotKeys returns the current hot keys, for tests and status.
func (t *skewTask) hotKeys() []hotKey {
	if hs := t.hotSet.Load(); hs != nil {
		return hs.keys
	}
	return nil
}
