package maintenance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
)

// runRecord is one task run as the history keeps it: a line of the
// history file, whose format lake defines for floe table describe too.
type runRecord = lake.MaintenanceRecord

// history keeps the recent runs in memory and, when it has a path, as
// JSON lines in <floe.data.dir>/maintenance/<connector>.jsonl, so `floe
// maintain` runs and restarts share it. It also knows each task's last run
// per table, which the min-interval and interval triggers need.
type history struct {
	mu    sync.Mutex
	path  string
	max   int
	runs  []runRecord // oldest first, at most max
	last  map[lockKey]runRecord
	lines int // lines in the file, to know when to compact it
}

// openHistory loads the history file at path (if any). Unreadable lines
// (a torn last line after a crash) are skipped.
func openHistory(path string, max int) (*history, error) {
	h := &history{path: path, max: max, last: map[lockKey]runRecord{}}
	if path == "" {
		return h, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("maintenance history: %w", err)
	}
	records, lines, err := lake.ReadMaintenanceHistory(path)
	if err != nil {
		return nil, err
	}
	h.lines = lines
	for _, r := range records {
		h.remember(r)
	}
	return h, nil
}

// remember adds r to memory.
func (h *history) remember(r runRecord) {
	h.runs = append(h.runs, r)
	if len(h.runs) > h.max {
		h.runs = slices.Delete(h.runs, 0, len(h.runs)-h.max)
	}
	if !r.DryRun {
		k := lockKey{r.Table, r.Task}
		if prev, ok := h.last[k]; !ok || !r.Started.Before(prev.Started) {
			h.last[k] = r
		}
	}
}

// add records a run and appends it to the file. A file error is returned
// but the run stays in memory.
func (h *history) add(r runRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remember(r)
	if h.path == "" {
		return nil
	}
	if h.lines >= 4*h.max+len(h.last) {
		return h.rewrite()
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("maintenance history: %w", err)
	}
	_, werr := f.Write(append(line, '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("maintenance history: %w", err)
	}
	h.lines++
	return nil
}

// rewrite replaces the file with the runs in memory plus each task's last
// run, so it never grows without bound. Callers hold h.mu.
func (h *history) rewrite() error {
	keep := slices.Clone(h.runs)
	for _, r := range h.last {
		if !slices.ContainsFunc(keep, func(k runRecord) bool { return k == r }) {
			keep = append(keep, r)
		}
	}
	slices.SortStableFunc(keep, func(a, b runRecord) int { return a.Started.Compare(b.Started) })
	var buf bytes.Buffer
	for _, r := range keep {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("maintenance history: %w", err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		return fmt.Errorf("maintenance history: %w", err)
	}
	h.lines = len(keep)
	return nil
}

// lastRun is when task last ran (not dry) on table; zero when never.
func (h *history) lastRun(table, task string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[lockKey{table, task}].Started
}

// recent returns the runs in memory, oldest first.
func (h *history) recent() []sdk.TaskRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]sdk.TaskRun, len(h.runs))
	for i, r := range h.runs {
		out[i] = r.TaskRun()
	}
	return out
}
