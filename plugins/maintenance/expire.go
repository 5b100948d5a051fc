package maintenance

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// expireSnapshots removes snapshots of the main branch beyond the newest
// retain-last that are older than max-age, and after the commit deletes
// the manifest lists, manifests and data files only they referenced.
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
	var retain, expired int
	committed, retries, err := env.retry.run(ctx, env.ch.Tbl, func(ctx context.Context, t *table.Table) (*table.Table, error) {
		depth, err := protectedDepth(t)
		if err != nil {
			return nil, fmt.Errorf("find the snapshots floe's recovery needs: %w", err)
		}
		retain = max(env.s.retainLast, depth)
		txn := t.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithRetainLast(retain), table.WithOlderThan(env.s.maxAge), table.WithPostCommit(!env.dryRun)); err != nil {
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
	protected := ""
	if retain > env.s.retainLast {
		protected = fmt.Sprintf(" (retaining %d to keep the newest floe connector snapshot)", retain)
	}
	switch {
	case env.dryRun:
		out.filesAfter = before - int64(expired)
		out.detail = fmt.Sprintf("dry run: would expire %d of %d snapshot(s) older than %s beyond the newest %d%s", expired, before, env.s.maxAge, env.s.retainLast, protected)
		return out, nil
	case expired == 0:
		out.detail = fmt.Sprintf("nothing to expire: %d snapshot(s), none both older than %s and beyond the newest %d%s", before, env.s.maxAge, env.s.retainLast, protected)
		return out, nil
	}
	out.filesAfter = int64(len(committed.Metadata().Snapshots()))
	if fs, err := committed.FS(ctx); err == nil {
		if n, err := fileSize(fs, committed.MetadataLocation()); err == nil {
			out.bytesAfter = n
		}
	}
	out.detail = fmt.Sprintf("expired %d snapshot(s) older than %s beyond the newest %d%s and the files only they referenced; %d conflict retr%s",
		expired, env.s.maxAge, env.s.retainLast, protected, retries, plural(retries, "y", "ies"))
	return out, nil
}
