package iceberg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/sdk"
)

// Frontier answers where each source partition resumes, from the tables.
//
// It reloads every table the connector writes (the configured ones, and
// with dynamic routing every table in the catalog carrying the
// connector's marker), finds in each the connector's newest commit
// (walking back past other writers' and compaction snapshots) and resets
// the writers' replay floors and the committer's view to it.
//
// The rule: only tables the connector has routed rows to count (they
// carry its marker, set before any of those rows can be committed
// anywhere). A partition is in the answer only if every such table has a
// position for it, and then its position is the minimum over them; a
// table ahead of it drops the replayed rows it holds. A partition some
// counted table has no position for is left out, so the source resumes it
// from its own start (the consumer group's offset, which the host commits
// only after every table of a checkpoint committed; else earliest or
// latest): that table may have lost its first commit of the partition in
// a crash between two tables' commits, and taking the other tables'
// position would skip those rows for it. The checkpoint is the highest
// the connector committed to any table.
func (t *task) Frontier(ctx context.Context) (sdk.Frontier, error) {
	if err := t.closedErr(); err != nil {
		return sdk.Frontier{}, err
	}
	t.structMu.Lock()
	defer t.structMu.Unlock()

	names := slices.Clone(t.cfg.tables)
	if t.cfg.dynamic {
		more, err := t.markedTables(ctx)
		if err != nil {
			return sdk.Frontier{}, err
		}
		for _, n := range more {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}

	var positions map[string]int64
	var checkpoint uint64
	for _, name := range names {
		id, err := parseTableName(name)
		if err != nil {
			return sdk.Frontier{}, err
		}
		tbl, err := t.cat.LoadTable(ctx, id)
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			continue
		}
		if err != nil {
			return sdk.Frontier{}, fmt.Errorf("iceberg sink: load table %s: %w", name, err)
		}
		h, err := walkHistory(tbl, t.connector, math.MaxUint64)
		if err != nil {
			return sdk.Frontier{}, fmt.Errorf("iceberg sink: table %s: %w", name, err)
		}
		st := t.knownTable(name)
		if st == nil {
			if _, err := t.adopt(name, tbl); err != nil {
				return sdk.Frontier{}, err
			}
		} else {
			if err := st.setTable(tbl); err != nil {
				return sdk.Frontier{}, err
			}
			st.resetProgress(h, t.connector, t.reset)
		}
		_, marked := tbl.Properties()[propConnectorPrefix+t.connector]
		if !marked && !h.found {
			continue // the connector never routed rows to it
		}
		if h.found && h.newest.checkpoint > checkpoint {
			checkpoint = h.newest.checkpoint
		}
		positions = intersectMin(positions, h.newest.offsets)
	}
	if positions == nil {
		positions = map[string]int64{}
	}
	return sdk.Frontier{Positions: positions, Checkpoint: checkpoint}, nil
}

// intersectMin keeps the partitions both maps have, at the lower position.
// A nil acc is the identity.
func intersectMin(acc, next map[string]int64) map[string]int64 {
	if acc == nil {
		out := make(map[string]int64, len(next))
		for p, v := range next {
			out[p] = v
		}
		return out
	}
	for p, v := range acc {
		if w, ok := next[p]; ok {
			acc[p] = min(v, w)
		} else {
			delete(acc, p)
		}
	}
	return acc
}

// markedTables lists every table in the catalog that carries the
// connector's marker: the tables dynamic routing wrote to.
func (t *task) markedTables(ctx context.Context) ([]string, error) {
	var out []string
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		nss, err := t.cat.ListNamespaces(ctx, parent)
		if err != nil {
			return fmt.Errorf("iceberg sink: list namespaces of %q: %w", strings.Join(parent, "."), err)
		}
		for _, ns := range nss {
			for id, err := range t.cat.ListTables(ctx, ns) {
				if err != nil {
					return fmt.Errorf("iceberg sink: list tables of %s: %w", strings.Join(ns, "."), err)
				}
				tbl, err := t.cat.LoadTable(ctx, id)
				if err != nil {
					return fmt.Errorf("iceberg sink: load table %s: %w", tableKey(id), err)
				}
				if _, ok := tbl.Properties()[propConnectorPrefix+t.connector]; ok {
					out = append(out, tableKey(id))
				}
			}
			if len(ns) > len(parent) && !slices.Equal(ns, parent) {
				if err := walk(ns); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
