package lake

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/floehq/floe/sdk"
)

// MaintenanceRecord is one maintenance task run as the iceberg-maintenance
// plugin records it: a JSON line of the connector's history file
// ([MaintenanceHistoryPath]). The plugin reads the file back for its
// triggers' memory across `floe maintain` calls and restarts, and `floe
// table describe` to show what maintenance did to a table.
type MaintenanceRecord struct {
	Table       string    `json:"table"`
	Task        string    `json:"task"`
	Trigger     string    `json:"trigger"`
	Started     time.Time `json:"started"`
	DurationMs  int64     `json:"duration_ms"`
	FilesBefore int64     `json:"files_before"`
	FilesAfter  int64     `json:"files_after"`
	BytesBefore int64     `json:"bytes_before"`
	BytesAfter  int64     `json:"bytes_after"`
	Error       string    `json:"error,omitempty"`
	Detail      string    `json:"detail,omitempty"`
	// DryRun marks a run that planned and committed nothing; it does not
	// count as the task's last run for triggers.
	DryRun bool `json:"dry_run,omitempty"`
}

// TaskRun is r as the SDK reports runs.
func (r MaintenanceRecord) TaskRun() sdk.TaskRun {
	return sdk.TaskRun{Table: r.Table, Task: r.Task, Trigger: r.Trigger, Started: r.Started,
		Duration: time.Duration(r.DurationMs) * time.Millisecond, FilesBefore: r.FilesBefore, FilesAfter: r.FilesAfter,
		BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter, Error: r.Error, Detail: r.Detail}
}

// MaintenanceHistoryPath is the history file of connector under dataDir,
// <dataDir>/maintenance/<connector>.jsonl (the name with slashes, colons
// and NULs replaced), or "" without a data dir.
func MaintenanceHistoryPath(dataDir, connector string) string {
	if dataDir == "" {
		return ""
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == ':' {
			return '_'
		}
		return r
	}, connector)
	if name == "" || name == "." || name == ".." {
		name = "_"
	}
	return filepath.Join(dataDir, "maintenance", name+".jsonl")
}

// MaintenanceHistoryFiles lists the history files under dataDir, one per
// connector.
func MaintenanceHistoryFiles(dataDir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dataDir, "maintenance", "*.jsonl"))
}

// ReadMaintenanceHistory reads a history file: its records as written
// (oldest first) and its number of lines. Lines that do not parse or name
// no table or task (a torn last line after a crash) are skipped; a missing
// file has none.
func ReadMaintenanceHistory(path string) (records []MaintenanceRecord, lines int, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("maintenance history: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		lines++
		var r MaintenanceRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Table == "" || r.Task == "" {
			continue
		}
		records = append(records, r)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("maintenance history %s: %w", path, err)
	}
	return records, lines, nil
}
