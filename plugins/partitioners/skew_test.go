package partitioners

import (
	"context"
	"maps"
	"math/rand"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// zipfKeys draws n keys k0, k1, … with P(k_i) ∝ 1/(i+1)^s over 100,000
// keys.
func zipfKeys(seed int64, s float64, n int) []int {
	z := rand.NewZipf(rand.New(rand.NewSource(seed)), s, 1, 99_999)
	out := make([]int, n)
	for i := range out {
		out[i] = int(z.Uint64())
	}
	return out
}

// runKeys partitions keys in batches and returns the writers, in order.
func runKeys(t testing.TB, task interface {
	Partition(context.Context, sdkBatch) ([]uint32, error)
}, keys []int, batch int) []uint32 {
	var out []uint32
	for lo := 0; lo < len(keys); lo += batch {
		b := newBatch(t, keysOf(keys[lo:min(lo+batch, len(keys))]))
		w, err := task.Partition(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, w...)
	}
	return out
}

func loadOf(writers []uint32, w int) []int {
	counts := make([]int, w)
	for _, x := range writers {
		counts[x]++
	}
	return counts
}

// TestSkewZipf is the headline comparison: Zipf keys over 8 writers,
// 100,000 records in batches of 5,000. skew-aware must keep max/mean at or
// under 1.25 where hash is far above.
func TestSkewZipf(t *testing.T) {
	const writers, n, batch = 8, 100_000, 5000
	for _, s := range []float64{1.1, 1.2, 1.3, 1.5} {
		keys := zipfKeys(int64(s*100), s, n)
		hash := loadOf(runKeys(t, open(t, "hash", writers, nil), keys, batch), writers)
		skewOut := runKeys(t, open(t, "skew-aware", writers, nil), keys, batch)
		skew := loadOf(skewOut, writers)
		rr := loadOf(runKeys(t, open(t, "roundrobin", writers, nil), keys, batch), writers)
		t.Logf("zipf s=%.1f: max/mean hash %.2f  skew-aware %.2f  roundrobin %.2f   (skew-aware per writer %v)",
			s, maxOverMean(hash), maxOverMean(skew), maxOverMean(rr), skew)
		if mm := maxOverMean(skew); mm > 1.25 {
			t.Errorf("s=%.1f: skew-aware max/mean %.2f > 1.25 (%v)", s, mm, skew)
		}
		if maxOverMean(hash) < 1.5 {
			t.Errorf("s=%.1f: hash max/mean only %.2f; the test data is not skewed", s, maxOverMean(hash))
		}
	}
}

// keyHash is the key the partitioners compute for record key k<id>.
func keyHash(id int) uint64 { return hashBytes(keysOf([]int{id})[0]) }

// TestSkewColdKeysSticky: a key too light to ever be hot always goes to
// one writer, the one hash picks; the hottest key uses several writers,
// all of them among its candidates.
func TestSkewColdKeysSticky(t *testing.T) {
	const writers = 8
	keys := zipfKeys(42, 1.2, 100_000)
	task := open(t, "skew-aware", writers, nil)
	got := runKeys(t, task, keys, 5000)
	hash := runKeys(t, open(t, "hash", writers, nil), keys, 5000)

	writersOf := map[int]map[uint32]bool{}
	for i, k := range keys {
		if writersOf[k] == nil {
			writersOf[k] = map[uint32]bool{}
		}
		writersOf[k][got[i]] = true
		// Keys past rank 20 hold under 1% of the load each, far below
		// the 1/16 threshold.
		if k >= 20 && got[i] != hash[i] {
			t.Fatalf("cold key k%d went to writer %d, hash sends it to %d", k, got[i], hash[i])
		}
	}
	cold := 0
	for k, ws := range writersOf {
		if k >= 20 {
			cold++
			if len(ws) != 1 {
				t.Fatalf("cold key k%d used writers %v", k, ws)
			}
		}
	}
	if cold < 1000 {
		t.Fatalf("only %d cold keys", cold)
	}

	hot := task.(*skewTask).hotKeys()
	if len(hot) == 0 || hot[0].key != keyHash(0) && (len(hot) < 2 || hot[1].key != keyHash(0)) {
		t.Fatalf("k0 is not hot: %+v", hot)
	}
	var k0 hotKey
	for _, h := range hot {
		if h.key == keyHash(0) {
			k0 = h
		}
	}
	if len(writersOf[0]) < 2 {
		t.Fatalf("hot key k0 (share %.2f) used only writers %v", k0.share, writersOf[0])
	}
	for w := range writersOf[0] {
		if !slices.Contains(k0.writers, w) {
			t.Errorf("hot key k0 went to writer %d, not among its candidates %v", w, k0.writers)
		}
	}
	t.Logf("k0: share %.3f, candidates %v, used %d writers", k0.share, k0.writers, len(writersOf[0]))
}

// TestSkewHotSetFollowsLoad: when the hot key changes, the old one cools
// down within a few half-lives and the new one turns hot.
func TestSkewHotSetFollowsLoad(t *testing.T) {
	const writers = 8
	task := open(t, "skew-aware", writers, map[string]string{keySkewDecay: "20000"})
	st := task.(*skewTask)
	phase := func(hotID, n int, seed uint64) []uint32 {
		r := rand.New(rand.NewSource(int64(seed)))
		keys := make([]int, n)
		for i := range keys {
			if r.Float64() < 0.4 {
				keys[i] = hotID
			} else {
				keys[i] = 1000 + r.Intn(50_000)
			}
		}
		out := runKeys(t, task, keys, 2000)
		used := map[uint32]bool{}
		for i, k := range keys {
			if k == hotID {
				used[out[i]] = true
			}
		}
		return slices.Sorted(maps.Keys(used))
	}
	isHot := func(id int) bool {
		for _, h := range st.hotKeys() {
			if h.key == keyHash(id) {
				return true
			}
		}
		return false
	}

	usedA := phase(1, 60_000, 1)
	if !isHot(1) || len(usedA) < 2 {
		t.Fatalf("phase 1: k1 hot %v, used writers %v", isHot(1), usedA)
	}
	usedB := phase(2, 100_000, 2) // five half-lives
	if isHot(1) {
		t.Errorf("phase 2: k1 still hot after it stopped arriving")
	}
	if !isHot(2) || len(usedB) < 2 {
		t.Errorf("phase 2: k2 hot %v, used writers %v", isHot(2), usedB)
	}
	t.Logf("phase 1: k1 on writers %v; phase 2: k2 on writers %v, hot set %d keys", usedA, usedB, len(st.hotKeys()))
}

// TestSkewPartitionSpec: with day(ts) partitioning and most rows today,
// today's partition spreads over the writers while every older day's rows
// stay on one writer, the one hash picks.
func TestSkewPartitionSpec(t *testing.T) {
	const writers = 8
	cfg := map[string]string{keyDefaultPartitionBy: "day(ts)"}
	skew := open(t, "skew-aware", writers, cfg)
	hash := open(t, "hash", writers, cfg)
	r := rand.New(rand.NewSource(3))
	today := int64(20_000) * day
	byDay := map[int64]map[uint32]bool{}
	counts := make([]int, writers)
	for range 20 {
		ts := make([]int64, 5000)
		for i := range ts {
			if r.Float64() < 0.9 {
				ts[i] = today + r.Int63n(day)
			} else {
				ts[i] = today - (1+r.Int63n(30))*day + r.Int63n(day)
			}
		}
		b := newBatch(t, nil, timestampCol("ts", arrow.Millisecond, ts))
		got, want := partition(t, skew, b), partition(t, hash, b)
		for i, x := range ts {
			d := floorDiv(x, day)
			if byDay[d] == nil {
				byDay[d] = map[uint32]bool{}
			}
			byDay[d][got[i]] = true
			counts[got[i]]++
			if d != floorDiv(today, day) && got[i] != want[i] {
				t.Fatalf("cold day %d went to writer %d, hash sends it to %d", d, got[i], want[i])
			}
		}
	}
	for d, ws := range byDay {
		if d != floorDiv(today, day) && len(ws) != 1 {
			t.Errorf("cold day %d on writers %v", d, ws)
		}
	}
	if n := len(byDay[floorDiv(today, day)]); n != writers {
		t.Errorf("today (90%% of rows) spread over %d writers, want all %d", n, writers)
	}
	t.Logf("day(ts), 90%% today: skew-aware max/mean %.2f %v", maxOverMean(counts), counts)
	if mm := maxOverMean(counts); mm > 1.25 {
		t.Errorf("max/mean %.2f", mm)
	}
}

func TestCandidates(t *testing.T) {
	r := router{w: 12, mod: newModulus(12)}
	for key := uint64(0); key < 200; key++ {
		var prev []uint32
		for n := 1; n <= 12; n++ {
			c := candidates(r, key, make([]uint32, n))
			if c[0] != r.home(key) {
				t.Fatalf("key %d: first candidate %d, home %d", key, c[0], r.home(key))
			}
			if !slices.Equal(c[:len(prev)], prev) {
				t.Fatalf("key %d: candidates for %d writers %v do not extend those for %d: %v", key, n, c, n-1, prev)
			}
			if s := slices.Compact(slices.Sorted(slices.Values(c))); len(s) != n {
				t.Fatalf("key %d: repeated candidates %v", key, c)
			}
			if again := candidates(r, key, make([]uint32, n)); !slices.Equal(c, again) {
				t.Fatalf("key %d: candidates not deterministic", key)
			}
			prev = c
		}
	}
	// Neighbouring homes do not share their second choice the way
	// hash+i would make them.
	same := 0
	for key := uint64(0); key < 1000; key++ {
		c := candidates(r, key, make([]uint32, 2))
		if c[1] == (c[0]+1)%12 {
			same++
		}
	}
	if same > 200 {
		t.Errorf("%d/1000 keys chose home+1 second; the order is not key-specific", same)
	}
}

func TestWaterfill(t *testing.T) {
	task := &skewTask{st: skewState{loads: []float64{10, 0, 5, 100}}}
	sc := &skewScratch{}
	plan := task.waterfill(sc, []uint32{0, 1, 2}, 12, 1)
	got := map[uint32]int32{}
	for _, p := range plan {
		got[p.writer] += p.n
	}
	if got[1] != 9 || got[2] != 3 || got[0] != 0 {
		t.Fatalf("plan %v, want 9 to writer 1 and 3 to writer 2", plan)
	}
	if l := task.st.loads; l[0] != 10 || l[1] != 9 || l[2] != 8 || l[3] != 100 {
		t.Fatalf("loads after %v", l)
	}
	// A large demand lifts all candidates to one level.
	sc.plan = nil
	task.waterfill(sc, []uint32{0, 1, 2}, 300, 1)
	l := task.st.loads
	if max(l[0], l[1], l[2])-min(l[0], l[1], l[2]) > 1 {
		t.Fatalf("uneven after a large demand: %v", l)
	}
}

// TestSkewConcurrent runs Partition from 8 goroutines at once (run with
// -race): every record gets a writer in range, the load report adds up,
// and the spread still works.
func TestSkewConcurrent(t *testing.T) {
	const writers, goroutines = 8, 8
	task := open(t, "skew-aware", writers, nil)
	var mu sync.Mutex
	counts := make([]int, writers)
	var wg sync.WaitGroup
	for g := range goroutines {
		keys := zipfKeys(int64(g), 1.3, 25_000)
		batches := make([]sdkBatch, 0, 5)
		for lo := 0; lo < len(keys); lo += 5000 {
			batches = append(batches, newBatch(t, keysOf(keys[lo:lo+5000])))
		}
		wg.Go(func() {
			local := make([]int, writers)
			for _, b := range batches {
				out, err := task.Partition(context.Background(), b)
				if err != nil {
					t.Error(err)
					return
				}
				for _, w := range out {
					if w >= writers {
						t.Errorf("writer %d out of range", w)
						return
					}
					local[w]++
				}
			}
			mu.Lock()
			for i, c := range local {
				counts[i] += c
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	load := task.(*skewTask).Load()
	sum := 0.0
	for _, l := range load {
		sum += l
	}
	if len(load) != writers || sum < writers-0.01 || sum > writers+0.01 {
		t.Errorf("Load %v does not average 1", load)
	}
	t.Logf("8 goroutines, zipf 1.3: max/mean %.2f %v", maxOverMean(counts), counts)
	if mm := maxOverMean(counts); mm > 1.3 {
		t.Errorf("max/mean %.2f under concurrency", mm)
	}
}

func TestSkewNullKeys(t *testing.T) {
	task := open(t, "skew-aware", 4, nil)
	keys := make([][]byte, 400)
	for i := range keys {
		if i%2 == 0 {
			keys[i] = []byte("k")
		}
	}
	out := partition(t, task, newBatch(t, keys))
	nulls := make([]int, 4)
	for i, w := range out {
		if keys[i] == nil {
			nulls[w]++
		}
	}
	if slices.Min(nulls) != 50 || slices.Max(nulls) != 50 {
		t.Errorf("null keys per writer %v, want 50 each", nulls)
	}
	out = partition(t, task, newBatch(t, nil, int64Col("id", make([]int64, 400))))
	if mm := maxOverMean(loadOf(out, 4)); mm != 1 {
		t.Errorf("batch without keys: max/mean %.2f", mm)
	}
}
