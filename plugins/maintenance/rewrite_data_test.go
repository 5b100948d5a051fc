package maintenance

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

// TestCompactionKeepsRows: 200 tiny floe commits over 4 partitions, then
// compaction: every partition ends with one file, and the rows and their
// checksum are the same.
func TestCompactionKeepsRows(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend) {
		cat := b.catalog(t)
		createTable(t, cat, "db.events", nil)
		w := newWriter(cat, "db.events", "orders")
		n := fill(t, w, 200, 5, 4)
		before := scan(t, cat, "db.events")
		before.checkExactly(t, n)
		sh := shape(t, cat, "db.events")
		if sh.DataFiles != 800 || sh.MaxPartitionFiles != 200 {
			t.Fatalf("before: %d files, %d in the fullest partition; want 800 and 200", sh.DataFiles, sh.MaxPartitionFiles)
		}

		tk := b.openTask(t, b.config("db.events"))
		res := cycle(t, tk, sdk.CycleRequest{})
		runs := runsOf(res.Runs, taskRewriteData)
		if len(runs) != 1 {
			t.Fatalf("rewrite runs = %+v", res.Runs)
		}
		r := runs[0]
		if r.Trigger != "small-file-count 200 ≥ 4" || r.FilesBefore != 800 || r.FilesAfter != 4 {
			t.Errorf("run = %+v; want trigger small-file-count 200 ≥ 4, files 800 → 4", r)
		}
		// The cycle reports the table as it left it.
		if len(res.Tables) != 1 || res.Tables[0].Table != "db.events" || res.Tables[0].DataFiles != 4 || res.Tables[0].MaxPartitionFiles != 1 {
			t.Errorf("cycle's tables = %+v; want db.events with 4 files, 1 in the fullest partition", res.Tables)
		}
		t.Logf("compaction: %s", r.Detail)
		// Four groups in partial-progress.max-commits (1) commit.
		if !strings.Contains(r.Detail, "4 of 4 partition group(s), 1 commit(s)") {
			t.Errorf("detail %q; want 4 groups in 1 commit", r.Detail)
		}

		after := scan(t, cat, "db.events")
		after.checkExactly(t, n)
		if after.checksum != before.checksum {
			t.Fatalf("checksum %x → %x", before.checksum, after.checksum)
		}
		sh = shape(t, cat, "db.events")
		if sh.DataFiles != 4 || sh.MaxPartitionFiles != 1 {
			t.Fatalf("after: %d files, %d in the fullest partition; want 4 and 1", sh.DataFiles, sh.MaxPartitionFiles)
		}
		// Nothing is due right after: the partitions are compact and the
		// min interval has not passed.
		if res := cycle(t, tk, sdk.CycleRequest{}); len(runsOf(res.Runs, taskRewriteData)) != 0 {
			t.Errorf("second cycle rewrote again: %+v", res.Runs)
		}
	})
}

// TestCompactionDryRunCommitsNothing plans without writing.
func TestCompactionDryRunCommitsNothing(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", nil)
	fill(t, newWriter(cat, "db.events", "orders"), 30, 4, 2)
	before := shape(t, cat, "db.events")
	tk := b.openTask(t, b.config("db.events"))
	res := cycle(t, tk, sdk.CycleRequest{DryRun: true, Force: []string{"all"}})
	if len(res.Runs) != len(allTasks) {
		t.Fatalf("runs = %+v", res.Runs)
	}
	after := shape(t, cat, "db.events")
	if after.Tbl.CurrentSnapshot().SnapshotID != before.Tbl.CurrentSnapshot().SnapshotID || after.DataFiles != before.DataFiles ||
		after.Snapshots != before.Snapshots || after.Tbl.MetadataLocation() != before.Tbl.MetadataLocation() {
		t.Fatalf("a dry run changed the table")
	}
	if r := runsOf(res.Runs, taskRewriteData)[0]; r.FilesAfter != 2 {
		t.Errorf("dry run estimate: %+v", r)
	}
}

// TestCompactionRacingIngestion: a writer commits every 50–100 ms while
// compaction runs again and again. Compaction still commits (after
// retries), the writer never fails (its own retries allowed), and no row
// is lost or duplicated.
func TestCompactionRacingIngestion(t *testing.T) {
	runBackends(t, func(t *testing.T, b backend) {
		cat := b.catalog(t)
		createTable(t, cat, "db.events", sinkTableProps)
		w := newWriter(cat, "db.events", "orders")
		next := fill(t, w, 100, 3, 3)

		ctx, stop := context.WithCancel(context.Background())
		var written atomic.Int64
		written.Store(next)
		var ingestErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			for ctx.Err() == nil {
				n := written.Load()
				// stop ends the loop, not a commit in flight.
				if err := w.commit(context.WithoutCancel(ctx), rowsFor(n, 3, 3)); err != nil {
					ingestErr = err
					return
				}
				written.Add(3)
				pause := time.Duration(50+rand.IntN(51)) * time.Millisecond
				if raceDetector {
					// Staging a rewrite is several times slower under -race
					// than an append is; keep the ratio of the real thing.
					pause *= 5
				}
				time.Sleep(pause)
			}
		})

		tk := b.openTask(t, b.config("db.events",
			"maintenance.rewrite-data-files.min-interval.ms", "0",
			"maintenance.rewrite-data-files.trigger.data-file-count", "5",
			"maintenance.rewrite-data-files.min-input-files", "2",
			// The three partitions' groups at once, each committed by
			// its worker while the others still rewrite.
			"maintenance.rewrite-data-files.max-concurrent-groups", "3"))
		var commits, retries int
		// At least 8 s of racing and 3 compactions, whichever is later.
		start := time.Now()
		for time.Since(start) < 8*time.Second || (commits < 3 && time.Since(start) < 90*time.Second) {
			res := cycle(t, tk, sdk.CycleRequest{Force: []string{taskRewriteData}})
			for _, r := range runsOf(res.Runs, taskRewriteData) {
				if r.FilesAfter < r.FilesBefore {
					commits++
				}
				t.Logf("%s", r.Detail)
			}
		}
		stop()
		wg.Wait()
		if ingestErr != nil {
			t.Fatalf("ingestion failed: %v", ingestErr)
		}
		retries = w.conflicts
		if commits < 2 {
			t.Fatalf("compaction committed %d times while ingestion ran; want several", commits)
		}
		c := scan(t, cat, "db.events")
		c.checkExactly(t, written.Load())
		id, _ := parseTableName("db.events")
		tbl, _ := cat.LoadTable(context.Background(), id)
		replaces := 0
		for _, s := range tbl.Metadata().Snapshots() {
			if s.Summary != nil && s.Summary.Operation == table.OpReplace {
				replaces++
			}
		}
		t.Logf("%d rows, %d compaction runs that shrank the table, %d replace snapshots, ingestion conflicts retried: %d", c.rows, commits, replaces, retries)
		// Bounded: after a final compaction every partition holds one file.
		cycle(t, tk, sdk.CycleRequest{Force: []string{taskRewriteData}})
		if sh := shape(t, cat, "db.events"); sh.MaxPartitionFiles > 1 {
			t.Fatalf("after the final compaction the fullest partition holds %d files", sh.MaxPartitionFiles)
		}
		scan(t, cat, "db.events").checkExactly(t, written.Load())
	})
}

// TestIntermediateCompression: a tiered run writes its output, still a
// small file a later run merges again, with intermediate-compression; a
// forced run writes final files with the table's codec.
func TestIntermediateCompression(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps) // zstd
	w := newWriter(cat, "db.events", "orders")
	fill(t, w, 10, 50, 1)
	tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		// tiered rewrites the small files; head would join them by
		// copying, which keeps their codec.
		keyStrategy, strategyTiered,
		"maintenance.rewrite-data-files.intermediate-compression", "snappy",
		"maintenance.rewrite-data-files.min-interval.ms", "0")...))
	codecs := func() map[string]int {
		out := map[string]int{}
		for _, f := range liveFiles(t, cat, "db.events") {
			out[parquetCodec(t, f)]++
		}
		return out
	}
	runs := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData)
	if len(runs) != 1 || runs[0].FilesAfter != 1 {
		t.Fatalf("tiered runs = %+v; want one leaving one file", runs)
	}
	if got := codecs(); got["SNAPPY"] != 1 || len(got) != 1 {
		t.Fatalf("codecs after the tiered run: %v; want the one file in SNAPPY", got)
	}
	fill(t, w, 4, 50, 1) // ids from 0 again: count the rows below
	runs = runsOf(cycle(t, tk, sdk.CycleRequest{Force: []string{taskRewriteData}}).Runs, taskRewriteData)
	if len(runs) != 1 || runs[0].FilesAfter != 1 {
		t.Fatalf("forced runs = %+v; want one leaving one file", runs)
	}
	if got := codecs(); got["ZSTD"] != 1 || len(got) != 1 {
		t.Fatalf("codecs after the forced run: %v; want the one file in the table's ZSTD", got)
	}
	if rows := scan(t, cat, "db.events").rows; rows != 700 {
		t.Fatalf("%d rows after both runs; want 700", rows)
	}
}

// liveFiles are the paths of the table's live data files.
func liveFiles(t testing.TB, cat catalog.Catalog, name string) []string {
	t.Helper()
	tasks, err := loadTable(t, cat, name).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	return out
}

// openParquet opens a local Parquet file's footer for the test's length.
func openParquet(t testing.TB, location string) *file.Reader {
	t.Helper()
	rdr, err := file.OpenParquetFile(strings.TrimPrefix(location, "file://"), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdr.Close() })
	return rdr
}

// parquetCodec is the codec of a local Parquet file's first column chunk.
func parquetCodec(t testing.TB, location string) string {
	t.Helper()
	col, err := openParquet(t, location).MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	return col.Compression().String()
}

// TestReplanMergesArrivals: files committed while a run's group is still
// being rewritten are merged by the same run, in groups of their own that
// start while the first group holds the only slot, when replan-interval is
// on; with it off the run never looks again and they wait for the next
// run. The run's ticks are the test's: it ticks once the arrivals are
// committed, so nothing depends on how long a step takes.
func TestReplanMergesArrivals(t *testing.T) {
	for _, tc := range []struct {
		replan      string
		wantFiles   int64 // per partition after the one run
		wantTickers int32 // re-plan tickers the run started
	}{
		{"100", 2, 1}, // the first plan's output and the arrivals' merge
		{"0", 5, 0},   // the first plan's output and the 4 arrivals
	} {
		t.Run("replan-interval="+tc.replan, func(t *testing.T) {
			b := sqliteBackend(t)
			cat := b.catalog(t)
			createTable(t, cat, "db.events", sinkTableProps)
			w := newWriter(cat, "db.events", "orders")
			// 6 files in one partition: the first plan is one group,
			// which holds the only slot (a second small group of the
			// first plan would take the extra slot itself).
			next := fill(t, w, 6, 20, 1)

			tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
				// tiered: every group is rewritten through the compact seam
				// the test holds (head would join these files by copying).
				keyStrategy, strategyTiered,
				"maintenance.rewrite-data-files.min-interval.ms", "0",
				"maintenance.rewrite-data-files.trigger.data-file-count", "5",
				// 4: a re-plan takes a partition's arrivals only once all
				// four are in.
				"maintenance.rewrite-data-files.min-input-files", "4",
				// One slot, held by the first group: a re-planned group
				// starts in the extra slot.
				"maintenance.rewrite-data-files.max-concurrent-groups", "1",
				"maintenance.rewrite-data-files.replan-interval.ms", tc.replan)...))
			// The run's first group waits until the arrivals are committed
			// and, with re-plans on, a re-planned group started.
			var calls, tickers atomic.Int32
			started, replanned, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
			ticks := make(chan time.Time)
			compact := tk.seams.compact
			tk.seams.compact = func(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, opts ...table.CompactionGroupOption) (table.CompactionGroupResult, error) {
				switch calls.Add(1) {
				case 1:
					close(started)
					<-release
				case 2: // a re-planned group, while the only slot is held
					close(replanned)
				}
				return compact(ctx, tbl, g, opts...)
			}
			tk.seams.ticker = func(time.Duration) (<-chan time.Time, func()) {
				tickers.Add(1)
				return ticks, func() {}
			}
			go func() {
				defer close(release)
				<-started
				for range 4 {
					if err := w.commit(context.Background(), rowsFor(next, 20, 1)); err != nil {
						t.Error(err)
						return
					}
					next += 20
				}
				if tc.replan == "0" {
					return // no ticker: nothing would receive a tick
				}
				ticks <- time.Now()
				select {
				case <-replanned:
				case <-time.After(time.Minute):
					t.Error("no re-planned group started a minute after the tick")
				}
			}()

			runs := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData)
			if len(runs) != 1 {
				t.Fatalf("runs = %+v; want one", runs)
			}
			t.Logf("%s", runs[0].Detail)
			if got := tickers.Load(); got != tc.wantTickers {
				t.Fatalf("replan-interval %s started %d re-plan ticker(s); want %d", tc.replan, got, tc.wantTickers)
			}
			sh := shape(t, cat, "db.events")
			if tc.replan != "0" && runs[0].FilesAfter != sh.DataFiles {
				t.Fatalf("the run reports %d files after; the table holds %d", runs[0].FilesAfter, sh.DataFiles)
			}
			if got := sh.MaxPartitionFiles; got != tc.wantFiles {
				t.Fatalf("fullest partition holds %d files after the run; want %d", got, tc.wantFiles)
			}
			if replans := strings.Contains(runs[0].Detail, "re-plan"); replans != (tc.replan != "0") {
				t.Fatalf("detail %q: re-plan mentioned = %v", runs[0].Detail, replans)
			}
			scan(t, cat, "db.events").checkExactly(t, next)
		})
	}
}

// TestIdlePartitionCompactedFully: a partition that got no file for
// idle-partition.ms is compacted fully (one file, one row group) by a
// run that partition alone makes due, while a partition still receiving
// data gets the head strategy's tail merge (one file copied, the others
// rewritten after it). Once compacted, the idle partition does not make the task
// due again.
func TestIdlePartitionCompactedFully(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	next := fill(t, w, 6, 40, 2) // 6 files in p0 and in p1
	tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		"maintenance.rewrite-data-files.trigger.small-file-count", "0", // idleness alone makes it due
		"maintenance.rewrite-data-files.min-interval.ms", "0",
		"maintenance.rewrite-data-files.idle-partition.ms", "1500")...))
	if runs := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData); len(runs) != 0 {
		t.Fatalf("runs before any partition is idle: %+v", runs)
	}
	time.Sleep(1600 * time.Millisecond)
	for range 3 { // p1 keeps receiving data
		rows := make([]row, 20)
		for i := range rows {
			rows[i] = row{id: next + int64(i), part: "p1"}
		}
		if err := w.commit(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
		next += int64(len(rows))
	}
	runs := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData)
	if len(runs) != 1 || !strings.HasPrefix(runs[0].Trigger, "idle-partitions 1") || !strings.Contains(runs[0].Detail, "1 idle partition(s) fully") {
		t.Fatalf("runs = %+v; want one, due to one idle partition, compacting it fully", runs)
	}
	t.Logf("%s", runs[0].Detail)
	for _, task := range planTasks(t, cat, "db.events") {
		part, rg := task.File.Partition()[1000], rowGroupsOf(t, task.File.FilePath())
		switch {
		case part == "p0" && rg != 1:
			t.Errorf("idle p0: a file of %d row groups; a full compaction writes one", rg)
		case part == "p1" && rg != 2:
			t.Errorf("hot p1: a file of %d row groups; want 2 (its biggest file copied, the rest rewritten after it)", rg)
		}
	}
	if sh := shape(t, cat, "db.events"); sh.DataFiles != 2 {
		t.Errorf("%d data files; want one per partition", sh.DataFiles)
	}
	if runs := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData); len(runs) != 0 {
		t.Fatalf("runs once the idle partition is compacted: %+v", runs)
	}
	scan(t, cat, "db.events").checkExactly(t, next)
}
