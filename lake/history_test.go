package lake

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestMaintenanceHistory(t *testing.T) {
	dir := t.TempDir()
	if p := MaintenanceHistoryPath(dir, "a/b:c"); p != filepath.Join(dir, "maintenance", "a_b_c.jsonl") {
		t.Errorf("path %s", p)
	}
	if p := MaintenanceHistoryPath("", "orders"); p != "" {
		t.Errorf("path without a data dir: %q", p)
	}
	// A missing file has no records.
	recs, lines, err := ReadMaintenanceHistory(MaintenanceHistoryPath(dir, "none"))
	if err != nil || len(recs) != 0 || lines != 0 {
		t.Fatalf("missing file: %v %d %v", recs, lines, err)
	}

	path := MaintenanceHistoryPath(dir, "orders")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	body := `{"table":"db.t","task":"rewrite-data-files","started":"2026-12-01T10:00:00Z","duration_ms":1500,"files_before":9,"files_after":2}
{"task":"rewrite-data-files"}
{"table":"db.t","task":"expire-snapshots","started":"2026-12-01T10:01:00Z","error":"conflict","dry_run":true}
{"table":"db.t","ta`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, lines, err = ReadMaintenanceHistory(path)
	if err != nil || lines != 4 || len(recs) != 2 {
		t.Fatalf("records %+v, lines %d, %v; want 2 of 4 lines (no table, torn)", recs, lines, err)
	}
	if r := recs[0].TaskRun(); r.Duration != 1500*time.Millisecond || r.FilesBefore != 9 || r.FilesAfter != 2 || !r.Started.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("task run %+v", r)
	}
	if !recs[1].DryRun || recs[1].Error != "conflict" {
		t.Errorf("second record %+v", recs[1])
	}
	files, err := MaintenanceHistoryFiles(dir)
	if err != nil || len(files) != 1 || files[0] != path {
		t.Errorf("files %v, %v", files, err)
	}
}
