package maintenance

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

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
