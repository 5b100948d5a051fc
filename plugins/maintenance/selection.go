package maintenance

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// Strategies of rewrite-data-files: which of a partition's files a run
// takes.
const (
	// strategyHead keeps a streaming partition at few files: one head
	// file that grows by appended row groups, one tail file that
	// gathers the newest files, and the files that arrived since the
	// last run. A run merges a partition's small files (all but the
	// head: the tail and the arrivals) into one, copying the tail's row
	// groups and decoding only the arrivals into one row group after
	// them, so taking in the newest files costs a copy of the tail. Once
	// those files hold copy-row-groups.min-file-bytes (the head size),
	// they are rewritten into one row group appended to the head, whose
	// row groups are copied. A tail or head that would hold more than
	// tail-max-row-groups or max-row-groups row groups has its trailing,
	// small ones rewritten with the new rows (leading); a head that
	// another append would take past the target is a finished file,
	// never merged again.
	// Each byte is decoded about three times (into the tail, into the
	// head, and a share of the row-group merges) and copied about
	// target / (2 × head size) times; the partition holds its finished
	// files, a head, a tail and the arrivals. Chosen over tiered by
	// simulation (selection_test.go).
	strategyHead = "head"
	// strategyTiered takes, per partition, the smallest files and each
	// next one that is at most size-ratio times the bytes taken so far
	// (size-tiered, as LSM stores compact). A file is rewritten only
	// together with at least 1/ratio of its own size in smaller files,
	// so every rewrite grows the file holding a byte by a factor of at
	// least 1 + 1/ratio: each byte is rewritten O(log(target/small))
	// times, and a partition holds about log(target/small) tiers plus
	// the files that arrived since the last run. Made for streaming
	// tables, whose files stay small for many commits.
	strategyTiered = "tiered"
	// strategyBinPack takes every small file of a partition, whatever
	// its size: a full compaction, as Iceberg's rewrite_data_files
	// does. Run every few commits on a streaming table it rewrites the
	// partition's whole history each time (quadratic work); a forced
	// run always uses it.
	strategyBinPack = "bin-pack"
)

// deleteFileThreshold is the number of delete files applying to a data
// file that makes it a candidate whatever its size (iceberg-go's
// compaction default): rewriting it drops the deletes from every scan.
const deleteFileThreshold = 5

// selection is how a run picks files and which of their row groups it
// copies.
type selection struct {
	strategy string
	// target is the size of compacted files; done is the size from which
	// a file is never a candidate (unless deletes apply to it).
	target, done int64
	ratio        float64
	minInput     int
	// budget bounds the input bytes of a run; 0: no bound.
	budget int64
	// copyMin is copy-row-groups.min-file-bytes (the head strategy's
	// head size; 0: nothing is copied); copyMax and tailMax are the row
	// groups from which a head (or tier) and a tail are rewritten instead
	// of copied (0: no limit). See copyPlan.
	copyMin          int64
	copyMax, tailMax int
	// idle are the labels of partitions that receive no data: each is
	// compacted fully (bin-pack, rewritten whole) whatever the strategy.
	idle map[string]bool
}

// selectionFor is the selection of a run: the configured strategy, or a
// full bin-pack without a budget when forced.
func selectionFor(s settings, target int64, forced bool) selection {
	sel := selection{strategy: s.strategy, target: target, done: smallFileLimit(target), ratio: s.sizeRatio, minInput: s.minInputFiles, budget: s.maxRunBytes,
		copyMin: s.copyRowGroupsMin, copyMax: s.copyRowGroupsMax, tailMax: s.tailRowGroupsMax}
	if sel.budget > 0 {
		// A tiered group holds at most a target's bytes: with room for
		// two, the biggest one still fits behind up to a target of
		// small ones, so smallest-first does not starve it.
		sel.budget = max(sel.budget, 2*target)
	}
	if forced {
		sel.strategy = strategyBinPack
		sel.budget = 0
	}
	if sel.strategy == strategyHead && sel.copyMin > 0 {
		// A head grows by copying, so it may grow to the target: it is
		// finished once another head-size append would not fit, not at
		// 75 % of the target. Finished files are then about as big as a
		// full compaction writes them, and a partition between the two
		// sizes holds one file fewer.
		sel.done = max(sel.done, target-sel.copyMin)
	}
	return sel
}

// quickShare is the share of the target a re-planned group may hold (8 MiB
// of 128 MiB): a re-plan merges what arrived while the run's own groups
// were rewritten, and must not start a tier's big merge of its own, which
// would keep the run going while more files arrive.
const quickShare = 16

// quick is sel for a re-plan: groups of at most 1/quickShare of the
// target, and no full compaction of idle partitions (a run's first plan
// takes those).
func (sel selection) quick() selection {
	q := sel
	q.target = max(sel.target/quickShare, 1)
	q.idle = nil
	return q
}

// small reports a group a re-plan could have made: at most 1/quickShare
// of the target. Such a group may start in one slot beyond
// max-concurrent-groups, so the newest files are merged while big groups
// hold every slot.
func (sel selection) small(g table.CompactionTaskGroup) bool {
	return g.TotalSizeBytes <= max(sel.target/quickShare, 1)
}

// fileFacts is what copyPlan reads of one file of a group.
type fileFacts struct {
	size int64
	// rowGroups are the sizes of the file's row groups in file order
	// (from its split offsets); the file's size alone when they are not
	// known.
	rowGroups []int64
	// eligible is a whole Parquet file with no deletes to apply: its row
	// groups may be copied.
	eligible bool
}

// copyPlan says, for each file of a group of total bytes, how many of its
// leading row groups are copied as they are instead of being rewritten
// (0: none, all of them: the whole file). What is not copied is rewritten
// into one row group after the copied ones. A group of one file alone
// copies nothing.
//
// With the head strategy a group copies one file, its biggest: in a
// group under copyMin (a tail merge) the tail, so taking in the newest
// files costs a copy of the tail and a decode of the new rows only;
// otherwise the head, when it has copyMin bytes, also when the merge
// makes it a finished file (done): a head's row groups are already big,
// and rewriting every finished file whole would decode each byte once
// more (a fifth of the strategy's CPU in the bench). A file the merge
// would leave with more than tailMax (tail) or copyMax (head) row groups
// keeps only its leading ones (see leading): its trailing, smallest ones
// are rewritten with the new rows. The tiered strategy copies whole files
// of copyMin or more with fewer than copyMax row groups, rewrites the
// others whole, and rewrites a group that makes a finished file whole.
func (sel selection) copyPlan(total int64, files []fileFacts) []int {
	keep := make([]int, len(files))
	if sel.copyMin <= 0 || len(files) < 2 {
		return keep
	}
	if sel.strategy == strategyHead {
		// One file is copied: the tail (a merge under copyMin) or the
		// head (its biggest file, of copyMin or more), so the output's
		// row groups are bounded by the copied file's.
		biggest := -1
		for i, f := range files {
			if f.eligible && (biggest < 0 || f.size > files[biggest].size) {
				biggest = i
			}
		}
		switch {
		case biggest < 0:
		case total < sel.copyMin:
			keep[biggest] = leading(files[biggest].rowGroups, total-files[biggest].size, sel.tailMax)
		case files[biggest].size >= sel.copyMin:
			keep[biggest] = leading(files[biggest].rowGroups, total-files[biggest].size, sel.copyMax)
		}
		return keep
	}
	if total >= sel.done {
		return keep // tiered: a finished file is rewritten whole
	}
	copied, rewritten := 0, 0
	for i, f := range files {
		if f.eligible && f.size >= sel.copyMin && (sel.copyMax <= 0 || len(f.rowGroups) < sel.copyMax) {
			keep[i] = len(f.rowGroups)
			copied++
		} else {
			rewritten = 1
		}
	}
	if copied+rewritten < 2 {
		clear(keep) // one file alone: nothing to join it with
	}
	return keep
}

// leading is how many leading row groups of a file (their sizes, in file
// order) a merge that adds `added` bytes copies, so that the file it
// writes holds at most most row groups (0: no limit): all of them when
// that leaves room for the added row group; otherwise the trailing ones
// are rewritten with the added bytes, at least enough to fit, and then
// each next one back while it is no bigger than the bytes taken so far.
// A file's row groups so stay few and about decreasing in size, and a
// merge decodes the small recent ones, not the big old ones (the size
// tiers inside one file, as tiered compaction keeps them in files).
func leading(rowGroups []int64, added int64, most int) int {
	n := len(rowGroups)
	if most <= 0 || n < most {
		return n
	}
	sum := added
	for n > 0 && (n > most-1 || rowGroups[n-1] <= sum) {
		sum += rowGroups[n-1]
		n--
	}
	return n
}

// deferred is what a run's budget put off: groups left whole for later
// runs, and groups cut to their smallest files, with the bytes they
// kept out of the run.
type deferred struct {
	left, cut int
	bytes     int64
}

// String is d as the end of a run's detail ("" when nothing was put off).
func (d deferred) String() string {
	var parts []string
	if d.cut > 0 {
		parts = append(parts, fmt.Sprintf("%d cut to their smallest files", d.cut))
	}
	if d.left > 0 {
		parts = append(parts, fmt.Sprintf("%d left whole", d.left))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("; max-bytes-per-run put %s of bigger groups off to later runs (%s)", bytesIEC(d.bytes), strings.Join(parts, ", "))
}

// withinBudget keeps the smallest groups whose bytes fit the budget (at
// least one). A group that no longer fits is cut to its smallest files
// that do, when they are at least min-input-files, and left whole for a
// later run otherwise. At 1 s commits every partition of a uniformly
// keyed table reaches a tier's merge at once; taking all of them in one
// run would hold compaction for minutes while every partition gains a
// file a second, and leaving a partition out whole would let its newest
// files pile up until its big merge fits.
func (sel selection) withinBudget(groups []table.CompactionTaskGroup) ([]table.CompactionTaskGroup, deferred) {
	if sel.budget <= 0 {
		return groups, deferred{}
	}
	slices.SortStableFunc(groups, func(a, b table.CompactionTaskGroup) int {
		return cmp.Compare(sel.cost(a), sel.cost(b))
	})
	var kept []table.CompactionTaskGroup
	var d deferred
	var sum int64
	for i, g := range groups {
		if i == 0 || sum+sel.cost(g) <= sel.budget {
			kept = append(kept, g)
			sum += sel.cost(g)
			continue
		}
		c, ok := sel.cut(g, sel.budget-sum)
		if !ok {
			d.left++
			d.bytes += g.TotalSizeBytes
			continue
		}
		kept = append(kept, c)
		sum += sel.cost(c)
		d.cut++
		d.bytes += g.TotalSizeBytes - c.TotalSizeBytes
	}
	return kept, d
}

// cost is what a group weighs against max-bytes-per-run: its bytes, less
// its head's with the head strategy. A head's row groups are copied, at
// a small share of a decode's cost, so a head append weighs what it
// decodes; counting the head would cut appends to big heads down to their
// small files, which then reach copyMin beside the head and are decoded
// a second time when they join it.
func (sel selection) cost(g table.CompactionTaskGroup) int64 {
	if sel.strategy != strategyHead || len(g.Tasks) < 2 {
		return g.TotalSizeBytes
	}
	var biggest int64
	for _, t := range g.Tasks {
		biggest = max(biggest, t.File.FileSizeBytes())
	}
	if biggest < sel.copyMin {
		return g.TotalSizeBytes
	}
	return g.TotalSizeBytes - biggest
}

// cut is g's smallest files whose bytes fit room, when they are at least
// min-input-files. A group's files are sorted by size, and a prefix of a
// tiered pick is itself a tiered pick: every file in it is still at most
// size-ratio times the smaller ones.
func (sel selection) cut(g table.CompactionTaskGroup, room int64) (table.CompactionTaskGroup, bool) {
	var sum int64
	n := 0
	for n < len(g.Tasks) && sum+g.Tasks[n].File.FileSizeBytes() <= room {
		sum += g.Tasks[n].File.FileSizeBytes()
		n++
	}
	if n < max(sel.minInput, 2) {
		return table.CompactionTaskGroup{}, false
	}
	return table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks[:n], TotalSizeBytes: sum}, true
}

// plan groups tasks by partition and picks each partition's files. Each
// group is rewritten into files of the target size and committed as one
// unit (with partial progress).
func (sel selection) plan(tasks []table.FileScanTask, meta table.Metadata) []table.CompactionTaskGroup {
	type part struct {
		key   string
		files []table.FileScanTask
	}
	byKey := map[string]*part{}
	var order []string
	for _, t := range tasks {
		if !sel.candidate(t) {
			continue
		}
		k := lake.PartitionLabel(meta, t.File)
		// Files of different specs never share a group, even when their
		// partition values print alike.
		id := fmt.Sprintf("%d|%s", t.File.SpecID(), k)
		p := byKey[id]
		if p == nil {
			p = &part{key: k}
			byKey[id] = p
			order = append(order, id)
		}
		p.files = append(p.files, t)
	}
	var groups []table.CompactionTaskGroup
	for _, id := range order {
		p := byKey[id]
		slices.SortStableFunc(p.files, func(a, b table.FileScanTask) int {
			return cmp.Compare(a.File.FileSizeBytes(), b.File.FileSizeBytes())
		})
		var picked [][]table.FileScanTask
		switch {
		case sel.strategy == strategyBinPack || sel.idle[p.key]:
			picked = sel.binPack(p.files)
		case sel.strategy == strategyHead:
			picked = sel.head(p.files)
		default:
			picked = sel.tiered(p.files)
		}
		for _, files := range picked {
			g := table.CompactionTaskGroup{PartitionKey: p.key, Tasks: files}
			for _, f := range files {
				g.TotalSizeBytes += f.File.FileSizeBytes()
			}
			groups = append(groups, g)
		}
	}
	return groups
}

// candidate reports a file a run may take: one under the done size, or
// one with enough delete files to be worth rewriting.
func (sel selection) candidate(t table.FileScanTask) bool {
	if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) >= deleteFileThreshold {
		return true
	}
	return t.File.FileSizeBytes() < sel.done
}

// tiered picks, from a partition's candidates sorted by size, the smallest
// ones and each next one no bigger than ratio × the bytes taken so far,
// as long as the bytes taken stay within the target; nothing when fewer
// than min-input-files qualify.
func (sel selection) tiered(files []table.FileScanTask) [][]table.FileScanTask {
	sizes := make([]int64, len(files))
	for i, f := range files {
		sizes[i] = f.File.FileSizeBytes()
	}
	n := sel.tieredTake(sizes)
	if n == 0 {
		return nil
	}
	return [][]table.FileScanTask{files[:n]}
}

// tieredTake is tiered over sizes sorted ascending: how many of the first
// to take (0: none).
func (sel selection) tieredTake(sizes []int64) int {
	if len(sizes) < sel.minInput {
		return 0
	}
	n := 1
	sum := sizes[0]
	// Never past the target: the output stays one file, and a file just
	// under the done size is not rewritten only to grow past the target.
	for n < len(sizes) && sum+sizes[n] <= sel.target && float64(sizes[n]) <= sel.ratio*float64(sum) {
		sum += sizes[n]
		n++
	}
	if n < sel.minInput {
		return 0
	}
	return n
}

// head picks, from a partition's candidates sorted by size, the head
// strategy's merge: its small files (the tail and the newest files), and
// the head too when they hold copyMin bytes; nothing when fewer than
// min-input-files qualify.
func (sel selection) head(files []table.FileScanTask) [][]table.FileScanTask {
	sizes := make([]int64, len(files))
	for i, f := range files {
		sizes[i] = f.File.FileSizeBytes()
	}
	n, withHead := sel.headTake(sizes)
	if n == 0 {
		return nil
	}
	picked := slices.Clone(files[:n])
	if withHead {
		picked = append(picked, files[len(files)-1])
	}
	return [][]table.FileScanTask{picked}
}

// headTake is head over sizes sorted ascending: how many of the smallest
// to take, and whether the biggest (the head) joins them. The head is the
// biggest candidate when it has copyMin bytes; the others are taken
// smallest first. When those that fit beside the head within the target
// hold copyMin bytes (a row group worth copying from then on), they join
// the head; otherwise they are merged on their own, up to the target,
// when there are min-input-files of them: into the tail, or, when they
// reach copyMin without room beside the head, into a second head that a
// later run appends to the first (never past the target).
func (sel selection) headTake(sizes []int64) (n int, withHead bool) {
	if len(sizes) == 0 {
		return 0, false
	}
	last := len(sizes) - 1
	others := len(sizes)
	if sel.copyMin > 0 && sizes[last] >= sel.copyMin {
		others = last
		room := sel.target - sizes[last]
		var sum int64
		k := 0
		for k < others && sum+sizes[k] <= room {
			sum += sizes[k]
			k++
		}
		if k > 0 && sum >= sel.copyMin {
			return k, true
		}
	}
	var sum int64
	k := 0
	for k < others && sum+sizes[k] <= sel.target {
		sum += sizes[k]
		k++
	}
	if k < max(sel.minInput, 2) {
		return 0, false
	}
	return k, false
}

// binPack takes all of a partition's candidates (when there are at least
// min-input-files) in groups of about the target size, so a large backlog
// commits piece by piece.
func (sel selection) binPack(files []table.FileScanTask) [][]table.FileScanTask {
	sizes := make([]int64, len(files))
	for i, f := range files {
		sizes[i] = f.File.FileSizeBytes()
	}
	var out [][]table.FileScanTask
	for _, r := range sel.binPackTake(sizes) {
		out = append(out, files[r[0]:r[1]])
	}
	return out
}

// binPackTake is binPack over sizes: the groups as index ranges [from, to).
func (sel selection) binPackTake(sizes []int64) [][2]int {
	if len(sizes) < sel.minInput {
		return nil
	}
	var out [][2]int
	start := 0
	var sum int64
	for i, size := range sizes {
		sum += size
		if sum >= sel.target {
			out = append(out, [2]int{start, i + 1})
			start, sum = i+1, 0
		}
	}
	if rest := len(sizes) - start; rest > 0 {
		if len(out) > 0 && rest < sel.minInput {
			// Too few to stand alone: join the last group.
			out[len(out)-1][1] = len(sizes)
		} else {
			out = append(out, [2]int{start, len(sizes)})
		}
	}
	return out
}
