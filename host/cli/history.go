package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"
)

// The iceberg-maintenance plugin keeps each connector's recent runs as
// JSON lines in <floe.data.dir>/maintenance/<connector>.jsonl, so that
// `floe maintain` calls and restarts share its triggers' memory. `floe
// table describe` reads them back: the plugin's own record of what it did
// to the table, which the table's snapshots only show in part (expiry
// drops snapshots, and failed runs commit none).

// historyRun is one line of a maintenance history file.
type historyRun struct {
	Table       string    `json:"table"`
	Task        string    `json:"task"`
	Trigger     string    `json:"trigger"`
	Started     time.Time `json:"started"`
	DurationMs  int64     `json:"duration_ms"`
	FilesBefore int64     `json:"files_before"`
	FilesAfter  int64     `json:"files_after"`
	BytesBefore int64     `json:"bytes_before"`
	BytesAfter  int64     `json:"bytes_after"`
	Error       string    `json:"error"`
	Detail      string    `json:"detail"`
	DryRun      bool      `json:"dry_run"`
}

// maintenanceHistory returns the runs on table recorded under dataDir,
// oldest first; none when the folder does not exist. Lines that do not
// parse (a torn last line after a crash) are skipped, as the plugin does.
func maintenanceHistory(dataDir, table string) ([]MaintenanceRun, error) {
	files, err := filepath.Glob(filepath.Join(dataDir, "maintenance", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	runs := []MaintenanceRun{}
	for _, path := range files {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("maintenance history: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			var r historyRun
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Table != table || r.DryRun {
				continue
			}
			runs = append(runs, MaintenanceRun{Table: r.Table, Task: r.Task, Trigger: r.Trigger, Started: r.Started,
				Duration: time.Duration(r.DurationMs) * time.Millisecond, FilesBefore: r.FilesBefore, FilesAfter: r.FilesAfter,
				BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter, Error: r.Error, Detail: r.Detail})
		}
		err = sc.Err()
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("maintenance history %s: %w", path, err)
		}
	}
	// Several connectors' files may name the table: interleave their runs.
	slices.SortStableFunc(runs, func(a, b MaintenanceRun) int { return a.Started.Compare(b.Started) })
	return runs, nil
}

// describeRuns is how many of the latest maintenance runs the text of
// `floe table describe` shows; --json has them all.
const describeRuns = 10

// printMaintenance prints the latest maintenance runs for people.
func printMaintenance(w io.Writer, runs []MaintenanceRun) {
	if len(runs) == 0 {
		fmt.Fprintf(w, "\nmaintenance: no runs recorded under the data dir\n")
		return
	}
	shown := runs[max(0, len(runs)-describeRuns):]
	fmt.Fprintf(w, "\nmaintenance (the last %d of %d runs recorded)\n", len(shown), len(runs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  started\ttask\ttrigger\ttook\tbefore → after\tresult\n")
	for _, r := range shown {
		result := clip(r.Detail, 100)
		if r.Error != "" {
			result = "FAILED: " + clip(r.Error, 100)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d → %d\t%s\n", r.Started.Format(time.RFC3339), r.Task, r.Trigger,
			r.Duration.Round(time.Millisecond), r.FilesBefore, r.FilesAfter, result)
	}
	_ = tw.Flush()
}
