package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// rewriteManifests rewrites the current snapshot's data manifests into as
// few manifests of the target size as they fill, so planning a scan opens
// few files. It changes no data file; a run that would change nothing is
// skipped (iceberg-go's IsNoOp).
func rewriteManifests(ctx context.Context, env runEnv) (outcome, error) {
	tbl := env.ch.Tbl
	target := env.s.manifestTarget
	if target <= 0 {
		target = table.ManifestTargetSizeBytesDefault
		if v, err := strconv.ParseInt(strings.TrimSpace(tbl.Properties()[table.ManifestTargetSizeBytesKey]), 10, 64); err == nil && v > 0 {
			target = v
		}
	}
	before, beforeBytes, small, err := manifestCounts(ctx, tbl, target)
	if err != nil {
		return outcome{}, err
	}
	out := outcome{filesBefore: before, bytesBefore: beforeBytes, filesAfter: before, bytesAfter: beforeBytes}
	if env.dryRun {
		out.detail = fmt.Sprintf("dry run: %d manifest(s), %d under the target %s", before, small, bytesIEC(target))
		return out, nil
	}
	var res *table.RewriteManifestsResult
	committed, retries, err := env.retry.run(ctx, tbl, func(ctx context.Context, t *table.Table) (*table.Table, error) {
		txn := t.NewTransaction()
		r, err := txn.RewriteManifests(ctx, table.WithManifestTargetSize(target))
		if err != nil {
			return nil, err
		}
		res = r
		if r.IsNoOp() {
			return t, nil
		}
		return commitKeepingPostCommitErr(ctx, env, txn)
	})
	if err != nil {
		return out, err
	}
	if res == nil || res.IsNoOp() {
		reason := "nothing to rewrite"
		if res != nil {
			reason = res.NoOpReason.String()
		}
		out.detail = fmt.Sprintf("no-op (%s): %d manifest(s)", reason, before)
		return out, nil
	}
	after, afterBytes, _, err := manifestCounts(ctx, committed, target)
	if err != nil {
		return out, err
	}
	out.filesAfter, out.bytesAfter = after, afterBytes
	out.detail = fmt.Sprintf("rewrote %d manifest(s) into %d; %d manifest(s) now, %d conflict retr%s",
		len(res.RewrittenManifests), len(res.AddedManifests), after, retries, plural(retries, "y", "ies"))
	return out, nil
}

// manifestCounts counts the current snapshot's manifests, their bytes and
// the data manifests under target.
func manifestCounts(ctx context.Context, tbl *table.Table, target int64) (n, bytes, small int64, err error) {
	head := tbl.CurrentSnapshot()
	if head == nil {
		return 0, 0, 0, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	manifests, err := head.Manifests(fs)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read manifest list: %w", err)
	}
	for _, m := range manifests {
		n++
		bytes += m.Length()
		if m.ManifestContent() == iceberg.ManifestContentData && m.Length() < target {
			small++
		}
	}
	return n, bytes, small, nil
}

// commitKeepingPostCommitErr commits txn. A post-commit step that failed
// after the catalog accepted the commit (deleting files of expired
// snapshots, say) does not undo it: the error is logged and the committed
// table returned. A file that was already gone when the step deleted it
// is deleted all the same (an earlier expiry deleted it: a data file a
// retained snapshot marks DELETED goes with the first expiry, and every
// later expiry that finds it in an expired manifest deletes it again).
// Those are counted at debug level; only the other failures are warned
// about. (The table's IO mostly spares this: smallFileIO's bulk delete,
// like an object store's, counts a missing file as deleted; iceberg-go
// deletes one by one only what a bulk delete failed on.)
func commitKeepingPostCommitErr(ctx context.Context, env runEnv, txn *table.Transaction) (*table.Table, error) {
	out, err := txn.Commit(ctx)
	if err != nil && out != nil {
		gone, rest := splitNotExist(err)
		if gone > 0 {
			env.log.Debug("post-commit cleanup: files already deleted, nothing to do", "table", env.ch.Table, "files", gone)
		}
		if rest != nil {
			env.log.Warn("committed, but a post-commit step failed (orphan cleanup deletes what it left)", "table", env.ch.Table, "error", rest)
		}
		return out, nil
	}
	return out, err
}

// splitNotExist takes the errors that say a file does not exist out of
// err (iceberg-go joins one error per file it could not delete), counts
// them, and returns the others joined, or nil.
func splitNotExist(err error) (gone int, rest error) {
	var others []error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				walk(inner)
			}
			return
		}
		if errors.Is(e, fs.ErrNotExist) {
			gone++
			return
		}
		others = append(others, e)
	}
	walk(err)
	return gone, errors.Join(others...)
}
