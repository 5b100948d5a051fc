package maintenance

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
)

// kept mirrors iceberg-go's walk of a lineage (newest first) for a
// retention: snapshots are kept while they are among the newest keep or
// younger than the age (0 when the count decided).
func kept(lineage []time.Time, now time.Time, r retention, maxAge time.Duration) int {
	age := maxAge
	if r.byCount {
		age = 0
	}
	n := 0
	for i, ts := range lineage {
		if now.Sub(ts) > age && i >= r.keep {
			break
		}
		n++
	}
	return n
}

// steadyLineage is a lineage of commits every interval over span, newest
// first, the newest half an interval old.
func steadyLineage(now time.Time, interval, span time.Duration) []time.Time {
	var out []time.Time
	for age := interval / 2; age <= span; age += interval {
		out = append(out, now.Add(-age))
	}
	return out
}

// TestRetentionFollowsCommitInterval: with the defaults, a table fed at
// 300 ms or 1 s commits keeps max-snapshots (400) and expiry runs every 60
// commit intervals (at least 15 s); at 10 s commits the hour (360
// snapshots) is under the count and max-age decides; at 5-minute commits
// the last hour (12) is kept. Ingestion commits only: compaction's
// snapshots shorten the window of the fast ones further.
func TestRetentionFollowsCommitInterval(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		commit      string
		interval    time.Duration
		trigger     int64
		minInterval time.Duration
		keep        int
		byCount     bool
		oldest      time.Duration // age of the oldest snapshot kept
	}{
		{"300", 300 * time.Millisecond, 450, 15 * time.Second, 400, true, 119_850 * time.Millisecond},
		{"1000", time.Second, 450, 30 * time.Second, 400, true, 399_500 * time.Millisecond},
		{"10000", 10 * time.Second, 450, 5 * time.Minute, 360, false, 3595 * time.Second},
		{"300000", 5 * time.Minute, 450, 5 * time.Minute, 12, false, 57*time.Minute + 30*time.Second},
		{"", 10 * time.Second, 450, 5 * time.Minute, 360, false, 3595 * time.Second}, // not set: the host's default 10 s
	} {
		t.Run("commit.interval.ms="+c.commit, func(t *testing.T) {
			cfg := map[string]string{keyIcebergTables: "a.b"}
			if c.commit != "" {
				cfg[keyCommitInterval] = c.commit
			}
			s, err := parseSettings("orders", sdk.NewConfig(cfg))
			if err != nil {
				t.Fatal(err)
			}
			th := s.triggers[taskExpire]
			if s.maxSnapshots != 400 || s.maxAge != time.Hour || s.retainLast != 10 || th.snapshotCount != c.trigger || th.minInterval != c.minInterval {
				t.Errorf("max-snapshots %d, max-age %s, retain-last %d, trigger.snapshot-count %d, min-interval %s; want 400, 1h, 10, %d, %s",
					s.maxSnapshots, s.maxAge, s.retainLast, th.snapshotCount, th.minInterval, c.trigger, c.minInterval)
			}
			lineage := steadyLineage(now, c.interval, 3*time.Hour)
			r := retainCount(lineage, now, s.retainLast, s.maxSnapshots, 1, s.maxAge)
			n := kept(lineage, now, r, s.maxAge)
			if n != c.keep || r.byCount != c.byCount || now.Sub(lineage[n-1]) != c.oldest {
				t.Errorf("kept %d (by count %v), the oldest %s old; want %d (%v), %s", n, r.byCount, now.Sub(lineage[n-1]), c.keep, c.byCount, c.oldest)
			}
			// Between two runs the table gains at most an eighth of
			// max-snapshots in ingestion commits (compaction adds about
			// as many again at 1 s commits, bench-results/).
			if gained := int(th.minInterval / c.interval); c.byCount && gained > s.maxSnapshots/8 {
				t.Errorf("%d commits between expiry runs; want at most %d", gained, s.maxSnapshots/8)
			}
		})
	}
}

// TestRetentionUserValuesWin: set keys beat the derived ones; 0 turns the
// count off; the floor (retain-last, floe's protected snapshot) beats the
// count.
func TestRetentionUserValuesWin(t *testing.T) {
	parse := func(kv ...string) settings {
		t.Helper()
		cfg := map[string]string{keyIcebergTables: "a.b", keyCommitInterval: "1000"}
		for i := 0; i < len(kv); i += 2 {
			cfg[kv[i]] = kv[i+1]
		}
		s, err := parseSettings("orders", sdk.NewConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := parse(keyExpireMaxSnapshots, "100"); s.maxSnapshots != 100 || s.triggers[taskExpire].snapshotCount != 112 {
		t.Errorf("max-snapshots 100: %d, trigger %d; want 100, 112", s.maxSnapshots, s.triggers[taskExpire].snapshotCount)
	}
	if s := parse(keyExpireMaxSnapshots, "0"); s.maxSnapshots != 0 || s.triggers[taskExpire].snapshotCount != ageOnlySnapshotTrigger {
		t.Errorf("max-snapshots 0: %d, trigger %d; want 0, %d", s.maxSnapshots, s.triggers[taskExpire].snapshotCount, ageOnlySnapshotTrigger)
	}
	s := parse("maintenance.expire-snapshots.trigger.snapshot-count", "0", "maintenance.expire-snapshots.min-interval.ms", "2000", keyExpireMaxSnapshots, " ")
	if th := s.triggers[taskExpire]; th.snapshotCount != 0 || th.minInterval != 2*time.Second || s.maxSnapshots != defaultMaxSnapshots {
		t.Errorf("set trigger and min interval, blank max-snapshots: %+v, max-snapshots %d", th, s.maxSnapshots)
	}
	if s, err := parseSettings("orders", sdk.NewConfig(map[string]string{keyIcebergTables: "a.b", keyCommitIntervalAlt: "100"})); err != nil || s.triggers[taskExpire].minInterval != minExpiryInterval {
		t.Errorf("the alias at 100 ms: min interval %s (%v); want %s", s.triggers[taskExpire].minInterval, err, minExpiryInterval)
	}
	if th := parse().triggers[taskMetadataFiles]; th.commitCount != 300 || th.minInterval != 5*time.Minute || th.interval != time.Hour {
		t.Errorf("delete-metadata-files triggers %+v", th)
	}

	now := time.Unix(1_800_000_000, 0)
	lineage := steadyLineage(now, time.Second, time.Hour)
	for _, c := range []struct {
		name                         string
		retainLast, maxSnap, protect int
		maxAge                       time.Duration
		want                         int
		byCount                      bool
	}{
		{"the count cuts the young", 10, 400, 1, time.Hour, 400, true},
		{"no count: the age alone", 10, 0, 1, time.Hour, 3600, false},
		{"the age is shorter than the count", 10, 400, 1, time.Minute, 60, false},
		{"floe's snapshot deeper than the count", 10, 400, 450, time.Hour, 450, true},
		{"retain-last over the count", 500, 400, 1, time.Hour, 500, true},
		{"everything old: retain-last", 10, 400, 1, 0, 10, false},
		{"fewer snapshots than the count", 10, 5000, 1, time.Hour, 3600, false},
	} {
		r := retainCount(lineage, now, c.retainLast, c.maxSnap, c.protect, c.maxAge)
		if n := kept(lineage, now, r, c.maxAge); n != c.want || r.byCount != c.byCount {
			t.Errorf("%s: kept %d (by count %v); want %d (%v)", c.name, n, r.byCount, c.want, c.byCount)
		}
	}
}

// TestExpireByCount runs expire-snapshots on a real table with young
// snapshots only: max-snapshots bounds them, the newest floe snapshot
// stays even below the count, and metadata.json shrinks.
func TestExpireByCount(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	orders := newWriter(cat, "db.events", "orders")
	n := fill(t, orders, 30, 2, 2)
	tk := b.openTask(t, b.config("db.events", append(only(), keyExpireMaxSnapshots, "12")...))
	res := cycle(t, tk, sdk.CycleRequest{Force: []string{taskExpire}})
	r := runsOf(res.Runs, taskExpire)[0]
	t.Logf("%s", r.Detail)
	tbl := loadTable(t, cat, "db.events")
	if got := len(tbl.Metadata().Snapshots()); got != 12 || r.FilesBefore != 30 || r.FilesAfter != 12 || r.BytesAfter >= r.BytesBefore {
		t.Fatalf("snapshots %d (run %d → %d, metadata.json %d → %d bytes); want 30 → 12, smaller", got, r.FilesBefore, r.FilesAfter, r.BytesBefore, r.BytesAfter)
	}
	scan(t, cat, "db.events").checkExactly(t, n)

	// Another writer commits above orders' newest snapshot: it stays.
	other := newWriter(cat, "db.events", "")
	other.offset = n
	for i := range 15 {
		if err := other.commit(context.Background(), rowsFor(n+int64(i)*2, 2, 2)); err != nil {
			t.Fatal(err)
		}
	}
	n += 30
	r = runsOf(cycle(t, tk, sdk.CycleRequest{Force: []string{taskExpire}}).Runs, taskExpire)[0]
	t.Logf("%s", r.Detail)
	if got := len(loadTable(t, cat, "db.events").Metadata().Snapshots()); got != 16 {
		t.Fatalf("snapshots %d; want 16: the 15 above the newest orders snapshot and it", got)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
}

// TestMetadataStaysBoundedUnderCommits commits 240 times to a real table
// (SQLite catalog, the sink's table properties) with the plugin's cycle
// after every 4 commits and max-snapshots scaled down to 40 (trigger 45,
// min interval off): the snapshots stop at the trigger plus the commits
// between two cycles, metadata.json stops growing with them, and the
// metadata folder holds write.metadata.previous-versions-max (50) + 1
// files, as each commit deletes what it pushed off the log.
func TestMetadataStaysBoundedUnderCommits(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	tk := b.openTask(t, b.config("db.events", append(only(taskExpire, taskMetadataFiles),
		keyCommitInterval, "1000", keyExpireMaxSnapshots, "40", "maintenance.expire-snapshots.min-interval.ms", "0")...))
	const commits, every, trigger = 240, 4, 45
	var n int64
	var peakSnaps, peakFiles int
	var peakBytes, bytesAtTrigger int64
	for i := 1; i <= commits; i++ {
		if err := w.commit(context.Background(), rowsFor(n, 2, 2)); err != nil {
			t.Fatal(err)
		}
		n += 2
		if i%every == 0 {
			cycle(t, tk, sdk.CycleRequest{})
		}
		tbl := loadTable(t, cat, "db.events")
		snaps := len(tbl.Metadata().Snapshots())
		st, err := os.Stat(localPath(tbl.MetadataLocation()))
		if err != nil {
			t.Fatal(err)
		}
		files := len(filesUnder(t, filepath.Dir(localPath(tbl.MetadataLocation())), ".metadata.json"))
		if snaps == trigger && bytesAtTrigger == 0 {
			bytesAtTrigger = st.Size()
		}
		peakSnaps, peakFiles, peakBytes = max(peakSnaps, snaps), max(peakFiles, files), max(peakBytes, st.Size())
	}
	t.Logf("%d commits: peak %d snapshots, metadata.json %d bytes (%d at %d snapshots), %d metadata.json files",
		commits, peakSnaps, peakBytes, bytesAtTrigger, trigger, peakFiles)
	if peakSnaps > trigger+every {
		t.Errorf("peak %d snapshots; want at most %d (the trigger and the commits between two cycles)", peakSnaps, trigger+every)
	}
	if limit := bytesAtTrigger * (trigger + every) / trigger; bytesAtTrigger == 0 || peakBytes > limit {
		t.Errorf("metadata.json peaked at %d bytes; want at most %d, %d snapshots' worth", peakBytes, limit, trigger+every)
	}
	if peakFiles > 51 {
		t.Errorf("%d metadata.json files; want at most 51 (previous-versions-max 50 and the current one)", peakFiles)
	}
	scan(t, cat, "db.events").checkExactly(t, n)
}
