package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergapi "github.com/apache/iceberg-go"

	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

func TestPipelinedCheckpoints(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(2)
	prepare(t, tk, 1, schemaV1)
	b1 := []sdk.Batch{batchV1("p0", 0, 100), batchV1("p1", 0, 30)}
	b2 := []sdk.Batch{batchV1("p0", 100, 50), batchV1("p1", 30, 30)}
	r1, r2 := ranges(b1...), ranges(b2...)
	writeTo := func(c uint64, b sdk.Batch, writers []uint32) {
		defer b.Records.Release()
		if _, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: c, Batch: b, Writers: writers}); err != nil {
			t.Fatal(err)
		}
	}
	alternate := func(n int) []uint32 {
		w := make([]uint32, n)
		for i := range w {
			w[i] = uint32(i % 2)
		}
		return w
	}
	writeTo(1, b1[0], alternate(100))
	writeTo(1, b1[1], nil)
	// Checkpoint 2's writes reach the writers before Flush(1): they close
	// their files of checkpoint 1 on the spot.
	writeTo(2, b2[0], alternate(50))
	writeTo(2, b2[1], nil)
	res1, err := tk.Flush(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res1) != 2 {
		t.Fatalf("flush 1: %d results, want one per writer", len(res1))
	}
	var records int64
	for _, r := range res1 {
		records += r.Records
	}
	if records != 130 {
		t.Fatalf("flush 1 records = %d", records)
	}
	writeTo(2, batchV1("p2", 0, 10), nil) // still checkpoint 2, after Flush(1)
	r2 = append(r2, sdk.Range{Partition: "p2", From: 0, Next: 10})
	if _, err := tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: 1, Ranges: r1, Results: res1}); err != nil {
		t.Fatal(err)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p0": {0, 100}, "p1": {0, 30}})
	flushCommit(t, tk, 2, r2)
	f.checkExactlyOnce("db.events", map[string][2]int64{"p0": {0, 150}, "p1": {0, 60}, "p2": {0, 10}})
	if n := len(floeSnapshots(f.load("db.events"), f.connector)); n != 2 {
		t.Fatalf("%d floe snapshots, want 2", n)
	}

	// Writes of a flushed checkpoint are refused: they would never commit.
	b := batchV1("p0", 150, 1)
	defer b.Records.Release()
	if _, err := tk.Write(context.Background(), sdk.WriteRequest{Checkpoint: 2, Batch: b}); err == nil {
		t.Fatal("write after flush accepted")
	}
}

func parquetFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func TestCrashAfterFlushLeavesOrphansOnly(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 10))
	write(t, tk, 2, batchV1("p", 10, 90))
	res, err := tk.Flush(context.Background(), 2)
	if err != nil || len(res) != 1 || res[0].Files != 1 {
		t.Fatalf("flush: %+v, %v", res, err)
	}
	// The process dies before Commit(2).
	if err := tk.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 10}})
	if files := parquetFiles(t, f.dir); len(files) != 2 {
		t.Fatalf("%d parquet files on disk, want the committed one and an orphan: %v", len(files), files)
	}

	// The restarted sink resumes from the table and commits the replay.
	tk2 := f.open(1)
	fr, err := tk2.Frontier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fr.Checkpoint != 1 || fr.Positions["p"] != 10 {
		t.Fatalf("frontier = %+v", fr)
	}
	prepare(t, tk2, 1, schemaV1)
	step(t, tk2, 2, batchV1("p", 10, 90))
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 100}})
}

func TestReplayDropsRowsTheTableHolds(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 100))
	_ = tk.Close(context.Background())

	tk2 := f.open(1)
	fr, err := tk2.Frontier(context.Background())
	if err != nil || fr.Positions["p"] != 100 {
		t.Fatalf("frontier = %+v, %v", fr, err)
	}
	// A source that replays from before the frontier (another table was
	// behind): the first batch lies entirely below it and writes nothing,
	// the second is cut at 100.
	step(t, tk2, 2, batchV1("p", 40, 30), batchV1("p", 70, 50), batchV1("p", 120, 30))
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 150}})
	step(t, tk2, 3, batchV1("p", 150, 10))
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 160}})
}

func commitErr(t testing.TB, tk *task, checkpoint uint64, batches ...sdk.Batch) error {
	t.Helper()
	for _, b := range batches {
		write(t, tk, checkpoint, b)
	}
	res, err := tk.Flush(context.Background(), checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tk.Commit(context.Background(), sdk.CommitRequest{Checkpoint: checkpoint, Ranges: ranges(batches...), Results: res})
	return err
}

func TestFencing(t *testing.T) {
	t.Run("overlap", func(t *testing.T) {
		f := newFixture(t, nil)
		tk := f.open(1)
		prepare(t, tk, 1, schemaV1)
		step(t, tk, 1, batchV1("orders/3", 0, 1200))
		err := commitErr(t, tk, 2, batchV1("orders/3", 1000, 300))
		if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(),
			"table db.events: partition orders/3 committed up to 1200, this checkpoint starts at 1000: another writer owns it") {
			t.Fatalf("err = %v", err)
		}
		f.checkExactlyOnce("db.events", map[string][2]int64{"orders/3": {0, 1200}})
	})
	t.Run("gap", func(t *testing.T) {
		f := newFixture(t, nil)
		tk := f.open(1)
		prepare(t, tk, 1, schemaV1)
		step(t, tk, 1, batchV1("orders/3", 0, 1000))
		err := commitErr(t, tk, 2, batchV1("orders/3", 1200, 100))
		if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "committed up to 1000, this checkpoint starts at 1200: records 1000..1199 are missing") {
			t.Fatalf("err = %v", err)
		}
		f.checkExactlyOnce("db.events", map[string][2]int64{"orders/3": {0, 1000}})
	})
	t.Run("zombie", func(t *testing.T) {
		// Two sinks of one connector both believe they own the partition:
		// the first commit wins, the other is fenced and commits nothing.
		f := newFixture(t, nil)
		a, b := f.open(1), f.open(1)
		prepare(t, a, 1, schemaV1)
		prepare(t, b, 1, schemaV1)
		step(t, a, 1, batchV1("p", 0, 100))
		err := commitErr(t, b, 1, batchV1("p", 0, 100))
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("zombie commit: %v", err)
		}
		step(t, a, 2, batchV1("p", 100, 10))
		// The zombie's next checkpoint continues its own view: fenced too.
		err = commitErr(t, b, 2, batchV1("p", 100, 10))
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("zombie commit 2: %v", err)
		}
		f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 110}})
	})
	t.Run("superseded committer", func(t *testing.T) {
		// A committer that resumes after its successor committed: its
		// range of partition q continues the table (q is new to it), but
		// its checkpoint id is not above the successor's.
		f := newFixture(t, nil)
		a, zombie := f.open(1), f.open(1)
		prepare(t, a, 1, schemaV1)
		prepare(t, zombie, 1, schemaV1)
		step(t, a, 1, batchV1("p", 0, 10))
		step(t, a, 2, batchV1("p", 10, 10))
		for _, id := range []uint64{1, 2} {
			err := commitErr(t, zombie, id, batchV1("q", 0, 10))
			if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(),
				fmt.Sprintf("checkpoint %d is not above the connector's newest commit, checkpoint 2", id)) {
				t.Fatalf("checkpoint %d of the superseded committer: %v", id, err)
			}
		}
		f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 20}})
		// Above the table's newest, the same range commits.
		step(t, zombie, 3, batchV1("q", 0, 10))
		f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 20}, "q": {0, 10}})
	})
	t.Run("other connector", func(t *testing.T) {
		// Another connector's commits to the table do not move this
		// connector's frontier.
		f := newFixture(t, nil)
		a := f.open(1)
		other := *f
		other.connector = "someone-else"
		o := other.open(1)
		prepare(t, a, 1, schemaV1)
		prepare(t, o, 1, schemaV1)
		step(t, a, 1, batchV1("p", 0, 10))
		step(t, o, 1, batchV1("p", 500, 10))
		step(t, a, 2, batchV1("p", 10, 10))
		if n := len(f.readRows("db.events")); n != 30 {
			t.Fatalf("%d rows", n)
		}
	})
}

func TestCommitIsIdempotent(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	b := batchV1("p", 0, 100)
	write(t, tk, 1, b)
	res, err := tk.Flush(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.CommitRequest{Checkpoint: 1, Ranges: ranges(b), Results: res}
	first, err := tk.Commit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The host did not hear back and retries; so does a restarted sink.
	again, err := tk.Commit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	tk2 := f.open(1)
	third, err := tk2.Commit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].SnapshotID != first[0].SnapshotID || third[0].SnapshotID != first[0].SnapshotID {
		t.Fatalf("snapshots %d, %d, %d", first[0].SnapshotID, again[0].SnapshotID, third[0].SnapshotID)
	}
	if n := len(f.load("db.events").Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots, want 1", n)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 100}})
}

// appendForeign commits rows to a table as some other tool would: no
// floe summary.
func appendForeign(t *testing.T, f *fixture, name string) {
	t.Helper()
	tbl := f.load(name)
	target, err := schemas.ArrowForTable(tbl.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, target)
	defer b.Release()
	for i, fld := range target.Fields() {
		if fld.Name == "id" {
			b.Field(i).(*array.Int64Builder).Append(-1)
		} else {
			b.Field(i).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(target, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if _, err := tbl.Append(context.Background(), rdr, icebergapi.Properties{"writer": "someone"}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentCommitRetries(t *testing.T) {
	f := newFixture(t, map[string]string{keyRetryBackoff: "1", keyRetryMaxBackoff: "5"})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 10))

	// Another writer commits between planning and committing, on each of
	// the first two attempts. (Attempt 1 also runs once on the table as
	// the sink knew it after checkpoint 1: that stale plan is replanned at
	// once and is not counted.)
	conflicts := 0
	tk.beforeCommit = func(name string, attempt int) error {
		if attempt <= 2 {
			conflicts++
			appendForeign(t, f, name)
		}
		return nil
	}
	commits := step(t, tk, 2, batchV1("p", 10, 10))
	if commits[0].Attempts != 3 || conflicts != 3 {
		t.Fatalf("attempts %d, conflicts %d", commits[0].Attempts, conflicts)
	}
	rows := f.readRows("db.events")
	if len(rows) != 23 {
		t.Fatalf("%d rows, want 20 of ours and 3 foreign", len(rows))
	}
	tbl := f.load("db.events")
	if got := len(floeSnapshots(tbl, f.connector)); got != 2 {
		t.Fatalf("%d floe snapshots", got)
	}
	if p := tbl.CurrentSnapshot().Summary.Properties; p[summaryCheckpoint] != "2" {
		t.Fatalf("head = %v", p)
	}

	// The conflict outlasts the attempts: the commit fails, nothing of it
	// is visible, and the host's retry succeeds.
	tk.beforeCommit = func(name string, attempt int) error { appendForeign(t, f, name); return nil }
	err := commitErr(t, tk, 3, batchV1("p", 20, 10))
	if err == nil || !strings.Contains(err.Error(), "after 10 attempts") {
		t.Fatalf("err = %v", err)
	}
}

func TestCrashBetweenTables(t *testing.T) {
	f := newFixture(t, map[string]string{keyTables: "db.a,db.b"})
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p0", 0, 100))
	// Checkpoint 2 brings a new partition; db.a commits, then the process
	// dies before db.b's commit.
	crash := errors.New("killed")
	tk.beforeCommit = func(name string, _ int) error {
		if name == "db.b" {
			return crash
		}
		return nil
	}
	if err := commitErr(t, tk, 2, batchV1("p0", 100, 100), batchV1("p1", 0, 50)); !errors.Is(err, crash) {
		t.Fatalf("err = %v", err)
	}
	_ = tk.Close(context.Background())

	tk2 := f.open(1)
	fr, err := tk2.Frontier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// p0: the lower of db.a's 200 and db.b's 100. p1: db.b has none, so
	// the source picks its own start (earliest here).
	if fr.Checkpoint != 2 || fr.Positions["p0"] != 100 || len(fr.Positions) != 1 {
		t.Fatalf("frontier = %+v", fr)
	}
	prepare(t, tk2, 1, schemaV1)
	commits := step(t, tk2, 3, batchV1("p0", 100, 100), batchV1("p1", 0, 50))
	if len(commits) != 1 || commits[0].Table != "db.b" {
		t.Fatalf("commits = %+v (db.a held everything already)", commits)
	}
	step(t, tk2, 4, batchV1("p0", 200, 10), batchV1("p1", 50, 10))
	for _, name := range []string{"db.a", "db.b"} {
		f.checkExactlyOnce(name, map[string][2]int64{"p0": {0, 210}, "p1": {0, 60}})
	}
}

func TestCommitOfAnotherProcessesWriters(t *testing.T) {
	// The committer decodes payloads written by writers of another sink
	// process.
	f := newFixture(t, nil)
	writerSide, committerSide := f.open(1), f.open(1)
	prepare(t, writerSide, 1, schemaV1)
	b := batchV1("p", 0, 25)
	write(t, writerSide, 1, b)
	res, err := writerSide.Flush(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := committerSide.Commit(context.Background(), sdk.CommitRequest{Checkpoint: 1, Ranges: ranges(b), Results: res}); err != nil {
		t.Fatal(err)
	}
	f.checkExactlyOnce("db.events", map[string][2]int64{"p": {0, 25}})
}

func TestOffsetsReset(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 100))
	_ = tk.Close(context.Background())

	// The user rewinds p to 50 and drops q: rows from 50 are written again.
	f.reset = &sdk.OffsetsReset{Positions: map[string]int64{"p": 50}, AfterCheckpoint: 1}
	tk = f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 2, batchV1("p", 50, 30), batchV1("q", 0, 5))
	head := f.load("db.events").CurrentSnapshot().Summary.Properties
	if head[summaryReset] != "true" || head[summaryOffsets] != `{"p":80,"q":5}` {
		t.Fatalf("summary = %v", head)
	}
	if n := len(f.readRows("db.events")); n != 135 {
		t.Fatalf("%d rows, want 100 + 30 rewound + 5", n)
	}
	_ = tk.Close(context.Background())

	// Skipping ahead is no gap while the override is pending.
	f.reset = &sdk.OffsetsReset{Positions: map[string]int64{"p": 500, "q": 5}, AfterCheckpoint: 2}
	tk = f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 3, batchV1("p", 500, 10))
	_ = tk.Close(context.Background())

	// An override a later commit carried is ignored.
	tk = f.open(1)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 4, batchV1("p", 510, 10))
	head = f.load("db.events").CurrentSnapshot().Summary.Properties
	if _, ok := head[summaryReset]; ok || head[summaryOffsets] != `{"p":520,"q":5}` {
		t.Fatalf("summary = %v", head)
	}
}
