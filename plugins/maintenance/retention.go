package maintenance

import "time"

// Snapshot retention: how many snapshots expire-snapshots keeps, and how
// often it runs.
//
// Every commit rewrites the whole metadata.json, and metadata.json holds
// every snapshot the table keeps (about 1 KiB each with floe's offsets in
// the summary), so the number of snapshots, not their age, is what makes
// metadata large and commits slow. An age alone cannot bound it: an hour
// is 12 commits at 5-minute commits and 3,600 at 1 s (plus compaction's
// replace snapshots, about 0.7 per commit in the bench). So a snapshot is
// expired when it is beyond the newest retain-last and either older than
// max-age or beyond the newest max-snapshots:
//
//	kept = max(retain-last, protected, min(younger than max-age, max-snapshots))
//
// where protected reaches down to the oldest newest-snapshot of a floe
// connector (recovery reads its offsets). max-snapshots is one number for
// every commit interval, because the cost is per snapshot: at commits of
// 10 s and slower an hour holds fewer than it and the age decides; at
// faster commits the count does. What follows the commit interval is the
// cadence: expiry runs once the table holds an eighth more than
// max-snapshots, at most every cadenceCommits commit intervals, so
// between two runs the table gains about that eighth and its
// metadata.json stays near max-snapshots × 1.125 snapshots (a run that
// starts late, behind a compaction, lets in a little more).

const (
	// defaultMaxSnapshots is max-snapshots when not set. With an eighth
	// more between runs, about 450 snapshots at the most: the bench's
	// metadata.json at 1 s commits (8 source partitions) is about 0.93 KiB
	// a snapshot, so about 420 KiB, under the 512 KiB.
	defaultMaxSnapshots = 400
	// ageOnlySnapshotTrigger is expiry's snapshot-count trigger when
	// max-snapshots is 0 (the age alone decides).
	ageOnlySnapshotTrigger = 200
	// cadenceCommits is expiry's min interval in commit intervals: at
	// 1 s commits half a minute, in which the table gains 50 to 80
	// snapshots (30 commits and compaction's, which the head strategy
	// makes every second or two), about the eighth of max-snapshots the
	// trigger waits for. At a minute the
	// table outgrew it between runs: 568 snapshots and a 512.5 KiB
	// metadata.json in TestMaintenanceBoundsMetadata.
	cadenceCommits = 30
	// minExpiryInterval and maxExpiryInterval bound expiry's derived min
	// interval: an expiry run reads the manifest lists it drops, so not
	// more than 4 a minute; and not rarer than before the count existed.
	minExpiryInterval = 15 * time.Second
	maxExpiryInterval = 5 * time.Minute
)

// cadence is expiry's derived trigger.
type cadence struct {
	snapshotTrigger int64
	minInterval     time.Duration
}

// expiryCadence is the expire-snapshots task's snapshot-count trigger and
// min interval when the config leaves them empty: an eighth over
// maxSnapshots (ageOnlySnapshotTrigger without a count), and cadenceCommits
// commit intervals between minExpiryInterval and maxExpiryInterval
// (maxExpiryInterval when the commit interval is unknown, 0).
func expiryCadence(commitInterval time.Duration, maxSnapshots int) cadence {
	c := cadence{snapshotTrigger: ageOnlySnapshotTrigger, minInterval: maxExpiryInterval}
	if maxSnapshots > 0 {
		c.snapshotTrigger = int64(maxSnapshots + max(1, maxSnapshots/8))
	}
	if commitInterval > 0 {
		c.minInterval = min(max(cadenceCommits*commitInterval, minExpiryInterval), maxExpiryInterval)
	}
	return c
}

// retention is how many snapshots of a branch's lineage an expiry keeps.
type retention struct {
	// keep is the number of newest snapshots of the lineage kept.
	keep int
	// byCount: max-snapshots cut the snapshots younger than max-age, so
	// the expiry must drop young snapshots too (iceberg-go's older-than
	// 0); otherwise the age and retain-last alone decide.
	byCount bool
}

// retainCount applies the retention rule to a lineage whose snapshots
// were committed at the given times, newest first: keep the snapshots
// younger than maxAge, at most maxSnapshots of them (0: no limit), at
// least retainLast and at least protected (the depth of the oldest
// snapshot recovery needs).
func retainCount(lineage []time.Time, now time.Time, retainLast, maxSnapshots, protected int, maxAge time.Duration) retention {
	young := 0
	for _, ts := range lineage {
		if now.Sub(ts) > maxAge {
			break // iceberg-go walks the lineage the same way
		}
		young++
	}
	floor := max(retainLast, protected)
	if limit := max(maxSnapshots, floor); maxSnapshots > 0 && young > limit {
		return retention{keep: limit, byCount: true}
	}
	return retention{keep: floor}
}
