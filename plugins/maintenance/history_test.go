package maintenance

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

func forceReq(tasks ...string) sdk.CycleRequest { return sdk.CycleRequest{Force: tasks} }

// TestHistoryFile: runs go to the JSON-lines file, come back on reopen
// (with each task's last run), and the file stays bounded.
func TestHistoryFile(t *testing.T) {
	path := lake.MaintenanceHistoryPath(t.TempDir(), "orders/../x")
	if !strings.HasSuffix(path, "orders_.._x.jsonl") {
		t.Fatalf("path %s", path)
	}
	h, err := openHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	for i := range 40 {
		task := taskRewriteData
		if i == 0 {
			task = taskOrphans
		}
		if err := h.add(runRecord{Table: "db.events", Task: task, Trigger: "x", Started: start.Add(time.Duration(i) * time.Second), DurationMs: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.add(runRecord{Table: "db.events", Task: taskExpire, Started: start.Add(time.Hour), DryRun: true}); err != nil {
		t.Fatal(err)
	}
	// A torn last line (a crash mid-write) is skipped.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"table":"db.ev`)
	_ = f.Close()

	re, err := openHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := re.recent(); len(got) != 3 || got[2].Task != taskExpire || got[1].Started != start.Add(39*time.Second) {
		t.Fatalf("recent after reopen: %+v", got)
	}
	if got := re.lastRun("db.events", taskOrphans); !got.Equal(start) {
		t.Errorf("last orphan run %v, want %v (kept although older than the recent runs)", got, start)
	}
	if got := re.lastRun("db.events", taskExpire); !got.IsZero() {
		t.Errorf("a dry run counted as the last run: %v", got)
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n > 4*3+3 {
		t.Errorf("history file has %d lines; want it compacted", n)
	}
}

// TestHistorySurvivesRestart: a reopened task reports the earlier runs and
// keeps their min interval.
func TestHistorySurvivesRestart(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", nil)
	w := newWriter(cat, "db.events", "orders")
	n := fill(t, w, 12, 2, 1)
	cfg := b.config("db.events", append(only(taskRewriteData), "maintenance.rewrite-data-files.min-interval.ms", "600000")...)
	tk := b.openTask(t, cfg)
	if r := runsOf(cycle(t, tk, sdk.CycleRequest{}).Runs, taskRewriteData); len(r) != 1 {
		t.Fatalf("first cycle: %+v", r)
	}
	_ = tk.Close(t.Context())
	n += fill2(t, w, n, 12)

	re := b.openTask(t, cfg)
	st, err := re.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Runs) != 1 || st.Runs[0].Task != taskRewriteData || st.Runs[0].Trigger != "small-file-count 12 ≥ 4" {
		t.Fatalf("runs after restart: %+v", st.Runs)
	}
	if len(st.Tables) != 1 || st.Tables[0].DataFiles != 13 || st.Tables[0].Records != n {
		t.Fatalf("health: %+v", st.Tables)
	}
	// 13 small files ≥ 4, but the min interval of the run before the restart holds.
	if r := runsOf(cycle(t, re, sdk.CycleRequest{}).Runs, taskRewriteData); len(r) != 0 {
		t.Fatalf("ran inside the min interval after a restart: %+v", r)
	}
}

// fill2 commits k one-partition commits of 2 rows from id first.
func fill2(t *testing.T, w *writer, first int64, k int) int64 {
	t.Helper()
	for i := range k {
		if err := w.commit(t.Context(), rowsFor(first+int64(i)*2, 2, 1)); err != nil {
			t.Fatal(err)
		}
	}
	return int64(k) * 2
}
