package partitioners

import (
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

// skewScratch is one call's working memory, pooled.
type skewScratch struct {
	counts []uint32 // per writer: records placed at their home, or keyless
	planAt []int32  // per hot key: its next run in plan, -1 if none
	plan   []planRun
	agg    aggTable
	order  []writerLoad
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

// Columns says Partition reads only the key spec's columns, as hash's (see
// sdk.PartitionerWithColumns).
func (t *skewTask) Columns() []string { return t.keys.columns() }

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
