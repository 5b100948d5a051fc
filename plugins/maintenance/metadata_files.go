package maintenance

import (
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// deleteMetadataFiles deletes old metadata.json versions of a table: the
// *.metadata.json files in the current version's folder that can never
// become current again (see superseded), but for the newest retain-last
// entries of its metadata log. A version written after the task loaded
// the table, or by a commit attempt still in flight, is never touched.
//
// Tables created by floe's sink set write.metadata.delete-after-commit
// .enabled, so each commit already deletes the versions that fall off the
// log; this task catches what that leaves (other writers, failed deletes)
// and keeps tables without the property bounded too.
func deleteMetadataFiles(ctx context.Context, env runEnv) (outcome, error) {
	tbl, err := env.cat.LoadTable(ctx, env.ch.Tbl.Identifier())
	if err != nil {
		return outcome{}, fmt.Errorf("reload table: %w", err)
	}
	meta := tbl.Metadata()
	retain := env.s.metadataRetain
	if retain <= 0 {
		retain = table.MetadataPreviousVersionsMaxDefault
		if v, err := strconv.Atoi(strings.TrimSpace(meta.Properties()[table.MetadataPreviousVersionsMaxKey])); err == nil && v > 0 {
			retain = v
		}
	}
	log := slices.Collect(meta.PreviousFiles())
	slices.SortFunc(log, func(a, b table.MetadataLogEntry) int { return int(a.TimestampMs - b.TimestampMs) })
	keep := map[string]bool{path.Base(tbl.MetadataLocation()): true}
	cutoff := time.UnixMilli(meta.LastUpdatedMillis())
	kept := log[max(0, len(log)-retain):]
	for _, e := range kept {
		keep[path.Base(e.MetadataFile)] = true
	}
	if len(kept) > 0 {
		cutoff = time.UnixMilli(kept[0].TimestampMs)
	}

	fs, err := tbl.FS(ctx)
	if err != nil {
		return outcome{}, err
	}
	lister, ok := fs.(iceio.ListableIO)
	if !ok {
		return outcome{}, fmt.Errorf("the table's file IO (%T) cannot list files", fs)
	}
	dir := tbl.MetadataLocation()[:strings.LastIndex(tbl.MetadataLocation(), "/")]
	currentVersion, _ := metadataVersion(path.Base(tbl.MetadataLocation()))
	type victim struct {
		path string
		size int64
	}
	var total, totalBytes int64
	var victims []victim
	var victimBytes int64
	rootSeen := false
	err = lister.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rootSeen {
				return iofs.SkipDir // only the metadata folder itself
			}
			rootSeen = true
			return nil
		}
		if !strings.HasSuffix(p, ".metadata.json") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // deleted meanwhile
		}
		total++
		totalBytes += info.Size()
		if keep[path.Base(p)] || !superseded(path.Base(p), currentVersion, info.ModTime(), cutoff) {
			return nil
		}
		victims = append(victims, victim{p, info.Size()})
		victimBytes += info.Size()
		return nil
	})
	if err != nil {
		return outcome{}, fmt.Errorf("list %s: %w", dir, err)
	}
	out := outcome{filesBefore: total, bytesBefore: totalBytes, filesAfter: total, bytesAfter: totalBytes}
	if env.dryRun {
		out.filesAfter, out.bytesAfter = total-int64(len(victims)), totalBytes-victimBytes
		out.detail = fmt.Sprintf("dry run: would delete %d of %d metadata.json file(s) (%s), keeping the current one and the newest %d", len(victims), total, bytesIEC(victimBytes), retain)
		return out, nil
	}
	var deleted, deletedBytes int64
	for _, v := range victims {
		if err := ctx.Err(); err != nil {
			break
		}
		if err := fs.Remove(v.path); err != nil {
			env.log.Debug("cannot delete an old metadata file", "file", v.path, "error", err)
			continue
		}
		deleted++
		deletedBytes += v.size
	}
	out.filesAfter, out.bytesAfter = total-deleted, totalBytes-deletedBytes
	out.detail = fmt.Sprintf("deleted %d of %d metadata.json file(s), keeping the current one and the newest %d", deleted, total, retain)
	return out, ctx.Err()
}

// mtimeSlack covers file systems whose modification times lag the clock
// (Linux stamps files from a coarse tick, milliseconds behind) and object
// stores whose clocks differ from the worker's.
const mtimeSlack = time.Minute

// superseded reports whether a metadata file that is not the current
// version nor one kept can never become current: its version number is
// below the current one's (a commit makes version n+1 from version n, so
// a lower number lost its race or was replaced). A name without a
// version number, as some catalogs write, must be older than the oldest
// version kept by more than mtimeSlack. Time alone is not enough: a
// version committed milliseconds after the task loaded the table can
// carry a modification time before that table's last update.
func superseded(name string, currentVersion int, modTime, cutoff time.Time) bool {
	if v, ok := metadataVersion(name); ok && currentVersion >= 0 {
		return v < currentVersion
	}
	return modTime.Before(cutoff.Add(-mtimeSlack))
}

// metadataVersion parses the version of a metadata file named
// "<version>-<uuid>.metadata.json", the name every Iceberg writer gives
// it; -1 and false for other names.
func metadataVersion(name string) (int, bool) {
	prefix, _, ok := strings.Cut(name, "-")
	if !ok || prefix == "" || strings.Trim(prefix, "0123456789") != "" {
		return -1, false
	}
	v, err := strconv.Atoi(prefix)
	if err != nil {
		return -1, false
	}
	return v, true
}
