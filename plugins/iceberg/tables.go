package iceberg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/lake/partspec"
	"github.com/floehq/floe/schemas"
	"github.com/floehq/floe/sdk"
)

// errNoTable is wrapped when a table the sink must write does not exist
// and may not be created.
var errNoTable = errors.New("the table does not exist")

// parseTableName splits "namespace.table" (or "a.b.table") into an
// identifier.
func parseTableName(s string) (table.Identifier, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("table %q: expected namespace.table", s)
	}
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t/\\") {
			return nil, fmt.Errorf("table %q: expected namespace.table (names without blanks or slashes)", s)
		}
	}
	return parts, nil
}

// tableKey is the name floe uses for a table: its identifier joined by dots.
func tableKey(id table.Identifier) string { return strings.Join(id, ".") }

// tableState is the sink's view of one table.
type tableState struct {
	name  string
	ident table.Identifier

	mu sync.RWMutex
	// tbl is the newest table the sink loaded or committed.
	tbl *table.Table
	// target is tbl's current schema as Arrow: what writers conform every
	// batch to.
	target *arrow.Schema
	// version changes whenever target or the partition spec changes;
	// writers then close their pipelines and open new ones.
	version uint64
	// floor is the table's frontier when the task last loaded its
	// progress (at first use, or at Frontier): writers drop rows below it,
	// which the table already holds.
	floor map[string]int64
	// marked says the table carries this connector's marker property.
	marked bool
	// prepared holds the value schema ids the table was readied for.
	prepared map[int64]bool
	// written is writtenFor as the writers write it (writeTable).
	written, writtenFor *table.Table

	// The committer's view. Commit calls are serial; Frontier resets it.
	//
	// headID is the connector's newest snapshot in the table as the
	// committer knows it (0: none), and frontier what the table holds as
	// of it, extended by checkpoints that brought the table no rows.
	headID    int64
	frontier  map[string]int64
	committer string
	epoch     int64
}

// view is what writers need of a table, read under one lock.
type tableView struct {
	tbl     *table.Table
	target  *arrow.Schema
	version uint64
	floor   map[string]int64
}

func (st *tableState) view() tableView {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return tableView{tbl: st.tbl, target: st.target, version: st.version, floor: st.floor}
}

// setTable records a newer table; a schema or spec change bumps version.
func (st *tableState) setTable(tbl *table.Table) error {
	target, err := schemas.ArrowForTable(tbl.Schema())
	if err != nil {
		return fmt.Errorf("table %s: Arrow form of schema %d: %w", st.name, tbl.Schema().ID, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tbl == nil || st.tbl.Schema().ID != tbl.Schema().ID || specID(st.tbl) != specID(tbl) ||
		st.tbl.Location() != tbl.Location() || !st.target.Equal(target) {
		st.target = target
		st.version++
	}
	st.tbl = tbl
	return nil
}

// writeTable is tbl as the writers write it: props (the task's
// write-props) laid over its properties with floe's writer defaults
// (lake.WriterProps). Made once per table the state holds and shared by
// the writers: a view copies the table's metadata (0.19 ms with 500
// snapshots), which each writer's pipeline start would otherwise pay at
// every checkpoint.
func (st *tableState) writeTable(tbl *table.Table, props map[string]string) (*table.Table, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.writtenFor == tbl {
		return st.written, nil
	}
	w, err := lake.WriteView(tbl, lake.WriterProps(tbl.Properties(), props))
	if err != nil {
		return nil, err
	}
	st.written, st.writtenFor = w, tbl
	return w, nil
}

func specID(tbl *table.Table) int {
	spec := tbl.Spec()
	return spec.ID()
}

// resetProgress makes h the table's progress: the writers' floor and the
// committer's view. A pending offset override replaces the frontier.
func (st *tableState) resetProgress(h history, connector string, reset *offsetsReset) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.floor = maps.Clone(h.newest.offsets)
	if reset.appliesTo(h) {
		st.floor = reset.positions()
	}
	if st.floor == nil {
		st.floor = map[string]int64{}
	}
	st.headID = h.newest.snapshotID
	st.frontier = maps.Clone(st.floor)
	st.committer = h.newest.committer
	st.epoch = h.newest.epoch
	if st.tbl != nil {
		_, st.marked = st.tbl.Properties()[propConnectorPrefix+connector]
	}
}

// knownTable returns the state of a table the task already uses.
func (t *task) knownTable(name string) *tableState {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.tables[name]
}

// loadTable returns a table's state, loading it from the catalog on first
// use; nil when the table does not exist. Call with t.structMu held.
func (t *task) loadTableLocked(ctx context.Context, name string) (*tableState, error) {
	if st := t.knownTable(name); st != nil {
		return st, nil
	}
	id, err := parseTableName(name)
	if err != nil {
		return nil, err
	}
	tbl, err := t.cat.LoadTable(ctx, id)
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg sink: load table %s: %w", name, err)
	}
	return t.adopt(name, tbl)
}

// adopt starts tracking a loaded table.
func (t *task) adopt(name string, tbl *table.Table) (*tableState, error) {
	h, err := walkHistory(tbl, t.connector, math.MaxUint64)
	if err != nil {
		return nil, fmt.Errorf("iceberg sink: table %s: %w", name, err)
	}
	st := &tableState{name: name, ident: tbl.Identifier(), prepared: map[int64]bool{}}
	if err := st.setTable(tbl); err != nil {
		return nil, err
	}
	st.resetProgress(h, t.connector, t.reset)
	t.mu.Lock()
	t.tables[name] = st
	t.mu.Unlock()
	return st, nil
}

// prepareTable readies a table for rows of a value schema: it creates the
// table (auto-create) or evolves its schema, once per schema id. It
// returns the changes made, for logs. A schema the table cannot take
// yields an error wrapping sdk.ErrSchemaRejected.
func (t *task) prepareTable(ctx context.Context, name string, schemaID int64, values *arrow.Schema) ([]string, error) {
	if st := t.knownTable(name); st != nil {
		st.mu.RLock()
		done := st.prepared[schemaID]
		st.mu.RUnlock()
		if done {
			return nil, nil
		}
	}
	t.structMu.Lock()
	defer t.structMu.Unlock()

	input, err := tableInputSchema(values, t.cfg.metaColumns())
	if err != nil {
		return nil, fmt.Errorf("iceberg sink: table %s: %w", name, err)
	}
	if t.cfg.forceOptional {
		input = optionalSchema(input)
	}
	st, err := t.loadTableLocked(ctx, name)
	if err != nil {
		return nil, err
	}
	var changes []string
	if st == nil {
		if !t.cfg.autoCreate {
			return nil, fmt.Errorf("iceberg sink: table %s: %w and %s is false: create it, or enable auto-create", name, errNoTable, keyAutoCreate)
		}
		if st, changes, err = t.createTable(ctx, name, input); err != nil {
			return nil, err
		}
	}
	if st.prepared[schemaID] {
		return changes, nil
	}
	more, err := t.evolveTable(ctx, st, input)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	st.prepared[schemaID] = true
	st.mu.Unlock()
	return append(changes, more...), nil
}

// createTable creates a table for an input schema, with the configured
// partition spec and properties. A table created meanwhile by someone else
// is loaded instead.
func (t *task) createTable(ctx context.Context, name string, input *arrow.Schema) (*tableState, []string, error) {
	id, err := parseTableName(name)
	if err != nil {
		return nil, nil, err
	}
	sc, err := schemas.IcebergSchema(input)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg sink: table %s: %w: %w", name, sdk.ErrSchemaRejected, err)
	}
	terms := t.cfg.partitionBy(name)
	spec, err := partspec.Bind(sc, terms)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg sink: create table %s: %w: %w", name, sdk.ErrSchemaRejected, err)
	}
	ns := catalog.NamespaceFromIdent(id)
	exists, err := t.cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg sink: namespace %s: %w", strings.Join(ns, "."), err)
	}
	if !exists {
		err := t.cat.CreateNamespace(ctx, ns, nil)
		if err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) && !t.namespaceExists(ctx, ns) {
			return nil, nil, fmt.Errorf("iceberg sink: create namespace %s: %w", strings.Join(ns, "."), err)
		}
	}
	props := icebergapi.Properties(t.cfg.createProps())
	tbl, err := t.cat.CreateTable(ctx, id, sc, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if err != nil {
		// Another task may have won the race, reported as "already
		// exists" or, by some catalogs, as a server error.
		if loaded, lerr := t.cat.LoadTable(ctx, id); lerr == nil {
			tbl, err = loaded, nil
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg sink: create table %s: %w", name, err)
	}
	st, err := t.adopt(name, tbl)
	if err != nil {
		return nil, nil, err
	}
	part := "unpartitioned"
	if len(terms) > 0 {
		s := make([]string, len(terms))
		for i, term := range terms {
			s[i] = term.String()
		}
		part = "partitioned by " + strings.Join(s, ", ")
	}
	return st, []string{fmt.Sprintf("%s: created with %d columns, %s", name, sc.NumFields(), part)}, nil
}

// namespaceExists tells whether ns exists after a failed creation: the
// REST catalog's JDBC backend answers a creation that lost the race with
// another task with a server error (a duplicate key), not "already
// exists".
func (t *task) namespaceExists(ctx context.Context, ns table.Identifier) bool {
	exists, err := t.cat.CheckNamespaceExists(ctx, ns)
	return err == nil && exists
}

// matchNames is input with its field names matched to tbl's columns
// case-insensitively under iceberg.tables.schema-case-insensitive (see
// casefold.go), else input.
func (t *task) matchNames(tbl *table.Table, input *arrow.Schema) (*arrow.Schema, error) {
	if !t.cfg.caseInsensitive {
		return input, nil
	}
	target, err := schemas.ArrowForTable(tbl.Schema())
	if err != nil {
		return nil, fmt.Errorf("the Arrow form of schema %d: %w", tbl.Schema().ID, err)
	}
	out, _, err := foldNames(input, target)
	return out, err
}

// evolveTable brings a table's schema up to an input schema, in one
// transaction, retrying on conflicts with other writers.
func (t *task) evolveTable(ctx context.Context, st *tableState, input *arrow.Schema) ([]string, error) {
	b := t.backoff()
	for attempt := 1; ; attempt++ {
		tbl, err := t.cat.LoadTable(ctx, st.ident)
		if err != nil {
			return nil, fmt.Errorf("iceberg sink: load table %s: %w", st.name, err)
		}
		// An *schemas.IncompatibleError names the column and both
		// types; other errors are types Iceberg cannot hold. Both reject
		// the schema.
		in, err := t.matchNames(tbl, input)
		if err != nil {
			return nil, fmt.Errorf("iceberg sink: table %s: %w: %w", st.name, sdk.ErrSchemaRejected, err)
		}
		plan, err := schemas.PlanEvolution(tbl.Schema(), in)
		if err != nil {
			return nil, fmt.Errorf("iceberg sink: table %s: %w: %w", st.name, sdk.ErrSchemaRejected, err)
		}
		if plan.Empty() {
			return nil, st.setTable(tbl)
		}
		if !t.cfg.evolve {
			return nil, fmt.Errorf("iceberg sink: table %s: %w: the schema needs: %s; and %s is false",
				st.name, sdk.ErrSchemaRejected, plan, keyEvolve)
		}
		// Stage also keeps the table's name mapping in step.
		txn := tbl.NewTransaction()
		if err := plan.Stage(txn); err != nil {
			return nil, fmt.Errorf("iceberg sink: table %s: %w", st.name, err)
		}
		committed, err := txn.Commit(ctx)
		if err == nil {
			out := make([]string, len(plan.Changes))
			for i, c := range plan.Changes {
				out[i] = st.name + ": " + c.String()
			}
			return out, st.setTable(committed)
		}
		if !retryable(err) || attempt >= t.cfg.retryAttempts {
			return nil, fmt.Errorf("iceberg sink: table %s: evolve schema (attempt %d): %w", st.name, attempt, err)
		}
		if err := b.wait(ctx); err != nil {
			return nil, err
		}
	}
}

// markTable sets the connector's marker property on a table the first
// time the connector routes rows to it (see propConnectorPrefix).
func (t *task) markTable(ctx context.Context, st *tableState) error {
	st.mu.RLock()
	marked := st.marked
	st.mu.RUnlock()
	if marked {
		return nil
	}
	t.structMu.Lock()
	defer t.structMu.Unlock()
	st.mu.RLock()
	marked = st.marked
	st.mu.RUnlock()
	if marked {
		return nil
	}
	key := propConnectorPrefix + t.connector
	b := t.backoff()
	for attempt := 1; ; attempt++ {
		tbl, err := t.cat.LoadTable(ctx, st.ident)
		if err != nil {
			return fmt.Errorf("iceberg sink: load table %s: %w", st.name, err)
		}
		if _, ok := tbl.Properties()[key]; ok {
			break
		}
		txn := tbl.NewTransaction()
		if err := txn.SetProperties(icebergapi.Properties{key: "true"}); err != nil {
			return err
		}
		if _, err = txn.Commit(ctx); err == nil {
			break
		}
		if !retryable(err) || attempt >= t.cfg.retryAttempts {
			return fmt.Errorf("iceberg sink: table %s: set %s: %w", st.name, key, err)
		}
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
	st.mu.Lock()
	st.marked = true
	st.mu.Unlock()
	return nil
}
