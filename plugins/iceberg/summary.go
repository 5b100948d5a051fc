package iceberg

import (
	"encoding/json"
	"fmt"
	"github.com/floehq/floe/lake"
	"math"
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// Snapshot summary keys of a floe commit; lake defines them for every
// reader of floe's tables.
const (
	summaryConnector      = lake.SummaryConnector
	summaryCheckpoint     = lake.SummaryCheckpoint
	summaryOffsets        = lake.SummaryOffsets
	summaryCommitterID    = lake.SummaryCommitterID
	summaryCommitterEpoch = lake.SummaryCommitterEpoch
)

// propConnectorPrefix + connector name is a table property the sink sets
// the first time a connector routes rows to a table, before any of those
// rows can be committed anywhere. Frontier uses it to tell a table that
// never held anything of the connector (ignored) from one whose first
// commit may have been lost in a crash (it then holds nothing, and the
// partitions resume from the source's own start). It also tells a history
// that was expired past the connector's last commit from one the
// connector never wrote.
const propConnectorPrefix = lake.PropConnectorPrefix

// floeCommit is what a floe snapshot's summary says.
type floeCommit struct {
	snapshotID int64
	checkpoint uint64
	offsets    map[string]int64
	committer  string
	epoch      int64
}

// parseFloeCommit reads a snapshot's summary. ok is false when the
// snapshot is not an append of connector (compactions and other writers'
// commits are skipped).
func parseFloeCommit(s *table.Snapshot, connector string) (floeCommit, bool, error) {
	c, ok, err := lake.ParseCommit(s)
	if err != nil || !ok || c.Connector != connector {
		return floeCommit{}, false, err
	}
	return floeCommit{snapshotID: c.SnapshotID, checkpoint: c.Checkpoint, offsets: c.Offsets, committer: c.CommitterID, epoch: c.Epoch}, true, nil
}

// summaryProps builds the summary of a floe commit.
func summaryProps(connector string, checkpoint uint64, offsets map[string]int64, committer string, epoch int64) (map[string]string, error) {
	b, err := json.Marshal(offsets)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		summaryConnector:      connector,
		summaryCheckpoint:     strconv.FormatUint(checkpoint, 10),
		summaryOffsets:        string(b),
		summaryCommitterID:    committer,
		summaryCommitterEpoch: strconv.FormatInt(epoch, 10),
	}, nil
}

// history is what a table's main-branch history says about one connector.
type history struct {
	// newest is the connector's newest commit reachable from the head.
	newest floeCommit
	found  bool
	// checkpoints holds the connector's commits the walk saw, by
	// checkpoint id.
	checkpoints map[uint64]floeCommit
}

// walkHistory walks the main branch back from its head, skipping other
// writers' and compaction snapshots, to the connector's newest commit, and
// on through the connector's commits while their checkpoint ids are at
// least from (pass math.MaxUint64 to stop at the newest). It fails when
// the history was expired before reaching any commit of a table the
// connector marked: that table's position is then unknown.
func walkHistory(tbl *table.Table, connector string, from uint64) (history, error) {
	h := history{checkpoints: map[uint64]floeCommit{}}
	snap := tbl.CurrentSnapshot()
	seen := map[int64]bool{}
	for snap != nil {
		if seen[snap.SnapshotID] {
			return h, fmt.Errorf("snapshot history has a cycle at %d", snap.SnapshotID)
		}
		seen[snap.SnapshotID] = true
		c, ok, err := parseFloeCommit(snap, connector)
		if err != nil {
			return h, err
		}
		if ok {
			if !h.found {
				h.newest, h.found = c, true
			}
			h.checkpoints[c.checkpoint] = c
			if c.checkpoint < from || from == math.MaxUint64 {
				return h, nil
			}
		}
		if snap.ParentSnapshotID == nil {
			return h, nil
		}
		parent := tbl.SnapshotByID(*snap.ParentSnapshotID)
		if parent == nil {
			if _, marked := tbl.Properties()[propConnectorPrefix+connector]; marked && !h.found {
				return h, fmt.Errorf("snapshot %d's parent %d was expired before any commit of connector %q was found: "+
					"the table's position for this connector is unknown (keep the connector's newest snapshot when expiring, or reset the connector's offsets)",
					snap.SnapshotID, *snap.ParentSnapshotID, connector)
			}
			return h, nil
		}
		snap = parent
	}
	return h, nil
}
