package maintenance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
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

	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return out, fmt.Errorf("plan files: %w", err)
	}
	skipped := 0
	if env.s.skipNewest > 0 {
		recent, err := recentFiles(ctx, tbl, env.now.Add(-env.s.skipNewest))
		if err != nil {
			return out, err
		}
		kept := tasks[:0]
		for _, t := range tasks {
			if recent[t.File.FilePath()] {
				skipped++
				continue
			}
			kept = append(kept, t)
		}
		tasks = kept
	}
	groups, put := sel.withinBudget(sel.plan(tasks, specsByID(tbl.Metadata())))
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
	rw := &rewriter{env: env, planned: tbl, fs: fs, target: target, done: sel.done, intermediate: tbl}
	if !env.forced {
		if rw.intermediate, err = withCompression(tbl, env.s.intermediateCompression); err != nil {
			return out, err
		}
	}
	runErr := rw.run(ctx, groups)

	out.filesAfter = out.filesBefore - int64(rw.removedFiles) + int64(rw.addedFiles)
	out.bytesAfter = out.bytesBefore - rw.removedBytes + rw.addedBytes
	out.detail = fmt.Sprintf("%s: rewrote %d file(s) (%s) into %d (%s) in %d of %d partition group(s), %d commit(s), %d conflict retr%s",
		sel.strategy, rw.removedFiles, bytesIEC(rw.removedBytes), rw.addedFiles, bytesIEC(rw.addedBytes),
		rw.committedGroups, len(groups), rw.commits, rw.retries, plural(rw.retries, "y", "ies"))
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

// rewriter executes planned groups and commits their results.
type rewriter struct {
	env     runEnv
	planned *table.Table
	fs      iceio.IO
	target  int64
	// intermediate is the planned table seen with the intermediate
	// codec: groups under done bytes are written through it, as their
	// output will be merged again.
	intermediate *table.Table
	done         int64

	// mu serializes commits and guards the totals, errs and a run's
	// pending results.
	mu sync.Mutex
	// Totals of what was committed.
	removedFiles, addedFiles int
	removedBytes, addedBytes int64
	committedGroups, commits int
	retries, droppedGroups   int
	errs                     []error
}

// run executes the groups in order, up to env.s.maxGroups at once (each
// next group starts as soon as one finishes, so a big group does not hold
// back the small ones behind it), and commits them: with partial progress
// in up to partial-progress.max-commits commits, each once its share of
// the groups is done; all together at the end without.
func (rw *rewriter) run(ctx context.Context, groups []table.CompactionTaskGroup) error {
	perCommit := (len(groups) + rw.env.s.maxCommits - 1) / max(rw.env.s.maxCommits, 1)
	var pending []table.CompactionGroupResult // guarded by rw.mu
	slots := make(chan struct{}, max(rw.env.s.maxGroups, 1))
	var wg sync.WaitGroup
	for _, g := range groups {
		slots <- struct{}{}
		rw.mu.Lock()
		stop := ctx.Err() != nil || (len(rw.errs) > 0 && !rw.env.s.partialProgress)
		rw.mu.Unlock()
		if stop {
			break
		}
		tbl := rw.planned
		if g.TotalSizeBytes < rw.done {
			tbl = rw.intermediate
		}
		wg.Go(func() {
			defer func() { <-slots }()
			res, err := table.ExecuteCompactionGroup(ctx, tbl, g, table.WithCompactionTargetFileSize(rw.target))
			if err != nil {
				rw.discard([]table.CompactionGroupResult{res})
			}
			rw.mu.Lock()
			var batch []table.CompactionGroupResult
			switch {
			case err != nil:
				rw.errs = append(rw.errs, fmt.Errorf("partition %s: %w", partitionLabel(g.PartitionKey), err))
			case len(res.OldDataFiles) > 0 && len(res.NewDataFiles) > 0:
				pending = append(pending, res)
				if rw.env.s.partialProgress && len(pending) >= perCommit {
					batch, pending = pending, nil
				}
			}
			rw.mu.Unlock()
			if batch != nil {
				rw.commit(ctx, batch)
			}
		})
	}
	wg.Wait()
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
