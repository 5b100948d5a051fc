package partitioners

// aggTable counts the distinct keys of one batch, so the locked merge does
// one sketch update per distinct key rather than per record. Slots carry a
// generation instead of being cleared between batches.
type aggTable struct {
	slots []aggSlot
	mask  uint64
	gen   uint32
	used  []int32
}

type aggSlot struct {
	key uint64
	n   uint32
	gen uint32
}

func (a *aggTable) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if len(a.slots) < size {
		a.slots, a.gen = make([]aggSlot, size), 0
	}
	a.mask = uint64(size - 1)
	if a.gen++; a.gen == 0 {
		clear(a.slots)
		a.gen = 1
	}
	a.used = a.used[:0]
}

// count returns how many records of key the batch has.
func (a *aggTable) count(key, mixed uint64) uint32 {
	for i := mixed & a.mask; ; i = (i + 1) & a.mask {
		s := &a.slots[i]
		if s.gen != a.gen {
			return 0
		}
		if s.key == key {
			return s.n
		}
	}
}

func (a *aggTable) add(key, mixed uint64) {
	for i := mixed & a.mask; ; i = (i + 1) & a.mask {
		s := &a.slots[i]
		if s.gen != a.gen {
			*s = aggSlot{key: key, n: 1, gen: a.gen}
			a.used = append(a.used, int32(i))
			return
		}
		if s.key == key {
			s.n++
			return
		}
	}
}
