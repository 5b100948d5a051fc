package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/floehq/floe/sdk"
)

// tableInfo is what the sink reported about a table in its commits.
type tableInfo struct {
	snapshot   int64
	records    int64
	files      int64
	commits    int64
	lastCommit time.Time
}

// Tables reports table health and maintenance runs from the maintenance
// plugin when the connector has one (fromMaintenance true), else (or once
// the connector ended) what the sink reported in its commits: tables,
// records and files committed by this runtime, last commit time.
func (c *Connector) Tables(ctx context.Context) (st sdk.MaintenanceStatus, fromMaintenance bool, err error) {
	c.mu.Lock()
	m, merr := c.maint, c.maintErr
	hasMaint := c.opts.Components[sdk.KindMaintenance].Name != ""
	var tables []sdk.TableHealth
	for name, t := range c.tables {
		tables = append(tables, sdk.TableHealth{Table: name, Records: t.records, DataFiles: t.files, LastCommit: t.lastCommit})
	}
	c.mu.Unlock()
	ended := false
	select {
	case <-c.done:
		ended = true
	default:
	}
	if hasMaint && m != nil {
		st, err := m.Status(ctx)
		return st, true, err
	}
	if hasMaint && !ended {
		if merr == nil {
			merr = errors.New("the maintenance plugin is starting")
		}
		return st, true, fmt.Errorf("connector %s: maintenance: %w", c.opts.Name, merr)
	}
	slices.SortFunc(tables, func(a, b sdk.TableHealth) int { return strings.Compare(a.Table, b.Table) })
	return sdk.MaintenanceStatus{Tables: tables}, false, nil
}

// TableCommits is what this runtime's commits told about one table: the
// sink reports per commit the snapshot it made, the records and the files;
// nothing about the table as a whole (snapshots, bytes, manifests), which
// only a maintenance plugin reads.
type TableCommits struct {
	Table string
	// SnapshotID is the snapshot of the last commit.
	SnapshotID int64
	// Commits, Records and Files count since this runtime started.
	Commits    int64
	Records    int64
	Files      int64
	LastCommit time.Time
}

// CommittedTables lists the tables this runtime committed to, by name.
func (c *Connector) CommittedTables() []TableCommits {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]TableCommits, 0, len(c.tables))
	for name, t := range c.tables {
		out = append(out, TableCommits{Table: name, SnapshotID: t.snapshot, Commits: t.commits,
			Records: t.records, Files: t.files, LastCommit: t.lastCommit})
	}
	slices.SortFunc(out, func(a, b TableCommits) int { return strings.Compare(a.Table, b.Table) })
	return out
}

func (c *Connector) noteTableCommits(tcs []sdk.TableCommit, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tc := range tcs {
		t := c.tables[tc.Table]
		t.snapshot = tc.SnapshotID
		t.records += tc.Records
		t.files += int64(tc.Files)
		t.commits++
		t.lastCommit = at
		c.tables[tc.Table] = t
	}
}
