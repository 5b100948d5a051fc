package maintenance

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

// rowGroupsOf is the number of row groups of a local Parquet file.
func rowGroupsOf(t testing.TB, location string) int {
	t.Helper()
	return openParquet(t, location).NumRowGroups()
}

// planTasks are the scan tasks of the table's live data files.
func planTasks(t testing.TB, cat catalog.Catalog, name string) []table.FileScanTask {
	t.Helper()
	tasks, err := loadTable(t, cat, name).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// TestCopyRowGroupsJoinsBigFiles: a tier merge that takes a file an
// earlier run wrote copies that file's row group into its output and
// rewrites only the new small files; the table keeps every row once, and
// the new file's bounds and partition are right (a filtered scan prunes
// with them). A merge that finishes a file, and a forced run, rewrite
// everything into one row group.
func TestCopyRowGroupsJoinsBigFiles(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	commitIDs := func(from, commits, per int64) {
		for c := range commits {
			if err := w.commit(context.Background(), rowsFor(from+c*per, int(per), 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	commitIDs(0, 10, 50)
	tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		"maintenance.rewrite-data-files.min-interval.ms", "0",
		"maintenance.rewrite-data-files.copy-row-groups.min-file-bytes", "2048")...))

	// The first run's inputs are all small: nothing to copy.
	runs := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData)
	if len(runs) != 1 || runs[0].FilesAfter != 1 || strings.Contains(runs[0].Detail, "copied") {
		t.Fatalf("first run = %+v; want one rewrite into one file, nothing copied", runs)
	}
	merged := liveFiles(t, cat, "db.events")[0]
	if rowGroupsOf(t, merged) != 1 {
		t.Fatalf("the first run's file has %d row groups, want 1", rowGroupsOf(t, merged))
	}
	if mergedSize := planTasks(t, cat, "db.events")[0].File.FileSizeBytes(); mergedSize < 2048 {
		t.Fatalf("the first run's file is %d bytes, under the 2048 the test copies from", mergedSize)
	}

	// Eight new small files (the trigger's count), together big enough
	// to take the merged one.
	commitIDs(500, 8, 50)
	runs = runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData)
	if len(runs) != 1 || runs[0].FilesAfter != 1 {
		t.Fatalf("second run = %+v; want one leaving one file", runs)
	}
	if !strings.Contains(runs[0].Detail, "1 group(s) copied the row groups") {
		t.Fatalf("second run's detail %q; want the merged file's row groups copied", runs[0].Detail)
	}
	joined := liveFiles(t, cat, "db.events")[0]
	if got := rowGroupsOf(t, joined); got != 2 {
		t.Fatalf("the joined file has %d row groups, want 2 (the small files' rewrite, the copied one)", got)
	}
	scan(t, cat, "db.events").checkExactly(t, 900)

	tasks := planTasks(t, cat, "db.events")
	df := tasks[0].File
	if df.Count() != 900 || df.Partition()[1000] != "p0" {
		t.Fatalf("joined data file: %d rows, partition %v; want 900 rows in part=p0", df.Count(), df.Partition())
	}
	lo, err := iceberg.LiteralFromBytes(iceberg.PrimitiveTypes.Int64, df.LowerBoundValues()[1])
	if err != nil {
		t.Fatal(err)
	}
	hi, err := iceberg.LiteralFromBytes(iceberg.PrimitiveTypes.Int64, df.UpperBoundValues()[1])
	if err != nil {
		t.Fatal(err)
	}
	if lo.String() != "0" || hi.String() != "899" {
		t.Fatalf("id bounds [%s, %s], want [0, 899]", lo, hi)
	}
	pruned, err := loadTable(t, cat, "db.events").Scan(table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(900)))).PlanFiles(context.Background())
	if err != nil || len(pruned) != 0 {
		t.Fatalf("a scan for id ≥ 900 plans %d file(s) (%v); the bounds should prune the joined file", len(pruned), err)
	}
	n, err := loadTable(t, cat, "db.events").Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("part"), "p0"))).PlanFiles(context.Background())
	if err != nil || len(n) != 1 {
		t.Fatalf("a scan for part = p0 plans %d file(s) (%v); want the joined file", len(n), err)
	}

	// rewrittenWhole runs a cycle that must rewrite the table into one
	// file of one row group, copying nothing, and keep every row.
	rewrittenWhole := func(what string, tk *task, req sdk.CycleRequest, rows int64) {
		t.Helper()
		runs := runsOf(cycle(t, tk, req).Runs, taskRewriteData)
		if len(runs) != 1 || runs[0].FilesAfter != 1 || strings.Contains(runs[0].Detail, "copied") {
			t.Fatalf("%s = %+v; want a rewrite into one file, nothing copied", what, runs)
		}
		if got := rowGroupsOf(t, liveFiles(t, cat, "db.events")[0]); got != 1 {
			t.Fatalf("%s: the file has %d row groups, want 1", what, got)
		}
		scan(t, cat, "db.events").checkExactly(t, rows)
	}

	// A file that holds copy-row-groups.max-row-groups row groups is
	// rewritten with the small ones, not copied: joined files keep few.
	commitIDs(900, 8, 50)
	capped := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		"maintenance.rewrite-data-files.min-interval.ms", "0",
		"maintenance.rewrite-data-files.copy-row-groups.min-file-bytes", "2048",
		"maintenance.rewrite-data-files.copy-row-groups.max-row-groups", "2")...))
	rewrittenWhole("the run with a 2-row-group file", capped, sdk.CycleRequest{}, 1300)

	// With the tiered strategy a merge whose output is a finished file
	// (the target is the table's bytes, so the group reaches 75 % of it)
	// rewrites it whole.
	commitIDs(1300, 8, 50)
	var total int64
	for _, task := range planTasks(t, cat, "db.events") {
		total += task.File.FileSizeBytes()
	}
	finishing := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		keyStrategy, strategyTiered, // head keeps a finished file's row groups
		"maintenance.rewrite-data-files.min-interval.ms", "0",
		"maintenance.rewrite-data-files.target-file-size-bytes", strconv.FormatInt(max(total, 1024), 10),
		"maintenance.rewrite-data-files.copy-row-groups.min-file-bytes", "2048")...))
	rewrittenWhole("the finishing run", finishing, sdk.CycleRequest{}, 1700)

	// A forced run is a full compaction: rewritten, one row group.
	commitIDs(1700, 8, 50)
	rewrittenWhole("the forced run", tk, sdk.CycleRequest{Force: []string{taskRewriteData}}, 2100)
}

// TestRowGroupSizes: a file's row groups from its split offsets; a file
// without valid ones is one row group of its size.
func TestRowGroupSizes(t *testing.T) {
	file := func(offsets ...int64) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "f.parquet", iceberg.ParquetFile, nil, nil, nil, 10, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if offsets != nil {
			b.SplitOffsets(offsets)
		}
		return b.Build()
	}
	for _, c := range []struct {
		f    iceberg.DataFile
		want []int64
	}{
		{file(), []int64{1000}},
		{file(4), []int64{996}},
		{file(4, 300, 900), []int64{296, 600, 100}},
		{file(4, 900, 1800), []int64{1000}}, // past the end: not valid
		{file(4, 300, 300), []int64{1000}},  // not increasing
	} {
		if got := rowGroupSizes(c.f); !slices.Equal(got, c.want) {
			t.Errorf("rowGroupSizes(split offsets %v) = %v, want %v", c.f.SplitOffsets(), got, c.want)
		}
		if got := rowGroups(c.f); got != len(c.want) {
			t.Errorf("rowGroups(split offsets %v) = %d, want %d", c.f.SplitOffsets(), got, len(c.want))
		}
	}
}

// TestHeadRewritesOnlyItsTrailingRowGroups: a head that holds
// copy-row-groups.max-row-groups row groups keeps its big leading one as
// it is (copied) and rewrites only its small trailing ones with the new
// files (read through a scan task's byte range); the table keeps every
// row once and the file's bounds cover them.
func TestHeadRewritesOnlyItsTrailingRowGroups(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", sinkTableProps)
	w := newWriter(cat, "db.events", "orders")
	next := int64(0)
	commitIDs := func(commits, per int64) {
		for range commits {
			if err := w.commit(context.Background(), rowsFor(next, int(per), 1)); err != nil {
				t.Fatal(err)
			}
			next += per
		}
	}
	tk := b.openTask(t, b.config("db.events", append(only(taskRewriteData),
		"maintenance.rewrite-data-files.min-interval.ms", "0",
		"maintenance.rewrite-data-files.copy-row-groups.min-file-bytes", "8192",
		"maintenance.rewrite-data-files.copy-row-groups.max-row-groups", "3")...))
	head := func() (string, []int64) {
		t.Helper()
		tasks := planTasks(t, cat, "db.events")
		if len(tasks) != 1 {
			t.Fatalf("%d files; want the head alone", len(tasks))
		}
		rdr := openParquet(t, tasks[0].File.FilePath())
		var rows []int64
		for i := range rdr.NumRowGroups() {
			rows = append(rows, rdr.MetaData().RowGroup(i).NumRows())
		}
		return tasks[0].File.FilePath(), rows
	}
	// 40 files, each under copy-row-groups.min-file-bytes: rewritten into
	// a head of one row group.
	commitIDs(40, 500)
	cycle(t, tk, sdk.CycleRequest{})
	if _, rows := head(); !slices.Equal(rows, []int64{20000}) {
		t.Fatalf("head row groups %v; want one of 20000 rows", rows)
	}
	// Two appends of 4 files each, together over min-file-bytes: their
	// row group follows the head's, copied.
	for _, want := range [][]int64{{20000, 1200}, {20000, 1200, 1200}} {
		commitIDs(4, 300)
		cycle(t, tk, sdk.CycleRequest{})
		if _, rows := head(); !slices.Equal(rows, want) {
			t.Fatalf("head row groups %v; want %v", rows, want)
		}
	}
	// A third: the head holds max-row-groups (3), so its two trailing
	// row groups (each no bigger than the bytes taken after it) are
	// rewritten with the new rows; the 20000-row group is copied.
	commitIDs(4, 300)
	runs := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData)
	if len(runs) != 1 || !strings.Contains(runs[0].Detail, "1 group(s) copied the row groups of 1 file(s)") {
		t.Fatalf("runs = %+v; want one copying the head's leading row group", runs)
	}
	path, rows := head()
	if !slices.Equal(rows, []int64{20000, 3600}) {
		t.Fatalf("head row groups %v; want [20000 3600]", rows)
	}
	scan(t, cat, "db.events").checkExactly(t, next)
	df := planTasks(t, cat, "db.events")[0].File
	lo, err := iceberg.LiteralFromBytes(iceberg.PrimitiveTypes.Int64, df.LowerBoundValues()[1])
	if err != nil {
		t.Fatal(err)
	}
	hi, err := iceberg.LiteralFromBytes(iceberg.PrimitiveTypes.Int64, df.UpperBoundValues()[1])
	if err != nil {
		t.Fatal(err)
	}
	if df.Count() != next || lo.String() != "0" || hi.String() != strconv.FormatInt(next-1, 10) {
		t.Fatalf("%s: %d rows, ids [%s, %s]; want %d rows, [0, %d]", path, df.Count(), lo, hi, next, next-1)
	}
}
