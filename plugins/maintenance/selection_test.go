package maintenance

import (
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

// simulate appends one file of size small per step to one partition and
// compacts with sel every `every` steps, as the plugin would; it returns
// the bytes rewritten over the bytes appended, and the most files and
// most small files the partition held right before a compaction.
func simulate(sel selection, steps, every int, small int64) (amp float64, maxFiles, maxSmall int) {
	var files []int64
	var rewritten, added int64
	for step := 1; step <= steps; step++ {
		files = append(files, small)
		added += small
		if step%every != 0 {
			continue
		}
		slices.Sort(files)
		var cands, rest []int64
		for _, f := range files {
			if f < sel.done {
				cands = append(cands, f)
			} else {
				rest = append(rest, f)
			}
		}
		maxFiles = max(maxFiles, len(files))
		maxSmall = max(maxSmall, len(cands))
		n := len(cands)
		if sel.strategy == strategyTiered {
			n = sel.tieredTake(cands)
		} else if n < sel.minInput {
			n = 0
		}
		if n == 0 {
			continue
		}
		var sum int64
		for _, f := range cands[:n] {
			sum += f
		}
		rewritten += sum
		// The writer rolls files at the target size.
		for ; sum > sel.target; sum -= sel.target {
			rest = append(rest, sel.target)
		}
		files = append(append(rest, cands[n:]...), sum)
	}
	return float64(rewritten) / float64(added), maxFiles, maxSmall
}

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
			amp, _, maxSmall := simulate(tiered, steps, 2, small)
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
		binPackAmp, _, _ = simulate(binPack, 20000, 2, small)
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
}
