package maintenance

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
)

// expireSnapshots removes snapshots of the main branch beyond the newest
// retain-last that are older than max-age or beyond the newest
// max-snapshots (retention.go), and after the commit deletes the manifest
// lists, manifests and data files only they referenced.
//
// The newest snapshot of every floe connector is never expired: recovery
// walks back from the head to it and reads its offsets. It is protected
// through the retention rule itself: retain-last is raised to the depth
// of the oldest such snapshot below the head, so iceberg-go keeps it and
// everything between it and the head. The plan is redone on a fresh table
// after every conflict, so a commit that landed meanwhile (a newer floe
// snapshot) is taken into account.
func expireSnapshots(ctx context.Context, env runEnv) (outcome, error) {
	before := env.ch.Snapshots
	out := outcome{filesBefore: before, filesAfter: before, bytesBefore: env.ch.MetadataBytes, bytesAfter: env.ch.MetadataBytes}
	var rule retention
	var retain, expired int
	committed, retries, err := env.retry.run(ctx, env.ch.Tbl, func(ctx context.Context, t *table.Table) (*table.Table, error) {
		depth, err := protectedDepth(t)
		if err != nil {
			return nil, fmt.Errorf("find the snapshots floe's recovery needs: %w", err)
		}
		rule = retainCount(lineageTimes(t), time.Now(), env.s.retainLast, env.s.maxSnapshots, depth, env.s.maxAge)
		retain = rule.keep
		olderThan := env.s.maxAge
		if rule.byCount {
			olderThan = 0 // the newest retain are kept whatever their age, the rest go
		}
		txn := t.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithRetainLast(retain), table.WithOlderThan(olderThan), table.WithPostCommit(!env.dryRun)); err != nil {
			return nil, err
		}
		staged, err := txn.StagedTable()
		if err != nil {
			return nil, err
		}
		expired = len(t.Metadata().Snapshots()) - len(staged.Metadata().Snapshots())
		if env.dryRun || expired == 0 {
			return t, nil
		}
		return commitKeepingPostCommitErr(ctx, env, txn)
	})
	if err != nil {
		return out, err
	}
	// which says what the run expired: "older than 1h0m0s beyond the
	// newest 10" or "beyond the newest 400 (max-snapshots 400)".
	which := fmt.Sprintf("older than %s beyond the newest %d", env.s.maxAge, env.s.retainLast)
	floor := env.s.retainLast
	if rule.byCount {
		which = fmt.Sprintf("beyond the newest %d (max-snapshots %d)", env.s.maxSnapshots, env.s.maxSnapshots)
		floor = max(env.s.maxSnapshots, env.s.retainLast)
		if env.s.retainLast > env.s.maxSnapshots {
			which = fmt.Sprintf("beyond the newest %d (retain-last, over max-snapshots %d)", floor, env.s.maxSnapshots)
		}
	}
	protected := ""
	if retain > floor {
		protected = fmt.Sprintf(" (retaining %d to keep the newest floe connector snapshot)", retain)
	}
	switch {
	case env.dryRun:
		out.filesAfter = before - int64(expired)
		out.detail = fmt.Sprintf("dry run: would expire %d of %d snapshot(s) %s%s", expired, before, which, protected)
		return out, nil
	case expired == 0:
		out.detail = fmt.Sprintf("nothing to expire: %d snapshot(s), none %s%s", before, which, protected)
		return out, nil
	}
	out.filesAfter = int64(len(committed.Metadata().Snapshots()))
	if fs, err := committed.FS(ctx); err == nil {
		if n, err := fileSize(fs, committed.MetadataLocation()); err == nil {
			out.bytesAfter = n
		}
	}
	out.detail = fmt.Sprintf("expired %d snapshot(s) %s%s and the files only they referenced; %d conflict retr%s",
		expired, which, protected, retries, plural(retries, "y", "ies"))
	return out, nil
}

// lineageTimes are the commit times of the main branch's lineage, newest
// first, as iceberg-go's expiry walks it.
func lineageTimes(t *table.Table) []time.Time {
	head := t.CurrentSnapshot()
	if head == nil {
		return nil
	}
	var out []time.Time
	for _, s := range table.AncestorsOf(head.SnapshotID, t.Metadata().SnapshotByID) {
		out = append(out, time.UnixMilli(s.TimestampMs))
	}
	return out
}
