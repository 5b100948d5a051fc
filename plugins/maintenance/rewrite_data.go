package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	_ "github.com/floehq/floe/lake/zstdpages" // zstd encoders that survive the collector
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
	if !env.forced {
		sel.idle = env.ch.Idle
	}

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
	if env.s.partialProgress && !env.forced && sel.strategy != strategyBinPack {
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
	if idle := idleGroups(groups, sel.idle); idle > 0 {
		out.detail += fmt.Sprintf("; %d group(s) compacted %d idle partition(s) fully", idle, len(sel.idle))
	}
	if rw.copiedGroups > 0 {
		out.detail += fmt.Sprintf("; %d group(s) copied the row groups of %d file(s) (%s) instead of rewriting them", rw.copiedGroups, rw.copiedFiles, bytesIEC(rw.copiedBytes))
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

// idleGroups counts the groups of idle partitions.
func idleGroups(groups []table.CompactionTaskGroup, idle map[string]bool) int {
	n := 0
	for _, g := range groups {
		if idle[g.PartitionKey] {
			n++
		}
	}
	return n
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
	groups, put = sel.withinBudget(sel.plan(kept, tbl.Metadata()))
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
