package maintenance

import (
	"testing"
	"time"
)

// TestTriggersFireExactlyAtThresholds checks each threshold one below and
// at its value, the min interval, and the interval trigger.
func TestTriggersFireExactlyAtThresholds(t *testing.T) {
	now := time.Now()
	base := TableChange{MaxPartitionFiles: 9, SmallBytes: 99, DeleteFiles: 4, Snapshots: 19, Manifests: 29, NewCommits: 49}
	th := thresholds{commitCount: 50, dataFileCount: 10, smallFileBytes: 100, deleteFileCount: 5, snapshotCount: 20, manifestCount: 30}
	if d := decide(th, base, time.Time{}, now); d.due {
		t.Fatalf("due one below every threshold: %s", d.reason)
	}
	cases := []struct {
		bump func(*TableChange)
		want string
	}{
		{func(c *TableChange) { c.NewCommits = 50 }, "commit-count 50 ≥ 50"},
		{func(c *TableChange) { c.MaxPartitionFiles = 10 }, "data-file-count 10 ≥ 10"},
		{func(c *TableChange) { c.SmallBytes = 100 }, "small-file-bytes 100 ≥ 100"},
		{func(c *TableChange) { c.DeleteFiles = 5 }, "delete-file-count 5 ≥ 5"},
		{func(c *TableChange) { c.Snapshots = 20 }, "snapshot-count 20 ≥ 20"},
		{func(c *TableChange) { c.Manifests = 30 }, "manifest-count 30 ≥ 30"},
	}
	for _, c := range cases {
		ch := base
		c.bump(&ch)
		if d := decide(th, ch, time.Time{}, now); !d.due || d.reason != c.want {
			t.Errorf("want due %q, got due=%v %q", c.want, d.due, d.reason)
		}
	}
	// A zero threshold is off.
	if d := decide(thresholds{}, TableChange{MaxPartitionFiles: 1 << 30}, time.Time{}, now); d.due {
		t.Errorf("all thresholds off, yet due: %s", d.reason)
	}

	// Min interval: not before it has passed since the last run.
	th.minInterval = time.Minute
	ch := base
	ch.MaxPartitionFiles = 57
	if d := decide(th, ch, now.Add(-59*time.Second), now); d.due {
		t.Errorf("due inside the min interval: %s", d.reason)
	}
	if d := decide(th, ch, now.Add(-time.Minute), now); !d.due || d.reason != "data-file-count 57 ≥ 10" {
		t.Errorf("not due once the min interval passed: %v %s", d.due, d.reason)
	}

	// Interval: due when it never ran, and once the interval passed.
	iv := thresholds{interval: time.Hour}
	if d := decide(iv, base, time.Time{}, now); !d.due {
		t.Errorf("interval trigger: a task that never ran is not due: %s", d.reason)
	}
	if d := decide(iv, base, now.Add(-59*time.Minute), now); d.due {
		t.Errorf("interval trigger fired early: %s", d.reason)
	}
	if d := decide(iv, base, now.Add(-time.Hour), now); !d.due {
		t.Errorf("interval trigger did not fire after an hour: %s", d.reason)
	}
}

// TestCommitCountSinceLastRun counts commits after the last run from the
// table's snapshots, leaving out maintenance's own.
func TestCommitCountSinceLastRun(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", nil)
	w := newWriter(cat, "db.events", "orders")
	fill(t, w, 5, 2, 2)
	// The mark is the fifth commit's own time: commitsSince counts the
	// snapshots strictly after it.
	mark := time.UnixMilli(shape(t, cat, "db.events").Tbl.CurrentSnapshot().TimestampMs)
	fill(t, w, 3, 2, 2)
	ch := shape(t, cat, "db.events")
	if s := ch.Tbl.Metadata().Snapshots()[5]; s.TimestampMs <= mark.UnixMilli() {
		t.Fatalf("the sixth commit's time %d is not after the fifth's %d", s.TimestampMs, mark.UnixMilli())
	}
	if n := commitsSince(ch, time.Time{}); n != 8 {
		t.Errorf("commits since never: %d", n)
	}
	if n := commitsSince(ch, mark); n != 3 {
		t.Errorf("commits since the mark: %d", n)
	}
	tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData), "maintenance.rewrite-data-files.min-input-files", "2")...))
	if r := runsOf(cycle(t, tk, forceReq(taskRewriteData)).Runs, taskRewriteData); len(r) != 1 || r[0].FilesAfter != 2 {
		t.Fatalf("compaction: %+v", r)
	}
	if n := commitsSince(shape(t, cat, "db.events"), time.Time{}); n != 8 {
		t.Errorf("commits after compaction: %d; the replace snapshot must not count", n)
	}
}
