package maintenance

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

// simFile is a data file of the simulation: its bytes and its row
// groups' sizes, in file order.
type simFile struct {
	size      int64
	rowGroups []int64
}

// simStats is what a simulation measured.
type simStats struct {
	// added are the bytes appended; decoded those compaction rewrote
	// (decoded and encoded again); copied those it copied as row groups.
	added, decoded, copied int64
	// maxFiles and maxSmall are the most files and small files of a hot
	// partition right before a compaction; meanFiles their mean.
	maxFiles, maxSmall int
	meanFiles          float64
	// files and rowGroups are each partition's at the end, small and
	// smallRowGroups those of its files under the done size.
	files, rowGroups, small, smallRowGroups []int
}

// decodedPerByte and copiedPerByte are how often compaction decoded and
// copied each appended byte.
func (st simStats) decodedPerByte() float64 { return float64(st.decoded) / float64(st.added) }
func (st simStats) copiedPerByte() float64  { return float64(st.copied) / float64(st.added) }

// simulate models the plugin's runs on one table without their timing:
// each step (a commit) appends one file of size small, of one row group,
// to each partition hot(step, p) says gets data; every `every` steps
// (a run) each partition is planned with sel as sel.plan does (the
// strategy's pick; a full bin-pack for a partition that got nothing for
// idle steps, when idle > 0 and it holds min-input-files small files),
// and each group is executed at once as rewriteGroup does: sel.copies
// decides which files' row groups are copied, the rest are decoded into
// one row group, and a group that copies nothing is written out in files
// of the target size.
func simulate(sel selection, parts, steps, every int, small int64, hot func(step, part int) bool, idle int) simStats {
	files := make([][]simFile, parts)
	last := make([]int, parts) // the step that last gave each partition data
	var st simStats
	var before, runs int
	for step := 1; step <= steps; step++ {
		for p := range parts {
			if hot(step, p) {
				files[p] = append(files[p], simFile{size: small, rowGroups: []int64{small}})
				st.added += small
				last[p] = step
			}
		}
		if step%every != 0 {
			continue
		}
		for p := range parts {
			var cands, rest []simFile
			for _, f := range files[p] {
				if f.size < sel.done {
					cands = append(cands, f)
				} else {
					rest = append(rest, f)
				}
			}
			if last[p] == step {
				st.maxFiles = max(st.maxFiles, len(files[p]))
				st.maxSmall = max(st.maxSmall, len(cands))
				before += len(files[p])
				runs++
			}
			slices.SortStableFunc(cands, func(a, b simFile) int { return cmp.Compare(a.size, b.size) })
			sizes := make([]int64, len(cands))
			for i, f := range cands {
				sizes[i] = f.size
			}
			full := idle > 0 && step-last[p] >= idle && len(cands) >= max(sel.minInput, 2)
			var groups [][]simFile
			taken := make([]bool, len(cands))
			take := func(idx ...int) {
				var g []simFile
				for _, i := range idx {
					g = append(g, cands[i])
					taken[i] = true
				}
				groups = append(groups, g)
			}
			switch {
			case full || sel.strategy == strategyBinPack:
				for _, r := range sel.binPackTake(sizes) {
					var idx []int
					for i := r[0]; i < r[1]; i++ {
						idx = append(idx, i)
					}
					take(idx...)
				}
			case sel.strategy == strategyHead:
				if n, withHead := sel.headTake(sizes); n > 0 {
					idx := make([]int, 0, n+1)
					for i := range n {
						idx = append(idx, i)
					}
					if withHead {
						idx = append(idx, len(cands)-1)
					}
					take(idx...)
				}
			default:
				if n := sel.tieredTake(sizes); n > 0 {
					idx := make([]int, n)
					for i := range n {
						idx[i] = i
					}
					take(idx...)
				}
			}
			for i, f := range cands {
				if !taken[i] {
					rest = append(rest, f)
				}
			}
			for _, g := range groups {
				rest = append(rest, st.execute(sel, g, full)...)
			}
			files[p] = rest
		}
	}
	if runs > 0 {
		st.meanFiles = float64(before) / float64(runs)
	}
	for p := range parts {
		rg, small, smallRG := 0, 0, 0
		for _, f := range files[p] {
			rg += len(f.rowGroups)
			if f.size < sel.done {
				small++
				smallRG += len(f.rowGroups)
			}
		}
		st.files = append(st.files, len(files[p]))
		st.rowGroups = append(st.rowGroups, rg)
		st.small = append(st.small, small)
		st.smallRowGroups = append(st.smallRowGroups, smallRG)
	}
	return st
}

// execute is rewriteGroup on the simulation's files: it returns the
// group's output files.
func (st *simStats) execute(sel selection, g []simFile, full bool) []simFile {
	var total int64
	facts := make([]fileFacts, len(g))
	for i, f := range g {
		total += f.size
		facts[i] = fileFacts{size: f.size, rowGroups: f.rowGroups, eligible: !full}
	}
	keep := sel.copyPlan(total, facts)
	type copied struct{ rowGroups []int64 }
	var kept []copied
	var decoded int64
	for i, f := range g {
		kept = append(kept, copied{f.rowGroups[:keep[i]]})
		for _, size := range f.rowGroups[keep[i]:] {
			decoded += size
		}
	}
	st.decoded += decoded
	if decoded == total {
		// Nothing copied: the writer rolls files at the target size.
		var out []simFile
		for ; total > sel.target; total -= sel.target {
			out = append(out, simFile{size: sel.target, rowGroups: []int64{sel.target}})
		}
		return append(out, simFile{size: total, rowGroups: []int64{total}})
	}
	// Copied row groups first, the biggest file's first; the rewritten
	// ones after them in one row group.
	slices.SortStableFunc(kept, func(a, b copied) int { return cmp.Compare(len(b.rowGroups), len(a.rowGroups)) })
	joined := simFile{size: total}
	for _, c := range kept {
		for _, size := range c.rowGroups {
			st.copied += size
			joined.rowGroups = append(joined.rowGroups, size)
		}
	}
	if decoded > 0 {
		joined.rowGroups = append(joined.rowGroups, decoded)
	}
	return []simFile{joined}
}

// always is a partition that gets a file every step.
func always(int, int) bool { return true }

// TestTieredRewritesEachByteLogTimes: a partition gaining a small file
// every second and compacted every 2 s. The tiered strategy rewrites each
// byte O(log(target/small)) times, however long the stream runs, and
// keeps the partition's small files few. Bin-pack rewrites every small
// file each run until it reaches the done size: each byte O(target/small)
// times, quadratic work while files stay small.
func TestTieredRewritesEachByteLogTimes(t *testing.T) {
	const small = 170 << 10 // the bench's files
	var tieredAmp, binPackAmp float64
	for _, target := range []int64{8 << 20, 32 << 20, 128 << 20} {
		tiered := selection{strategy: strategyTiered, target: target, done: smallFileLimit(target), ratio: 2, minInput: 5}
		bound := math.Log(float64(target)/small) / math.Log(1+1/tiered.ratio) // rewrites of a byte at most
		for _, steps := range []int{200, 2000, 20000} {
			st := simulate(tiered, 1, steps, 2, small, always, 0)
			amp, maxSmall := st.decodedPerByte(), st.maxSmall
			t.Logf("tiered, target %s, %d appends: each byte rewritten %.1f times (bound %.1f), at most %d small files", bytesIEC(target), steps, amp, bound, maxSmall)
			if amp > bound {
				t.Errorf("tiered, target %s, %d appends: each byte rewritten %.1f times; want at most log(target/small)/log(1+1/ratio) = %.1f", bytesIEC(target), steps, amp, bound)
			}
			// Fewer than min-input-files waiting, the files of one
			// interval, and one file per tier (each tier's bytes more
			// than 1+ratio times the tiers below).
			most := tiered.minInput - 1 + 2 + int(math.Ceil(math.Log(float64(tiered.done)/small)/math.Log(1+tiered.ratio)))
			if maxSmall > most {
				t.Errorf("tiered, target %s, %d appends: a partition held %d small files before a compaction; want at most %d", bytesIEC(target), steps, maxSmall, most)
			}
			tieredAmp = amp
		}
		binPack := tiered
		binPack.strategy = strategyBinPack
		binPackAmp = simulate(binPack, 1, 20000, 2, small, always, 0).decodedPerByte()
		t.Logf("bin-pack, target %s: each byte rewritten %.1f times", bytesIEC(target), binPackAmp)
	}
	if binPackAmp < 10*tieredAmp {
		t.Errorf("at 128 MiB bin-pack rewrote each byte %.1f times, tiered %.1f: the simulation no longer shows the work the tiered strategy saves", binPackAmp, tieredAmp)
	}
}

func TestTieredTake(t *testing.T) {
	sel := selection{strategy: strategyTiered, target: 1000, done: 750, ratio: 2, minInput: 3}
	for _, c := range []struct {
		sizes []int64
		want  int
	}{
		{[]int64{10, 10}, 0},                  // too few
		{[]int64{10, 10, 10}, 3},              // all alike
		{[]int64{10, 10, 100, 100}, 0},        // 100 > 2 × 20: only two
		{[]int64{10, 10, 30, 200}, 3},         // 30 ≤ 40; 200 > 100
		{[]int64{10, 20, 60, 180, 500}, 5},    // each ≤ 2 × the sum below it; 770 ≤ target
		{[]int64{300, 300, 400, 500, 600}, 3}, // 300+300+400 = target; 500 more is past it
		{[]int64{100, 100, 100, 300, 740}, 4}, // 740 ≤ 2 × 600, but 1340 > target
	} {
		if got := sel.tieredTake(c.sizes); got != c.want {
			t.Errorf("tieredTake(%v) = %d; want %d", c.sizes, got, c.want)
		}
	}
}

// TestQuickTakesTheSmallTiers: a re-plan's selection stops its tiered
// pick at 1/16 of the target, so it merges the newest files and the small
// tiers, never a big tier merge of its own.
func TestQuickTakesTheSmallTiers(t *testing.T) {
	sel := selection{strategy: strategyTiered, target: 1600, done: 1200, ratio: 2, minInput: 3}
	sizes := []int64{10, 10, 10, 30, 80, 250} // the full pick takes all: 390 ≤ 1600
	if got := sel.tieredTake(sizes); got != 6 {
		t.Fatalf("full pick takes %d; want 6", got)
	}
	if got := sel.quick().tieredTake(sizes); got != 4 { // 60 ≤ 100; 140 is past it
		t.Fatalf("quick pick takes %d; want 4", got)
	}
	if q := sel.quick(); q.done != sel.done || q.minInput != sel.minInput {
		t.Fatalf("quick changed more than the target: %+v", q)
	}
}

// TestTieredCompactionStreaming: 200 floe commits to 2 partitions, a
// maintenance cycle after every second one with the default (tiered)
// strategy. Each partition keeps few files all along, the rows are the
// same, and the bytes compaction rewrote (summed from the replace
// snapshots) stay a small multiple of the bytes appended: O(n log n)
// work, not the O(n²) of rewriting every small file each time.
func TestTieredCompactionStreaming(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	const rowsPer, parts = 100, 2
	commits := 200
	if raceDetector {
		commits = 40 // a compaction is several times slower under -race
	}
	n := fill(t, w, 1, rowsPer, parts)
	first := shape(t, cat, "db.events")
	small := first.DataBytes / first.DataFiles
	// A target of about 150 appended files: a partition of 200 files'
	// rows ends with a done file and its tiers. Rewriting every small file
	// each run (bin-pack) would rewrite each byte about 28 times here.
	target := max(150*small, 1<<10)
	tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		keyStrategy, strategyTiered,
		"maintenance.rewrite-data-files.target-file-size-bytes", strconv.FormatInt(target, 10),
		"maintenance.rewrite-data-files.min-interval.ms", "0",
		"maintenance.rewrite-data-files.trigger.small-file-count", "1")...))
	var maxFiles, maxSmall int64
	runs := 0
	for i := 1; i < commits; i++ {
		if err := w.commit(context.Background(), rowsFor(n, rowsPer, parts)); err != nil {
			t.Fatal(err)
		}
		n += rowsPer
		if i%2 == 0 {
			sh := shapeWith(t, cat, target)
			maxFiles = max(maxFiles, sh.MaxPartitionFiles)
			maxSmall = max(maxSmall, sh.MaxPartitionSmallFiles)
			runs += len(runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData))
		}
	}
	tbl := loadTable(t, cat, "db.events")
	var appended, rewritten int64
	replaces := 0
	for _, s := range tbl.Metadata().Snapshots() {
		switch s.Summary.Operation {
		case table.OpAppend:
			appended += summaryInt(s.Summary.Properties, "added-files-size")
		case table.OpReplace:
			replaces++
			rewritten += summaryInt(s.Summary.Properties, "removed-files-size")
		}
	}
	amp := float64(rewritten) / float64(appended)
	bound := math.Log(float64(target)/float64(small)) / math.Log(1.5)
	final := shapeWith(t, cat, target)
	t.Logf("file of one append %s, target %s; %d runs, %d replace commits; each appended byte rewritten %.2f times (bound %.1f); "+
		"fullest partition at most %d files (%d small) before a run, %d at the end",
		bytesIEC(small), bytesIEC(target), runs, replaces, amp, bound, maxFiles, maxSmall, final.MaxPartitionFiles)
	if replaces < commits/20 {
		t.Errorf("only %d compaction commits over %d cycles", replaces, commits/2)
	}
	if maxSmall > 10 || final.MaxPartitionFiles > 12 {
		t.Errorf("a partition held %d small files before a run and %d files at the end; want at most 10 small and 12 in all", maxSmall, final.MaxPartitionFiles)
	}
	if amp > bound {
		t.Errorf("each appended byte was rewritten %.2f times; want at most %.1f (log(target/small)/log(1.5)): compaction rewrites its own output too often", amp, bound)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
}

// shapeWith measures the table with small files counted against target.
func shapeWith(t testing.TB, cat catalog.Catalog, target int64) TableChange {
	t.Helper()
	ch, err := newMonitor().observe(context.Background(), cat, settings{targetFileSize: target}, "db.events", false)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestBudgetTakesSmallestGroups: a run within max-bytes-per-run takes the
// smallest groups first, always at least one; a group that no longer fits
// is cut to its smallest files that do, when they are enough to rewrite,
// and left whole otherwise.
func TestBudgetTakesSmallestGroups(t *testing.T) {
	group := func(key string, sizes ...int64) table.CompactionTaskGroup {
		g := table.CompactionTaskGroup{PartitionKey: key}
		for i, size := range sizes {
			b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, fmt.Sprintf("%s-%d.parquet", key, i), iceberg.ParquetFile, nil, nil, nil, 1, size)
			if err != nil {
				t.Fatal(err)
			}
			g.Tasks = append(g.Tasks, table.FileScanTask{File: b.Build()})
			g.TotalSizeBytes += size
		}
		return g
	}
	summary := func(kept []table.CompactionTaskGroup) []string {
		var out []string
		for _, g := range kept {
			out = append(out, fmt.Sprintf("%s:%d/%d", g.PartitionKey, len(g.Tasks), g.TotalSizeBytes))
		}
		return out
	}
	sel := selection{budget: 100, minInput: 2}
	// b (10) and d (30) fit; c (40) is cut to 5+5+20 within the 60 left;
	// a's smallest file alone (35) would fit the 30 left, but one file is
	// not a rewrite: a is left whole.
	kept, put := sel.withinBudget([]table.CompactionTaskGroup{group("a", 35, 55), group("b", 5, 5), group("c", 5, 5, 20, 40), group("d", 10, 20)})
	if got, want := summary(kept), []string{"b:2/10", "d:2/30", "c:3/30"}; !slices.Equal(got, want) || put != (deferred{left: 1, cut: 1, bytes: 90 + 40}) {
		t.Fatalf("kept %v, put off %+v; want %v, a left whole and c cut (130 bytes put off)", got, put, want)
	}
	if d := put.String(); !strings.Contains(d, "1 cut to their smallest files, 1 left whole") {
		t.Errorf("detail %q", d)
	}
	kept, put = sel.withinBudget([]table.CompactionTaskGroup{group("big", 250, 250), group("bigger", 300, 400)})
	if got := summary(kept); !slices.Equal(got, []string{"big:2/500"}) || put.left != 1 {
		t.Fatalf("over budget: kept %v, put off %+v; want the smallest alone", got, put)
	}
	// A budget under twice the target is raised to it; a forced run has none.
	if got := selectionFor(settings{maxRunBytes: 100}, 1000, false).budget; got != 2000 {
		t.Fatalf("budget 100 with a 1000-byte target = %d; want 2000", got)
	}
	if got := selectionFor(settings{maxRunBytes: 100}, 1000, true).budget; got != 0 {
		t.Fatalf("forced run's budget = %d; want none", got)
	}
	kept, put = selection{}.withinBudget([]table.CompactionTaskGroup{group("a", 1<<40), group("b", 1<<40)})
	if len(kept) != 2 || put != (deferred{}) || put.String() != "" {
		t.Fatalf("no budget: kept %d, put off %+v", len(kept), put)
	}
	// With the head strategy an append weighs what it decodes: the head
	// (copied) does not count, so appends to big heads are not cut.
	head := selection{strategy: strategyHead, budget: 150, minInput: 2, copyMin: 50}
	kept, put = head.withinBudget([]table.CompactionTaskGroup{group("a", 20, 30, 400), group("b", 30, 30, 600), group("c", 10, 20)})
	if got := summary(kept); !slices.Equal(got, []string{"c:2/30", "a:3/450", "b:3/660"}) || put != (deferred{}) {
		t.Fatalf("head appends: kept %v, put off %+v; want all three (costs 30, 50, 60)", got, put)
	}
	kept, put = head.withinBudget([]table.CompactionTaskGroup{group("a", 40, 45, 400), group("b", 40, 50, 600)})
	if got := summary(kept); !slices.Equal(got, []string{"a:3/485"}) || put.left != 1 {
		t.Fatalf("over budget: kept %v, put off %+v; want a (cost 85) and b (90) left whole", got, put)
	}
}

// benchSelection is a selection with the plugin's defaults for a 128 MiB
// target.
func benchSelection(t testing.TB, strategy string) selection {
	t.Helper()
	s, err := parseSettings("orders", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", keyStrategy: strategy}))
	if err != nil {
		t.Fatal(err)
	}
	return selectionFor(s, 128<<20, false)
}

// TestHeadTake: the head strategy's pick on sizes sorted ascending.
func TestHeadTake(t *testing.T) {
	sel := selection{strategy: strategyHead, target: 1000, done: 750, copyMin: 100, minInput: 2}
	for _, c := range []struct {
		sizes    []int64
		n        int
		withHead bool
	}{
		{nil, 0, false},
		{[]int64{10}, 0, false},
		{[]int64{10, 10}, 2, false},                 // the newest files into a tail
		{[]int64{10, 20, 30}, 3, false},             // no head yet: all into one
		{[]int64{10, 20, 150}, 2, false},            // 30 < copyMin: the tail grows
		{[]int64{50, 60, 150}, 2, true},             // 110 ≥ copyMin: appended to the head
		{[]int64{30, 150, 400}, 2, true},            // a second head joins the first
		{[]int64{50, 60, 900}, 2, false},            // only 50 fits beside the head: the tail grows
		{[]int64{60, 120, 900}, 2, false},           // no room beside the head: a second head
		{[]int64{10, 20, 30, 40, 900}, 4, true},     // exactly the room, and copyMin
		{[]int64{10, 20, 30, 40, 50, 890}, 4, true}, // those that fit go; 50 waits
		{[]int64{400, 500, 600}, 1, true},           // never past the target
	} {
		n, withHead := sel.headTake(c.sizes)
		if n != c.n || withHead != c.withHead {
			t.Errorf("headTake(%v) = %d, %v; want %d, %v", c.sizes, n, withHead, c.n, c.withHead)
		}
	}
}

// TestCopyPlan: how many leading row groups of each file a group copies.
func TestCopyPlan(t *testing.T) {
	head := selection{strategy: strategyHead, target: 1000, done: 750, copyMin: 100, copyMax: 4, tailMax: 4}
	tiered := head
	tiered.strategy = strategyTiered
	off := head
	off.copyMin = 0
	f := func(rowGroups ...int64) fileFacts {
		ff := fileFacts{rowGroups: rowGroups, eligible: true}
		for _, size := range rowGroups {
			ff.size += size
		}
		return ff
	}
	dirty := f(30)
	dirty.eligible = false
	for _, c := range []struct {
		why   string
		sel   selection
		files []fileFacts
		want  []int
	}{
		{"a tail merge copies the tail and rewrites the newest files", head, []fileFacts{f(10), f(10), f(20, 20)}, []int{0, 0, 2}},
		{"a tail at tail-max-row-groups keeps its leading row groups bigger than the rest", head, []fileFacts{f(2), f(2), f(30, 8, 4, 4)}, []int{0, 0, 1}},
		{"and as few as fit", head, []fileFacts{f(2), f(30, 20, 10, 4)}, []int{0, 3}},
		{"the biggest eligible file is the tail", head, []fileFacts{f(10), f(20), dirty}, []int{0, 1, 0}},
		{"a head append copies the head", head, []fileFacts{f(30), f(40), f(100, 60, 40)}, []int{0, 0, 3}},
		{"a head at copy-row-groups.max-row-groups rewrites its small trailing row groups", head, []fileFacts{f(50), f(60), f(300, 100, 40, 30)}, []int{0, 0, 1}},
		{"two heads: the biggest is copied", head, []fileFacts{f(30), f(150), f(400)}, []int{0, 0, 1}},
		{"a head that becomes a finished file keeps its row groups", head, []fileFacts{f(100), f(300, 200, 200)}, []int{0, 3}},
		{"tiered rewrites a finished file whole", tiered, []fileFacts{f(100), f(300, 200, 200)}, []int{0, 0}},
		{"one file alone is not copied", head, []fileFacts{f(40)}, []int{0}},
		{"tiered copies whole files of copyMin", tiered, []fileFacts{f(10), f(10), f(200)}, []int{0, 0, 1}},
		{"tiered rewrites a file with copy-row-groups.max-row-groups whole", tiered, []fileFacts{f(10), f(10), f(50, 50, 50, 50)}, []int{0, 0, 0}},
		{"copying off", off, []fileFacts{f(10), f(10), f(200)}, []int{0, 0, 0}},
	} {
		var total int64
		for _, ff := range c.files {
			total += ff.size
		}
		if got := c.sel.copyPlan(total, c.files); !slices.Equal(got, c.want) {
			t.Errorf("%s: copyPlan(%v) = %v; want %v", c.why, c.files, got, c.want)
		}
	}
	// leading: the trailing row groups no bigger than the bytes taken.
	for _, c := range []struct {
		rowGroups []int64
		added     int64
		most      int
		want      int
	}{
		{[]int64{40, 30}, 5, 4, 2},           // room left: all copied
		{[]int64{40, 30, 20, 10}, 5, 4, 3},   // 10 must go; 20 > 15 stays
		{[]int64{100, 30, 20, 10}, 15, 4, 1}, // 10 must go; then 20 ≤ 25, 30 ≤ 45; 100 > 75 stays
		{[]int64{8, 8, 8, 8}, 8, 4, 0},       // equal tiers all go: one row group
		{[]int64{100}, 5, 0, 1},              // no limit
	} {
		if got := leading(c.rowGroups, c.added, c.most); got != c.want {
			t.Errorf("leading(%v, %d, %d) = %d; want %d", c.rowGroups, c.added, c.most, got, c.want)
		}
	}
}

// TestHeadKeepsFewFiles simulates the bench's partitions (a 170 KiB file
// a second, runs every 2 s, 15 minutes, the plugin's defaults) under the
// head strategy and under the tiered one with its former defaults
// (min-input-files 3, copy-row-groups.max-row-groups 4). The head
// strategy must keep a partition at its finished files, a head, a tail
// and the newest files, decode fewer bytes than tiered (the CPU), copy
// each byte about as often as a head and a tail take (target / (2 × head
// size) appends, copyMin / (2 s × 170 KiB) tail merges), and leave few
// row groups.
func TestHeadKeepsFewFiles(t *testing.T) {
	const small, every, steps = 170 << 10, 2, 900
	head := benchSelection(t, strategyHead)
	tiered := benchSelection(t, strategyTiered)
	tiered.minInput, tiered.copyMax = 3, 4
	hs := simulate(head, 1, steps, every, small, always, 0)
	ts := simulate(tiered, 1, steps, every, small, always, 0)
	for name, st := range map[string]simStats{"head": hs, "tiered": ts} {
		t.Logf("%s: before a run at most %d files (mean %.1f); each byte decoded %.2f times, copied %.2f times; at the end %d files, %d row groups",
			name, st.maxFiles, st.meanFiles, st.decodedPerByte(), st.copiedPerByte(), st.files[0], st.rowGroups[0])
	}
	finished := int(hs.added / head.done)
	if most := finished + 2 + every; hs.maxFiles > most {
		t.Errorf("head: a partition held %d files before a run; want at most %d (%d finished, a head, a tail, %d new)", hs.maxFiles, most, finished, every)
	}
	if hs.maxFiles >= ts.maxFiles || hs.meanFiles >= ts.meanFiles {
		t.Errorf("head: at most %d files (mean %.1f) before a run, tiered %d (%.1f): the head strategy should keep fewer", hs.maxFiles, hs.meanFiles, ts.maxFiles, ts.meanFiles)
	}
	if hs.decoded >= ts.decoded {
		t.Errorf("head decoded each byte %.2f times, tiered %.2f: the head strategy should decode less", hs.decodedPerByte(), ts.decodedPerByte())
	}
	if bound := float64(head.done)/float64(2*head.copyMin) + float64(head.copyMin)/float64(every*small); hs.copiedPerByte() > bound {
		t.Errorf("head copied each byte %.2f times; want at most %.1f (the head's and the tail's copies)", hs.copiedPerByte(), bound)
	}
	if most := (finished+1)*head.copyMax + head.tailMax; hs.rowGroups[0] > most {
		t.Errorf("head left %d row groups; want at most %d (copy-row-groups.max-row-groups in each finished file and the head, tail-max-row-groups in the tail)", hs.rowGroups[0], most)
	}
}

// TestIdlePartitionsSettle simulates a time-partitioned table under the
// head strategy: six "hours" of 300 commits each, each hour's files in
// its own partition, a run every 2 commits, idle after 60 commits. Each
// closed hour must end as a full compaction leaves it: finished files
// and at most one small file of one row group; the open hour as a hot
// partition.
func TestIdlePartitionsSettle(t *testing.T) {
	const small, every, hour, hours, idle = 170 << 10, 2, 300, 6, 60
	sel := benchSelection(t, strategyHead)
	sel.target, sel.done = 16<<20, smallFileLimit(16<<20) // several finished files an hour
	current := func(step, p int) bool { return (step-1)/hour == p }
	st := simulate(sel, hours, hours*hour, every, small, current, idle)
	t.Logf("files per hour %v, row groups %v; each byte decoded %.2f times, copied %.2f times; a hot partition held at most %d files before a run",
		st.files, st.rowGroups, st.decodedPerByte(), st.copiedPerByte(), st.maxFiles)
	perHour := int64(hour) * small
	for p := range hours - 1 {
		if most := int(perHour/sel.done) + 1; st.files[p] > most {
			t.Errorf("closed hour %d holds %d files; want at most %d (finished files and one more)", p, st.files[p], most)
		}
		if st.small[p] > 1 || st.smallRowGroups[p] > st.small[p] {
			t.Errorf("closed hour %d holds %d small files of %d row groups; a full compaction leaves one of one", p, st.small[p], st.smallRowGroups[p])
		}
	}
	if most := int(perHour/sel.done) + 2 + every; st.maxFiles > most {
		t.Errorf("the open hour held %d files before a run; want at most %d", st.maxFiles, most)
	}
}

// TestHeadStrategyStreaming: floe commits to 2 partitions, a maintenance
// cycle after every second one with the head strategy, on a target of
// about 40 appended files and a head size of 5 (a joined file is smaller
// than its parts: one footer). Each partition keeps
// its finished files, a head, a tail and the newest files all along, the
// rows are the same, merges copy row groups, and every file holds at most
// copy-row-groups.max-row-groups (or, a tail, tail-max-row-groups) row
// groups.
func TestHeadStrategyStreaming(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	const rowsPer, parts = 2000, 2
	commits := 160
	if raceDetector {
		commits = 40
	}
	n := fill(t, w, 1, rowsPer, parts)
	first := shape(t, cat, "db.events")
	small := first.DataBytes / first.DataFiles
	target := max(40*small, 1<<10)
	tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		"maintenance.rewrite-data-files.target-file-size-bytes", strconv.FormatInt(target, 10),
		"maintenance.rewrite-data-files.copy-row-groups.min-file-bytes", strconv.FormatInt(5*small, 10),
		"maintenance.rewrite-data-files.min-interval.ms", "0",
		"maintenance.rewrite-data-files.trigger.small-file-count", "1")...))
	var maxFiles int64
	copied := 0
	for i := 1; i < commits; i++ {
		if err := w.commit(context.Background(), rowsFor(n, rowsPer, parts)); err != nil {
			t.Fatal(err)
		}
		n += rowsPer
		if i%2 == 0 {
			sh := shapeWith(t, cat, target)
			finished := sh.MaxPartitionFiles - sh.MaxPartitionSmallFiles
			maxFiles = max(maxFiles, sh.MaxPartitionFiles)
			// Finished files, a head, a tail and two new files.
			if most := finished + 4; sh.MaxPartitionFiles > most {
				t.Errorf("after commit %d the fullest partition holds %d files (%d finished); want at most %d", i, sh.MaxPartitionFiles, finished, most)
			}
			for _, r := range runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData) {
				if strings.Contains(r.Detail, "copied the row groups") {
					copied++
				}
			}
		}
	}
	final := shapeWith(t, cat, target)
	finishedFiles := 0
	for _, task := range planTasks(t, cat, "db.events") {
		if task.File.FileSizeBytes() >= smallFileLimit(target) {
			finishedFiles++
		}
		if rg := rowGroupsOf(t, task.File.FilePath()); rg > 6 {
			t.Errorf("%s has %d row groups; want at most copy-row-groups.max-row-groups (4) or tail-max-row-groups (6)", task.File.FilePath(), rg)
		}
	}
	t.Logf("file of one append %s, target %s; fullest partition at most %d files before a run, %d at the end; %d runs copied row groups; %d finished files",
		bytesIEC(small), bytesIEC(target), maxFiles, final.MaxPartitionFiles, copied, finishedFiles)
	if copied < commits/8 {
		t.Errorf("only %d of %d runs copied row groups: the newest files should be joined, not rewritten", copied, commits/2)
	}
	if !raceDetector && finishedFiles == 0 {
		t.Errorf("no finished file after %d commits of a 40-file target", commits)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
}
