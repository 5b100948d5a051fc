package partitioners

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floehq/floe/sdk"
)

// skewAware is the skew-aware component: hash partitioning for cold keys,
// and hot keys spread over several writers. See doc.go for the algorithm.
type skewAware struct{}

func (skewAware) Open(_ context.Context, req sdk.PartitionerOpenRequest) (sdk.PartitionerTask, error) {
	const who = "skew-aware partitioner"
	if err := checkWriters("skew-aware", req.Writers); err != nil {
		return nil, err
	}
	spec, err := keySpecFrom(req.Config)
	if err != nil {
		return nil, err
	}
	cfg, err := skewConfigFrom(req.Config, req.Writers)
	if err != nil {
		return nil, err
	}
	l := logger(req.Logger)
	logKeySpec(l, "skew-aware", spec, req.Writers)
	return &skewTask{
		keys:    newKeyer(who, spec, req.Writers),
		spread:  newSpreader(req.Writers),
		cfg:     cfg,
		writers: req.Writers,
		log:     l,
		st: skewState{
			decay:  newDecay(cfg.halfLife),
			sketch: newSketch(cfg.width, cfg.depth, cfg.heavy),
			loads:  make([]float64, req.Writers),
			hot:    map[uint64]int{},
		},
	}, nil
}

// warmup is how many records the partitioner counts before it calls any
// key hot: a share measured over fewer records is mostly noise.
const warmup = 1000

// exitFactor is the hysteresis of the hot set: a hot key stays hot until
// its share falls below exitFactor × the threshold, so a key hovering at
// the threshold does not flip between one writer and several each batch.
const exitFactor = 0.8

type skewTask struct {
	keys    *keyer
	spread  *spreader
	cfg     skewConfig
	writers int
	log     *slog.Logger
	closed  atomic.Bool

	// hotSet is replaced, never changed, so Partition reads it without a lock.
	hotSet atomic.Pointer[hotSet]
	pool   sync.Pool // *skewScratch

	mu sync.Mutex
	st skewState // guarded by mu
}

// skewState is the load statistics every Partition call merges into.
type skewState struct {
	decay  decay
	sketch *sketch
	loads  []float64      // per writer, forward-decayed record counts
	total  float64        // sum of loads
	seen   int64          // records counted, for warmup
	hot    map[uint64]int // hot keys → how many writers they spread over
	cands  []hotCand      // scratch for refreshHot
}

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

// skewScratch is one call's working memory, pooled.
type skewScratch struct {
	counts []uint32 // per writer: records placed at their home, or keyless
	planAt []int32  // per hot key: its next run in plan, -1 if none
	plan   []planRun
	agg    aggTable
	order  []writerLoad
}

type planRun struct {
	writer uint32
	n      int32
}

type writerLoad struct {
	writer uint32
	load   float64 // in records
	give   int32
}

func (t *skewTask) scratch(n int) *skewScratch {
	sc, _ := t.pool.Get().(*skewScratch)
	if sc == nil {
		sc = &skewScratch{counts: make([]uint32, t.writers)}
	}
	clear(sc.counts)
	sc.plan = sc.plan[:0]
	sc.agg.reset(n)
	return sc
}

// Partition places every record, in two passes around one short locked
// merge:
//
//  1. Without a lock: compute keys, count each distinct key, and send
//     every record to its home writer (the writer hash would pick), or, if
//     it has no key, to the next writer in turn.
//  2. Under the lock: add the key counts to the sketch and the placements
//     to the writers' loads, update the hot set, and for each hot key in
//     the batch take its records back from its home writer and split them
//     over its candidate writers, least-loaded first.
//  3. Without a lock, if the batch has hot keys: give their records the
//     planned writers, in contiguous runs per writer.
//
// So a batch is placed with statistics that already include it: a key
// that turns hot is spread from its first heavy batch on.
func (t *skewTask) Partition(ctx context.Context, b sdk.Batch) ([]uint32, error) {
	if err := checkCall(ctx, "skew-aware", &t.closed, b); err != nil {
		return nil, err
	}
	rec := b.Records
	n := int(rec.NumRows())
	out := make([]uint32, n)
	if n == 0 {
		return out, nil
	}
	bd, err := t.keys.bind(rec.Schema())
	if err != nil {
		return nil, err
	}
	sc := t.scratch(n)
	defer t.pool.Put(sc)

	if t.keys.spec.byKey {
		if col := bd.keyColumn(rec); col == nil || col.NullN() == n {
			t.spread.chunks(out, sc.counts)
			t.merge(sc, n)
			return out, nil
		}
	}
	ks := t.keys.scratch(n)
	defer t.keys.release(ks)
	bd.keys(rec, ks)
	keyless := t.place(bd, rec, ks.keys, sc, out)
	if hs := t.merge(sc, n); hs != nil {
		assignPlanned(ks.keys, keyless, hs, sc, out)
	}
	return out, nil
}

// place is Partition's first pass. It returns the key column when some
// records have a null key, for the last pass to skip them.
func (t *skewTask) place(bd *binding, rec arrow.RecordBatch, keys []uint64, sc *skewScratch, out []uint32) (keyless nullMask) {
	route := t.keys.route
	var next uint32
	if t.keys.spec.byKey {
		if col := bd.keyColumn(rec); col.NullN() > 0 {
			keyless, next = col, t.spread.turns(col.NullN())
		}
	}
	for i, k := range keys {
		if keyless != nil && keyless.IsNull(i) {
			out[i] = next
			sc.counts[next]++
			if next++; next == route.w {
				next = 0
			}
			continue
		}
		sc.agg.add(k, mix64(k))
		w := route.home(k)
		out[i] = w
		sc.counts[w]++
	}
	return keyless
}

// nullMask tells which records have no key.
type nullMask interface{ IsNull(int) bool }

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

// countFloor: a key with less than threshold/countFloor of its batch's
// records is not added to the sketch. Its share of the load is a weighted
// average of its shares of the batches, so a key below that floor in every
// batch can never reach the threshold; a key below it in some batches is
// underestimated by at most a 16th of the threshold. It
// keeps the locked merge short: with 5,000 distinct keys in a batch of
// 5,000 none of them is counted, where the sketch would otherwise take
// 5,000 updates under the lock.
const countFloor = 16

// merge adds one batch to the statistics, updates the hot set, and plans
// the hot keys' records of the batch. It returns the hot set the plan is
// for, or nil when the batch has no records of hot keys.
func (t *skewTask) merge(sc *skewScratch, n int) *hotSet {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &t.st
	w := st.decay.weight
	// Keys below a quarter of the hot threshold cannot become hot soon;
	// keeping them out of the heavy table keeps its evictions rare.
	admit := t.cfg.threshold / 4 * (st.total + float64(n)*w)
	floor := uint32(math.Ceil(t.cfg.threshold / countFloor * float64(n)))
	for _, i := range sc.agg.used {
		if e := &sc.agg.slots[i]; e.n >= floor {
			st.sketch.add(e.key, float64(e.n)*w, admit)
		}
	}
	for j, c := range sc.counts {
		st.loads[j] += float64(c) * w
	}
	st.total += float64(n) * w
	st.seen += int64(n)
	t.refreshHot()

	hs := t.hotSet.Load()
	planned := false
	if hs != nil {
		sc.planAt = slices.Grow(sc.planAt[:0], len(hs.keys))[:len(hs.keys)]
		for h, hk := range hs.keys {
			sc.planAt[h] = -1
			m := sc.agg.count(hk.key, mix64(hk.key))
			if m == 0 {
				continue
			}
			// The records went to the key's home writer in the first
			// pass; take them back and share them out.
			st.loads[hk.writers[0]] -= float64(m) * w
			sc.planAt[h] = int32(len(sc.plan))
			sc.plan = t.waterfill(sc, hk.writers, int32(m), w)
			planned = true
		}
	}
	if f := st.decay.advance(n); f != 0 {
		st.sketch.scale(f)
		scaleAll(st.loads, f)
		st.total *= f
	}
	if !planned {
		return nil
	}
	return hs
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

// Load reports each writer's share of the recent records relative to a
// fair share (1.0 = even); see sdk.PartitionerWithLoad.
func (t *skewTask) Load() []float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return relativeLoads(t.st.loads, t.st.total)
}

func (t *skewTask) Close(context.Context) error {
	t.closed.Store(true)
	return nil
}

// hotKeys returns the current hot keys, for tests and status.
func (t *skewTask) hotKeys() []hotKey {
	if hs := t.hotSet.Load(); hs != nil {
		return hs.keys
	}
	return nil
}

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
