package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// rewriteData compacts the small data files of each partition, picked by
// the configured strategy (selection.go; a forced run bin-packs every
// small file), into files of the target size and commits each partition's
// rewrite as a replace snapshot (or all at once without partial
// progress). Compaction reads the rows with their deletes applied and
// writes them back unchanged, so the table's rows are the same before and
// after; a concurrent ingestion commit only makes the replace re-apply on
// the fresh table.
func rewriteData(ctx context.Context, env runEnv) (outcome, error) {
	tbl := env.ch.Tbl
	out := outcome{filesBefore: env.ch.DataFiles, bytesBefore: env.ch.DataBytes, filesAfter: env.ch.DataFiles, bytesAfter: env.ch.DataBytes}
	if tbl.CurrentSnapshot() == nil {
		out.detail = "empty table"
		return out, nil
	}
	target := env.s.targetSize(tbl.Properties())
	sel := selectionFor(env.s, target, env.forced)

	groups, put, skipped, err := planGroups(ctx, env.s, sel, tbl, nil, env.now)
	if err != nil {
		return out, err
	}
	if len(groups) == 0 {
		out.detail = fmt.Sprintf("nothing to rewrite (%s): no partition has %d files to take (under %s)", sel.strategy, env.s.minInputFiles, bytesIEC(sel.done))
		if sel.strategy == strategyTiered {
			out.detail += fmt.Sprintf(" whose next file is at most %g× the smaller ones", sel.ratio)
		}
		if skipped > 0 {
			out.detail += fmt.Sprintf("; %d files newer than %s left alone", skipped, env.s.skipNewest)
		}
		return out, nil
	}
	var inFiles, estOut int
	var inBytes int64
	for _, g := range groups {
		inFiles += len(g.Tasks)
		inBytes += g.TotalSizeBytes
		estOut += int(max(1, (g.TotalSizeBytes+target-1)/target))
	}
	if env.dryRun {
		out.filesAfter = out.filesBefore - int64(inFiles) + int64(estOut)
		out.detail = fmt.Sprintf("dry run (%s): would rewrite %d files (%s) in %d partition group(s) into about %d file(s) of up to %s",
			sel.strategy, inFiles, bytesIEC(inBytes), len(groups), estOut, bytesIEC(target))
		out.detail += put.String()
		return out, nil
	}

	fs, err := tbl.FS(ctx)
	if err != nil {
		return out, fmt.Errorf("open file IO: %w", err)
	}
	rw := &rewriter{env: env, sel: sel, planned: tbl, fs: fs, reserved: map[string]bool{}}
	if env.s.partialProgress && !env.forced && sel.strategy == strategyTiered {
		rw.replanEvery = env.s.replanInterval
	}
	first, err := rw.wave(tbl, groups, env.s.maxCommits)
	if err != nil {
		return out, err
	}
	runErr := rw.run(ctx, first)

	out.filesAfter = out.filesBefore - int64(rw.removedFiles) + int64(rw.addedFiles)
	out.bytesAfter = out.bytesBefore - rw.removedBytes + rw.addedBytes
	if rw.replannedGroups > 0 {
		// Re-plans rewrote files that arrived after the count before:
		// count the table as the run leaves it.
		if files, bytes, err := liveTotals(ctx, env.cat, tbl.Identifier()); err == nil {
			out.filesAfter, out.bytesAfter = files, bytes
		}
	}
	out.detail = fmt.Sprintf("%s: rewrote %d file(s) (%s) into %d (%s) in %d of %d partition group(s), %d commit(s), %d conflict retr%s",
		sel.strategy, rw.removedFiles, bytesIEC(rw.removedBytes), rw.addedFiles, bytesIEC(rw.addedBytes),
		rw.committedGroups, len(groups)+rw.replannedGroups, rw.commits, rw.retries, plural(rw.retries, "y", "ies"))
	if rw.replannedGroups > 0 {
		out.detail += fmt.Sprintf("; %d of the groups planned by %d re-plan(s) while the run lasted", rw.replannedGroups, rw.replans)
	}
	if rw.copiedGroups > 0 {
		out.detail += fmt.Sprintf("; %d group(s) copied the row groups of their files of %s or more (%s) instead of rewriting them", rw.copiedGroups, bytesIEC(env.s.copyRowGroupsMin), bytesIEC(rw.copiedBytes))
	}
	if rw.droppedGroups > 0 {
		out.detail += fmt.Sprintf("; %d group(s) dropped: a concurrent rewrite replaced their files", rw.droppedGroups)
	}
	if skipped > 0 {
		out.detail += fmt.Sprintf("; %d file(s) newer than %s left alone", skipped, env.s.skipNewest)
	}
	out.detail += put.String()
	if env.ch.MaxPartition != "" || env.ch.MaxPartitionFiles > 0 {
		out.detail += fmt.Sprintf("; fullest partition before: %s (%d files)", partitionLabel(env.ch.MaxPartition), env.ch.MaxPartitionFiles)
	}
	return out, runErr
}

// planGroups plans a run's partition groups on tbl: its live files, less
// those in reserved and those newer than skip-newest before now, picked
// by sel and cut to its budget. skipped counts the files left for being
// new.
func planGroups(ctx context.Context, s settings, sel selection, tbl *table.Table, reserved map[string]bool, now time.Time) (groups []table.CompactionTaskGroup, put deferred, skipped int, err error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, deferred{}, 0, fmt.Errorf("plan files: %w", err)
	}
	var recent map[string]bool
	if s.skipNewest > 0 {
		if recent, err = recentFiles(ctx, tbl, now.Add(-s.skipNewest)); err != nil {
			return nil, deferred{}, 0, err
		}
	}
	kept := tasks[:0]
	for _, t := range tasks {
		switch {
		case reserved[t.File.FilePath()]:
		case recent[t.File.FilePath()]:
			skipped++
		default:
			kept = append(kept, t)
		}
	}
	groups, put = sel.withinBudget(sel.plan(kept, specsByID(tbl.Metadata())))
	return groups, put, skipped, nil
}

// liveTotals counts the live data files of a table and their bytes.
func liveTotals(ctx context.Context, cat catalog.Catalog, ident table.Identifier) (files, bytes int64, err error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return 0, 0, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, t := range tasks {
		files++
		bytes += t.File.FileSizeBytes()
	}
	return files, bytes, nil
}

// executeGroup reads a group's files and writes them back at the target
// size (a variable so tests can hold a group back).
var executeGroup = table.ExecuteCompactionGroup

// rewriter executes planned groups and commits their results.
type rewriter struct {
	env     runEnv
	sel     selection
	planned *table.Table
	fs      iceio.IO
	// replanEvery is how often the run looks at the table again while
	// its first plan's groups are still being rewritten (0: never).
	replanEvery time.Duration
	// reserved holds the files of every group the run planned; a re-plan
	// leaves them out. Only the scheduling goroutine uses it.
	reserved                 map[string]bool
	replans, replannedGroups int

	// mu serializes commits and guards the totals, errs and the waves'
	// pending results.
	mu sync.Mutex
	// Totals of what was committed.
	removedFiles, addedFiles int
	removedBytes, addedBytes int64
	committedGroups, commits int
	retries, droppedGroups   int
	errs                     []error
	// Groups whose big files' row groups were copied, and their bytes.
	copiedGroups int
	copiedBytes  int64
}

// job is one partition group to rewrite and the view of the table it is
// read and written through.
type job struct {
	g   table.CompactionTaskGroup
	tbl *table.Table
	w   *wave
}

// wave is the groups of one plan (the run's first, or a re-plan). With
// partial progress its results are committed in batches of perCommit, the
// last one when its last group ends.
type wave struct {
	perCommit int
	left      int                           // groups not ended yet; guarded by rw.mu
	pending   []table.CompactionGroupResult // guarded by rw.mu
}

// wave turns groups planned on tbl into jobs committed in up to commits
// batches, and reserves their files. Groups under the done size are
// written through tbl seen with the intermediate codec, as their output
// will be merged again; a forced run writes everything with the table's.
func (rw *rewriter) wave(tbl *table.Table, groups []table.CompactionTaskGroup, commits int) ([]job, error) {
	intermediate := tbl
	if !rw.env.forced {
		var err error
		if intermediate, err = withCompression(tbl, rw.env.s.intermediateCompression); err != nil {
			return nil, err
		}
	}
	w := &wave{perCommit: (len(groups) + commits - 1) / max(commits, 1), left: len(groups)}
	jobs := make([]job, 0, len(groups))
	for _, g := range groups {
		view := tbl
		if g.TotalSizeBytes < rw.sel.done {
			view = intermediate
		}
		jobs = append(jobs, job{g: g, tbl: view, w: w})
		for _, t := range g.Tasks {
			rw.reserved[t.File.FilePath()] = true
		}
	}
	return jobs, nil
}

// run rewrites the jobs smallest first, up to max-concurrent-groups at
// once (each next one starts as soon as one ends, so a big group does not
// hold back the small ones behind it; re-planned groups have one more
// slot), and commits them: with partial progress each wave in up to
// partial-progress.max-commits commits, each as soon as its share is
// done; all together at the end without.
//
// While the first plan's groups run, the table is planned again every
// replan interval, leaving out the run's files: at 1 s commits a tier's
// big merges take seconds, and every partition gains a file a second
// meanwhile. Those new files are merged in quick groups of their own
// (selection.quick), which go ahead of bigger ones still waiting.
// Re-plans stop with the first plan's last group, so a run ends.
func (rw *rewriter) run(ctx context.Context, queue []job) error {
	first := queue[0].w
	all := []*wave{first}
	slots := max(rw.env.s.maxGroups, 1)
	ended := make(chan struct{})
	running := 0
	var replan <-chan time.Time
	if rw.replanEvery > 0 {
		tick := time.NewTicker(rw.replanEvery)
		defer tick.Stop()
		replan = tick.C
	}
	bySize := func(a, b job) int { return cmp.Compare(a.g.TotalSizeBytes, b.g.TotalSizeBytes) }
	slices.SortStableFunc(queue, bySize)
	var wg sync.WaitGroup
	// next is the index of the smallest job that may start now: any job
	// when a slot is free; a re-planned one in one slot beyond them, so
	// the newest files are merged while the first plan's biggest groups
	// hold every slot.
	next := func() int {
		for i, j := range queue {
			if running < slots || (running == slots && j.w != first) {
				return i
			}
		}
		return -1
	}
	for {
		stop := rw.stopping(ctx)
		for i := next(); i >= 0 && !stop; i = next() {
			j := queue[i]
			queue = slices.Delete(queue, i, i+1)
			running++
			wg.Go(func() {
				rw.execute(ctx, j)
				ended <- struct{}{}
			})
		}
		if running == 0 && (len(queue) == 0 || stop) {
			break
		}
		select {
		case <-ended:
			running--
		case <-replan:
			rw.mu.Lock()
			busy := first.left > 0
			rw.mu.Unlock()
			if !busy || stop {
				replan = nil
				continue
			}
			if more := rw.replan(ctx); len(more) > 0 {
				all = append(all, more[0].w)
				queue = append(queue, more...)
				slices.SortStableFunc(queue, bySize)
			}
		}
	}
	wg.Wait()
	var pending []table.CompactionGroupResult
	for _, w := range all {
		pending = append(pending, w.pending...)
	}
	if err := ctx.Err(); err != nil {
		rw.discard(pending)
		return errors.Join(append(rw.errs, context.Cause(ctx))...)
	}
	if !rw.env.s.partialProgress && len(rw.errs) > 0 {
		rw.discard(pending) // all or nothing
		return errors.Join(rw.errs...)
	}
	if len(pending) > 0 {
		rw.commit(ctx, pending)
	}
	return errors.Join(rw.errs...)
}

// stopping reports that no further group should start: the run's context
// ended, or a group failed and the run commits all or nothing.
func (rw *rewriter) stopping(ctx context.Context) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return ctx.Err() != nil || (len(rw.errs) > 0 && !rw.env.s.partialProgress)
}

// execute rewrites one job's group and books its result in its wave,
// committing the wave's batch when it is complete.
func (rw *rewriter) execute(ctx context.Context, j job) {
	res, err := rw.rewriteGroup(ctx, j)
	if err != nil {
		rw.discard([]table.CompactionGroupResult{res})
	}
	rw.mu.Lock()
	w := j.w
	w.left--
	switch {
	case err != nil:
		rw.errs = append(rw.errs, fmt.Errorf("partition %s: %w", partitionLabel(j.g.PartitionKey), err))
	case len(res.OldDataFiles) > 0 && len(res.NewDataFiles) > 0:
		w.pending = append(w.pending, res)
	}
	var batch []table.CompactionGroupResult
	if rw.env.s.partialProgress && len(w.pending) > 0 && (len(w.pending) >= w.perCommit || w.left == 0) {
		batch, w.pending = w.pending, nil
	}
	rw.mu.Unlock()
	if batch != nil {
		rw.commit(ctx, batch)
	}
}

// replan plans the table as it is now, leaving out the run's files, in
// quick groups (the newest files and the smallest tiers), and returns
// them as one wave committed at once. A failed look is
// logged and left to the next tick: the run's own groups go on.
func (rw *rewriter) replan(ctx context.Context) []job {
	failed := func(err error) []job {
		if ctx.Err() == nil {
			rw.env.log.Debug("cannot re-plan while the run lasts; the next tick tries again", "table", rw.planned.Identifier(), "error", err)
		}
		return nil
	}
	fresh, err := rw.env.cat.LoadTable(ctx, rw.planned.Identifier())
	if err != nil {
		return failed(err)
	}
	groups, _, _, err := planGroups(ctx, rw.env.s, rw.sel.quick(), fresh, rw.reserved, time.Now())
	if err != nil {
		return failed(err)
	}
	if len(groups) == 0 {
		return nil
	}
	jobs, err := rw.wave(fresh, groups, 1)
	if err != nil {
		return failed(err)
	}
	rw.replans++
	rw.replannedGroups += len(groups)
	return jobs
}

// commit commits results as one replace snapshot, re-applying it on a
// fresh table after each conflict. Before each attempt it checks the fresh
// table: a group whose old files a concurrent rewrite replaced is dropped
// (its new files deleted), and a group whose new files are already live
// (an earlier attempt whose answer was lost) counts as committed.
func (rw *rewriter) commit(ctx context.Context, results []table.CompactionGroupResult) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	fresh, err := rw.env.cat.LoadTable(ctx, rw.planned.Identifier())
	if err != nil {
		rw.discard(results)
		rw.errs = append(rw.errs, fmt.Errorf("reload before commit: %w", err))
		return
	}
	var committed []table.CompactionGroupResult
	attempt := func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
		toCommit, already, dropped, err := rw.recheck(ctx, tbl, results)
		if err != nil {
			return nil, err
		}
		committed = already
		rw.discard(dropped)
		rw.droppedGroups += len(dropped)
		results = toCommit
		if len(toCommit) == 0 {
			return tbl, nil
		}
		txn := tbl.NewTransaction()
		rewrite := txn.NewRewrite(iceberg.Properties{summaryMaintenance: taskRewriteData, summaryMaintenance + ".owner": rw.env.owner})
		for _, r := range toCommit {
			rewrite.ApplyResult(r)
		}
		if err := rewrite.Commit(ctx); err != nil {
			return nil, err
		}
		out, err := txn.Commit(ctx)
		if err != nil {
			return out, err
		}
		committed = append(committed, toCommit...)
		rw.commits++
		return out, nil
	}
	_, retries, err := rw.env.retry.run(ctx, fresh, attempt)
	rw.retries += retries
	for _, r := range committed {
		rw.committedGroups++
		rw.removedFiles += len(r.OldDataFiles)
		rw.addedFiles += len(r.NewDataFiles)
		rw.removedBytes += r.BytesBefore
		rw.addedBytes += r.BytesAfter
	}
	if err != nil {
		if isConflict(err) {
			// Nothing of this attempt was committed: its files are ours to delete.
			rw.discard(results)
		}
		// Otherwise the commit's fate is unknown: leave the files; if
		// they were not committed, orphan cleanup deletes them later.
		rw.errs = append(rw.errs, fmt.Errorf("commit: %w", err))
	}
}

// recheck sorts results against tbl's live files.
func (rw *rewriter) recheck(ctx context.Context, tbl *table.Table, results []table.CompactionGroupResult) (toCommit, already, dropped []table.CompactionGroupResult, err error) {
	if onlyAppendsSince(tbl, rw.planned.CurrentSnapshot().SnapshotID) {
		return results, nil, nil, nil
	}
	live, err := liveDataFiles(ctx, tbl)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, r := range results {
		switch {
		case allLive(live, r.NewDataFiles):
			already = append(already, r)
		case allLive(live, r.OldDataFiles):
			toCommit = append(toCommit, r)
		default:
			dropped = append(dropped, r)
		}
	}
	return toCommit, already, dropped, nil
}

// discard deletes the new files of results that will not be committed.
func (rw *rewriter) discard(results []table.CompactionGroupResult) {
	for _, r := range results {
		for _, df := range r.NewDataFiles {
			if err := rw.fs.Remove(df.FilePath()); err != nil {
				rw.env.log.Debug("cannot delete an uncommitted compaction output; orphan cleanup will", "file", df.FilePath(), "error", err)
			}
		}
	}
}

// onlyAppendsSince reports whether every snapshot of tbl's main branch
// after snapshot id is an append: then no data file live at id was removed
// since, and none of maintenance's rewrites committed.
func onlyAppendsSince(tbl *table.Table, id int64) bool {
	head := tbl.CurrentSnapshot()
	if head == nil {
		return false
	}
	for _, s := range table.AncestorsOf(head.SnapshotID, tbl.Metadata().SnapshotByID) {
		if s.SnapshotID == id {
			return true
		}
		if s.Summary == nil || s.Summary.Operation != table.OpAppend {
			return false
		}
	}
	return false // id is not an ancestor (expired, or another branch of history)
}

// liveDataFiles returns the paths of the data files live in tbl's head.
func liveDataFiles(ctx context.Context, tbl *table.Table) (map[string]bool, error) {
	live := map[string]bool{}
	head := tbl.CurrentSnapshot()
	if head == nil {
		return live, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := head.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list: %w", err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			live[e.DataFile().FilePath()] = true
		}
	}
	return live, nil
}

func allLive(live map[string]bool, files []iceberg.DataFile) bool {
	for _, f := range files {
		if !live[f.FilePath()] {
			return false
		}
	}
	return len(files) > 0
}

// recentFiles returns the data files of tbl's head added at or after
// cutoff. Manifests written before cutoff are not read: they can only
// list older files.
func recentFiles(ctx context.Context, tbl *table.Table, cutoff time.Time) (map[string]bool, error) {
	recent := map[string]bool{}
	head := tbl.CurrentSnapshot()
	if head == nil {
		return recent, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := head.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list: %w", err)
	}
	meta := tbl.Metadata()
	newer := func(id int64) bool {
		s := meta.SnapshotByID(id)
		return s == nil || s.TimestampMs >= cutoff.UnixMilli()
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData || !newer(m.SnapshotID()) {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if newer(e.SnapshotID()) {
				recent[e.DataFile().FilePath()] = true
			}
		}
	}
	return recent, nil
}

// partitionLabel prints a partition key.
func partitionLabel(k string) string {
	if k == "" {
		return "(unpartitioned)"
	}
	return k
}

// bytesIEC prints a byte count.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
