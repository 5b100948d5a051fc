package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// deleteOrphans deletes files under the table's location that no snapshot
// and no metadata version references and that are older than the safety
// age. The age covers every file that may still become referenced: data
// files of a checkpoint not committed yet and files of commits racing
// this one are minutes old at most. The table is reloaded first, so the
// referenced set is as fresh as it can be.
func deleteOrphans(ctx context.Context, env runEnv) (outcome, error) {
	dry := env.dryRun || env.s.orphanDryRun
	tbl, err := env.cat.LoadTable(ctx, env.ch.Tbl.Identifier())
	if err != nil {
		return outcome{}, fmt.Errorf("reload table: %w", err)
	}
	var res table.OrphanCleanupResult
	for attempt := 1; ; attempt++ {
		res, err = tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(env.s.orphanAge), table.WithDryRun(dry))
		// The walk fails when a file vanishes under it (a commit deleting
		// an old metadata.json): walk again.
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == 5 {
			break
		}
	}
	if err != nil {
		return outcome{}, err
	}
	out := outcome{filesBefore: int64(len(res.OrphanFiles)), bytesBefore: res.TotalSizeBytes}
	deleted := map[string]bool{}
	for _, p := range res.DeletedFiles {
		deleted[p] = true
	}
	var deletedBytes int64
	for _, f := range res.OrphanFiles {
		if deleted[f.Path] {
			deletedBytes += f.SizeBytes
		}
	}
	out.filesAfter = out.filesBefore - int64(len(deleted))
	out.bytesAfter = out.bytesBefore - deletedBytes
	switch {
	case len(res.OrphanFiles) == 0:
		out.detail = fmt.Sprintf("no orphan files older than %s", env.s.orphanAge)
	case dry:
		out.detail = fmt.Sprintf("dry run: %d orphan file(s) older than %s (%s): %s", len(res.OrphanFiles), env.s.orphanAge, bytesIEC(res.TotalSizeBytes), listSome(res.OrphanFileLocations, 10))
	default:
		out.detail = fmt.Sprintf("deleted %d of %d orphan file(s) older than %s (%s)", len(deleted), len(res.OrphanFiles), env.s.orphanAge, bytesIEC(deletedBytes))
	}
	return out, nil
}

// listSome prints up to n items and how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}
