package lake

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// Snapshot summary keys of a floe commit (docs/architecture.md, "Exactly
// once").
const (
	SummaryConnector  = "floe.connector"
	SummaryCheckpoint = "floe.checkpoint"
	// SummaryOffsets is a JSON object: every source partition's next
	// position the table holds, cumulative over all of the connector's
	// commits to the table.
	SummaryOffsets        = "floe.offsets"
	SummaryCommitterID    = "floe.committer.id"
	SummaryCommitterEpoch = "floe.committer.epoch"
	// SummaryOffsetsReset marks the commit that applied a user's offset
	// change (the frontier jumps there by intent).
	SummaryOffsetsReset = "floe.offsets.reset"
)

// PropConnectorPrefix + connector name is a table property set the first
// time a connector routes rows to a table, before any of those rows can be
// committed.
const PropConnectorPrefix = "floe.connector."

// Commit is what a floe snapshot's summary says.
type Commit struct {
	SnapshotID  int64
	Connector   string
	Checkpoint  uint64
	Offsets     map[string]int64
	CommitterID string
	Epoch       int64
}

// ParseCommit reads a snapshot's summary. ok is false when the snapshot is
// not a floe append (compactions and other writers' commits).
func ParseCommit(s *table.Snapshot) (c Commit, ok bool, err error) {
	if s == nil || s.Summary == nil || s.Summary.Operation != table.OpAppend {
		return Commit{}, false, nil
	}
	props := s.Summary.Properties
	c.Connector = props[SummaryConnector]
	if c.Connector == "" {
		return Commit{}, false, nil
	}
	c.SnapshotID = s.SnapshotID
	if c.Checkpoint, err = strconv.ParseUint(props[SummaryCheckpoint], 10, 64); err != nil {
		return Commit{}, false, fmt.Errorf("snapshot %d: %s %q is not a checkpoint id", s.SnapshotID, SummaryCheckpoint, props[SummaryCheckpoint])
	}
	c.Offsets = map[string]int64{}
	if raw := props[SummaryOffsets]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &c.Offsets); err != nil {
			return Commit{}, false, fmt.Errorf("snapshot %d: %s is not a JSON object of positions: %w", s.SnapshotID, SummaryOffsets, err)
		}
	}
	c.CommitterID = props[SummaryCommitterID]
	c.Epoch, _ = strconv.ParseInt(props[SummaryCommitterEpoch], 10, 64)
	return c, true, nil
}

// NewestCommits walks the main branch back from its head and returns each
// connector's newest commit: the snapshots floe's recovery reads, which
// snapshot expiry must keep.
func NewestCommits(tbl *table.Table) (map[string]Commit, error) {
	out := map[string]Commit{}
	seen := map[int64]bool{}
	for snap := tbl.CurrentSnapshot(); snap != nil; {
		if seen[snap.SnapshotID] {
			return out, fmt.Errorf("snapshot history has a cycle at %d", snap.SnapshotID)
		}
		seen[snap.SnapshotID] = true
		c, ok, err := ParseCommit(snap)
		if err != nil {
			return out, err
		}
		if _, have := out[c.Connector]; ok && !have {
			out[c.Connector] = c
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = tbl.SnapshotByID(*snap.ParentSnapshotID)
	}
	return out, nil
}
