package partitioners

import (
	"cmp"
	"math"
	"slices"
)

type planRun struct {
	writer uint32
	n      int32
}

type writerLoad struct {
	writer uint32
	load   float64 // in records
	give   int32
}

// assignPlanned is Partition's last pass: the records of hot key h take
// the plan's runs planAt[h], planAt[h]+1, … in record order.
func assignPlanned(keys []uint64, keyless nullMask, hs *hotSet, sc *skewScratch, out []uint32) {
	for i, k := range keys {
		if keyless != nil && keyless.IsNull(i) {
			continue
		}
		h := hs.find(k, mix64(k))
		if h < 0 || sc.planAt[h] < 0 {
			continue
		}
		r := &sc.plan[sc.planAt[h]]
		out[i] = r.writer
		if r.n--; r.n == 0 {
			sc.planAt[h]++
		}
	}
}

// waterfill splits m records of weight w over the candidate writers the
// way water fills a vessel with an uneven floor: the least-loaded
// candidate gets records until it reaches the next one's load, then both
// do, and so on. Afterwards every candidate that got records is at most one
// record above every other candidate. It appends the runs to sc.plan.
func (t *skewTask) waterfill(sc *skewScratch, cands []uint32, m int32, w float64) []planRun {
	st := &t.st
	order := sc.order[:0]
	for _, c := range cands {
		order = append(order, writerLoad{writer: c, load: st.loads[c] / w})
	}
	slices.SortFunc(order, func(a, b writerLoad) int { return cmp.Compare(a.load, b.load) })
	sc.order = order

	// Find how many candidates take records (k) and the level they reach.
	sum, level, k := 0.0, 0.0, 0
	for k < len(order) {
		sum += order[k].load
		k++
		level = (sum + float64(m)) / float64(k)
		if k == len(order) || level <= order[k].load {
			break
		}
	}
	left := m
	for i := range k {
		c := int32(max(0, math.Floor(level-order[i].load)))
		c = min(c, left)
		order[i].give = c
		left -= c
	}
	// Rounding down leaves fewer than k records: one more each for the
	// least loaded.
	for i := 0; left > 0; i = (i + 1) % k {
		order[i].give++
		left--
	}
	for _, o := range order[:k] {
		if o.give > 0 {
			sc.plan = append(sc.plan, planRun{writer: o.writer, n: o.give})
			st.loads[o.writer] += float64(o.give) * w
		}
	}
	return sc.plan
}
