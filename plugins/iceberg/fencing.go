package iceberg

import (
	"errors"
	"fmt"
	"maps"
	"sort"

	"github.com/floehq/floe/sdk"
)

// ErrFenced is wrapped by Commit when a checkpoint's source ranges do not
// continue a table's committed frontier: records another writer already
// committed (an overlap: that writer owns the partition) or records
// missing (a gap); or when its id is not above the connector's newest
// commit to the table (a superseded committer's). Nothing of the
// checkpoint is committed to that table; the host drops its uncommitted
// work and restarts the tasks from the tables' frontier.
var ErrFenced = errors.New("fenced")

// tableNotes is what the writers of a checkpoint report about one table:
// per source partition they had rows of, the floors below which they
// dropped rows (replays of what the table held).
type tableNotes struct {
	floors map[string][]floorNote
	mixed  map[string]bool
}

type floorNote struct {
	floor    int64
	hasFloor bool
}

func (n *tableNotes) add(tp tablePayload) {
	if n.floors == nil {
		n.floors, n.mixed = map[string][]floorNote{}, map[string]bool{}
	}
	for _, p := range tp.Partitions {
		f, ok := tp.Floors[p]
		n.floors[p] = append(n.floors[p], floorNote{floor: f, hasFloor: ok})
	}
	for _, p := range tp.Mixed {
		n.mixed[p] = true
	}
}

// fence checks a checkpoint's ranges against a table's frontier and
// returns the frontier the table has once the checkpoint is committed.
//
// For each range [From, Next) of a partition the table has a frontier F
// for (a partition new to the table is accepted as it comes):
//   - every writer that had rows of the partition for the table must
//     have started keeping rows exactly at F: max(From, its floor) == F.
//     Below F it would duplicate rows the table holds (an overlap:
//     another writer owns the partition); above F, rows are missing.
//   - when no writer had rows of it, the range must not start above F
//     (a gap); starting below is a replay that brought nothing.
//
// The table's new frontier is max(F, Next) for every range, and F for the
// partitions the checkpoint does not cover.
func fence(name string, frontier map[string]int64, ranges []sdk.Range, notes tableNotes) (map[string]int64, error) {
	next := maps.Clone(frontier)
	if next == nil {
		next = map[string]int64{}
	}
	covered := make(map[string]bool, len(ranges))
	for _, r := range ranges {
		covered[r.Partition] = true
		f, ok := frontier[r.Partition]
		if !ok {
			next[r.Partition] = r.Next
			continue
		}
		if notes.mixed[r.Partition] {
			return nil, fmt.Errorf("iceberg sink: %w: table %s: partition %s: the table's position was reloaded while checkpoint data was being written; the checkpoint cannot be checked",
				ErrFenced, name, r.Partition)
		}
		writers := notes.floors[r.Partition]
		if len(writers) == 0 && r.From > f {
			return nil, gapError(name, r.Partition, f, r.From)
		}
		for _, w := range writers {
			start := r.From
			if w.hasFloor && w.floor > start {
				start = w.floor
			}
			switch {
			case start < f:
				return nil, fmt.Errorf("iceberg sink: %w: table %s: partition %s committed up to %d, this checkpoint starts at %d: another writer owns it",
					ErrFenced, name, r.Partition, f, start)
			case start > f:
				return nil, gapError(name, r.Partition, f, start)
			}
		}
		next[r.Partition] = max(f, r.Next)
	}
	var stray []string
	for p := range notes.floors {
		if !covered[p] {
			stray = append(stray, p)
		}
	}
	if len(stray) > 0 {
		sort.Strings(stray)
		return nil, fmt.Errorf("iceberg sink: table %s: the writers hold rows of partitions %v, which the checkpoint's ranges do not cover", name, stray)
	}
	return next, nil
}

// fenceCheckpoint refuses a checkpoint whose id is not above the
// connector's newest commit to the table. Such a commit is a superseded
// committer's: a zombie that resumed after its successor, which started
// from the sink's frontier (the highest checkpoint over the tables),
// committed. Its ranges may well continue the frontier (partitions the
// successor has not committed yet), but a connector's checkpoint ids
// only grow in every table, for recovery and for every reader of the
// summaries. A retry of a checkpoint the table holds never gets here
// (committedAs).
func fenceCheckpoint(name string, h history, checkpoint uint64) error {
	if !h.found || checkpoint > h.newest.checkpoint {
		return nil
	}
	return fmt.Errorf("iceberg sink: %w: table %s: checkpoint %d is not above the connector's newest commit, checkpoint %d (snapshot %d, committer %s, epoch %d): another committer took over",
		ErrFenced, name, checkpoint, h.newest.checkpoint, h.newest.snapshotID, h.newest.committer, h.newest.epoch)
}

func gapError(name, partition string, committed, starts int64) error {
	return fmt.Errorf("iceberg sink: %w: table %s: partition %s committed up to %d, this checkpoint starts at %d: records %d..%d are missing",
		ErrFenced, name, partition, committed, starts, committed, starts-1)
}
