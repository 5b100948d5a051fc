package maintenance

import (
	"fmt"
	"time"
)

// decision is the trigger manager's answer for one task on one table.
type decision struct {
	due bool
	// reason names the threshold that was met ("data-file-count 57 ≥ 50"),
	// or why the task is not due.
	reason string
}

// decide is the trigger manager: a task is due on a table when any of its
// enabled thresholds is met by the table's change and at least its min
// interval has passed since its last run there (last is zero when it
// never ran). Thresholds are checked in a fixed order and the first one
// met is the reason.
func decide(th thresholds, ch TableChange, last time.Time, now time.Time) decision {
	if !last.IsZero() && th.minInterval > 0 {
		if since := now.Sub(last); since < th.minInterval {
			return decision{reason: fmt.Sprintf("min-interval: last run %s ago < %s", roundDur(since), th.minInterval)}
		}
	}
	type check struct {
		name           string
		value, trigger int64
	}
	checks := []check{
		{"commit-count", commitsSince(ch, last), th.commitCount},
		{"data-file-count", ch.MaxPartitionFiles, th.dataFileCount},
		{"small-file-count", ch.MaxPartitionSmallFiles, th.smallFileCount},
		{"small-file-bytes", ch.SmallBytes, th.smallFileBytes},
		{"delete-file-count", ch.DeleteFiles, th.deleteFileCount},
		{"snapshot-count", ch.Snapshots, th.snapshotCount},
		{"manifest-count", ch.Manifests, th.manifestCount},
		{"idle-partitions", int64(len(ch.Idle)), th.idlePartitions},
	}
	for _, c := range checks {
		if c.trigger > 0 && c.value >= c.trigger {
			return decision{due: true, reason: fmt.Sprintf("%s %d ≥ %d", c.name, c.value, c.trigger)}
		}
	}
	if th.interval > 0 {
		if last.IsZero() {
			return decision{due: true, reason: fmt.Sprintf("interval %s: never ran", th.interval)}
		}
		if since := now.Sub(last); since >= th.interval {
			return decision{due: true, reason: fmt.Sprintf("interval %s ≥ %s", roundDur(since), th.interval)}
		}
	}
	return decision{reason: "no threshold met"}
}

// commitsSince counts the table's commits after t (all of them when t is
// zero), leaving out maintenance's own snapshots. It reads the snapshots
// in the table's metadata, so it survives restarts; snapshots expired
// since are not counted.
func commitsSince(ch TableChange, t time.Time) int64 {
	if ch.Tbl == nil {
		return ch.NewCommits
	}
	var n int64
	for _, s := range ch.Tbl.Metadata().Snapshots() {
		if isMaintenanceSnapshot(&s) {
			continue
		}
		if t.IsZero() || s.TimestampMs > t.UnixMilli() {
			n++
		}
	}
	return n
}

func roundDur(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
