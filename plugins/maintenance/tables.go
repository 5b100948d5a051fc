package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
)

// Snapshot-summary keys floe's commits carry (docs/architecture.md,
// "Exactly once") and the keys maintenance adds to its own commits.
const (
	summaryConnector = lake.SummaryConnector
	// summaryMaintenance names the task that made a snapshot; the monitor
	// does not count such snapshots as commits.
	summaryMaintenance = "floe.maintenance"
	// propConnectorPrefix + connector is the table property the sink sets
	// on a table the connector routes rows to.
	propConnectorPrefix = lake.PropConnectorPrefix
)

// tableName is the name floe uses for a table: its identifier joined by dots.
func tableName(id table.Identifier) string { return strings.Join(id, ".") }

// resolveTables lists the tables to look after: the configured ones, plus,
// with dynamic routing, every table of the namespaces (all namespaces when
// none is configured) that the connector marked or committed to. A listed
// table that does not exist yet (the sink creates it with its first rows)
// is left out.
func resolveTables(ctx context.Context, cat catalog.Catalog, s settings) ([]string, error) {
	out := slices.Clone(s.tables)
	if !s.dynamic {
		return out, nil
	}
	var namespaces []table.Identifier
	if len(s.namespaces) > 0 {
		for _, ns := range s.namespaces {
			namespaces = append(namespaces, strings.Split(ns, "."))
		}
	} else {
		all, err := cat.ListNamespaces(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("list namespaces: %w", err)
		}
		namespaces = all
	}
	for _, ns := range namespaces {
		for id, err := range cat.ListTables(ctx, ns) {
			if errors.Is(err, catalog.ErrNoSuchNamespace) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err)
			}
			name := tableName(id)
			if slices.Contains(out, name) {
				continue
			}
			tbl, err := cat.LoadTable(ctx, id)
			if err != nil {
				continue // dropped meanwhile, or unreadable: not ours to judge here
			}
			if writtenBy(tbl, s.connector) {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

// writtenBy reports whether connector routed rows to tbl: the sink's table
// marker, or a snapshot whose summary names the connector.
func writtenBy(tbl *table.Table, connector string) bool {
	if _, ok := tbl.Properties()[propConnectorPrefix+connector]; ok {
		return true
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[summaryConnector] == connector {
			return true
		}
	}
	return false
}

// protectedDepth is how many snapshots of the main branch, counted from
// its head, expiry must keep so that the newest snapshot of every floe
// connector survives: recovery walks back from the head to the
// connector's newest commit (lake.NewestCommits) and reads its offsets.
// The newest snapshot naming a connector in any other operation is kept
// too. 0 means no floe snapshot is on the branch.
func protectedDepth(tbl *table.Table) (int, error) {
	head := tbl.CurrentSnapshot()
	if head == nil {
		return 0, nil
	}
	newest, err := lake.NewestCommits(tbl)
	if err != nil {
		return 0, err
	}
	keep := map[int64]bool{}
	for _, c := range newest {
		keep[c.SnapshotID] = true
	}
	seen := map[string]bool{}
	depth := 0
	for i, snap := range table.AncestorsOf(head.SnapshotID, tbl.Metadata().SnapshotByID) {
		if keep[snap.SnapshotID] {
			depth = i + 1
		}
		if snap.Summary == nil {
			continue
		}
		if c := snap.Summary.Properties[summaryConnector]; c != "" && !seen[c] {
			seen[c] = true
			depth = max(depth, i+1)
		}
	}
	return depth, nil
}
