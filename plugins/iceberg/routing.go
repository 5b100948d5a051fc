package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floehq/floe/sdk"
)

// routed says which rows of a batch go to which tables.
type routed struct {
	tables []*tableState
	// rows[i] lists the rows for tables[i], ascending; nil means all rows.
	rows     [][]int32
	rejected []sdk.Rejected
	// skipped counts the rows that reached no table and were dropped
	// (iceberg.tables.unrouted=skip); example is one's route value.
	skipped int64
	example string
}

// unroutedCounter counts the records dropped for reaching no table, per
// checkpoint of the Writes that dropped them: Writes of N+1 may come
// before Flush(N), and each checkpoint's count belongs to its own flush.
// Safe for concurrent use.
type unroutedCounter struct {
	mu      sync.Mutex
	pending map[uint64]unroutedCount // by checkpoint, not yet flushed
	total   int64
	// flushed is what flushes took and Skipped has not yet handed on.
	flushed int64
}

type unroutedCount struct {
	n       int64
	example string
}

func (c *unroutedCounter) add(checkpoint uint64, n int64, example string) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[uint64]unroutedCount{}
	}
	p := c.pending[checkpoint]
	p.n += n
	if p.example == "" {
		p.example = example
	}
	c.pending[checkpoint] = p
	c.total += n
}

// flush takes the counts of checkpoint and earlier ones: how many were
// dropped, how many in all since the task opened, and one route value.
func (c *unroutedCounter) flush(checkpoint uint64) (n, total int64, example string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cp, p := range c.pending {
		if cp > checkpoint {
			continue
		}
		n += p.n
		if example == "" {
			example = p.example
		}
		delete(c.pending, cp)
	}
	c.flushed += n
	return n, c.total, example
}

// skipped hands on what flushes took since the last call.
func (c *unroutedCounter) skipped() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.flushed
	c.flushed = 0
	return n
}

// reportUnrouted takes what Writes of checkpoint (and earlier ones)
// dropped for reaching no table and, unless iceberg.tables.unrouted.log
// is off, logs it once per checkpoint, so that skipping is never silent
// even where nobody reads the metric.
func (t *task) reportUnrouted(checkpoint uint64) {
	n, total, example := t.unrouted.flush(checkpoint)
	if n == 0 || !t.cfg.logUnrouted {
		return
	}
	t.log.Info("iceberg sink: skipped records that reach no table, as the Apache Iceberg sink does (set "+keyUnrouted+"=reject to dead-letter them instead)",
		"checkpoint", checkpoint, "skipped", n, "skipped_total", total,
		"route_field", strings.Join(t.cfg.routeField, "."), "example_value", example)
}

// Skipped reports the records dropped for reaching no table that the
// flushes since the last call took (sdk.SinkTaskWithSkips): the host
// counts them in floe_records_skipped_total and the connector's status.
func (t *task) Skipped(uint64) int64 { return t.unrouted.skipped() }

// route decides each row's tables, readies those tables for the batch's
// schema and marks them for the connector. Without a route field every
// row goes to every configured table. With one, a row goes to every table
// whose route-regex fully matches the field's value, or (dynamic routing)
// to the table the value names; a row that reaches no table is rejected
// with the reason.
func (t *task) route(ctx context.Context, b sdk.Batch) (routed, error) {
	values := t.schemaOf(b)
	var r routed
	if t.cfg.routeField == nil {
		for _, name := range t.cfg.tables {
			st, err := t.readyTable(ctx, name, b.SchemaID, values)
			if err != nil {
				return routed{}, err
			}
			r.tables = append(r.tables, st)
			r.rows = append(r.rows, nil)
		}
		return r, t.markAll(ctx, r.tables)
	}

	val, err := routeValues(b.Records, t.cfg.routeField)
	if err != nil {
		return routed{}, err
	}
	offsets, err := offsetColumn(b.Records)
	if err != nil {
		return routed{}, err
	}
	// Values repeat: decide once per distinct value.
	type decision struct {
		targets []int // indexes into r.tables
		reason  string
		// unrouted: the record reaches no table (not an error of a
		// table it reaches): skipped when the config says so.
		unrouted bool
	}
	decided := map[string]decision{}
	byName := map[string]int{}
	target := func(name string) (int, string, error) {
		if i, ok := byName[name]; ok {
			return i, "", nil
		}
		st, err := t.readyTable(ctx, name, b.SchemaID, values)
		if errors.Is(err, sdk.ErrSchemaRejected) || errors.Is(err, errNoTable) {
			return -1, err.Error(), nil
		}
		if err != nil {
			return -1, "", err
		}
		byName[name] = len(r.tables)
		r.tables = append(r.tables, st)
		r.rows = append(r.rows, []int32{})
		return len(r.tables) - 1, "", nil
	}
	field := strings.Join(t.cfg.routeField, ".")
	n := int(b.Records.NumRows())
	for i := range n {
		v, ok := val(i)
		if !ok {
			if t.cfg.skipUnrouted {
				r.skipped++
				if r.example == "" {
					r.example = "null"
				}
				continue
			}
			r.rejected = append(r.rejected, sdk.Rejected{Offset: offsets.Value(i),
				Reason: fmt.Sprintf("iceberg sink: route field %s is null: the record matches no table", field)})
			continue
		}
		d, seen := decided[v]
		if !seen {
			if t.cfg.dynamic {
				name := strings.ToLower(strings.TrimSpace(v))
				if _, err := parseTableName(name); err != nil {
					d.reason = fmt.Sprintf("iceberg sink: route field %s = %q does not name a table: %v", field, v, err)
					d.unrouted = true
				} else {
					idx, reason, err := target(name)
					if err != nil {
						return routed{}, err
					}
					if reason != "" {
						d.reason = reason
					} else {
						d.targets = []int{idx}
					}
				}
			} else {
				for _, name := range t.cfg.tables {
					if !t.cfg.routeRegex[name].MatchString(v) {
						continue
					}
					idx, reason, err := target(name)
					if err != nil {
						return routed{}, err
					}
					if reason != "" {
						// A configured table rejecting the schema is an
						// error PrepareSchema reports; here it fails.
						return routed{}, errors.New(reason)
					}
					d.targets = append(d.targets, idx)
				}
				if len(d.targets) == 0 {
					d.reason = fmt.Sprintf("iceberg sink: route field %s = %q matches no table's route-regex", field, v)
					d.unrouted = true
				}
			}
			decided[v] = d
		}
		if d.unrouted && t.cfg.skipUnrouted {
			r.skipped++
			if r.example == "" {
				r.example = v
			}
			continue
		}
		if d.reason != "" {
			r.rejected = append(r.rejected, sdk.Rejected{Offset: offsets.Value(i), Reason: d.reason})
			continue
		}
		for _, idx := range d.targets {
			r.rows[idx] = append(r.rows[idx], int32(i))
		}
	}
	// A table that took every row needs no row list.
	for i := range r.rows {
		if len(r.rows[i]) == n {
			r.rows[i] = nil
		}
	}
	return r, t.markAll(ctx, r.tables)
}

// readyTable returns a table readied for a schema (created or evolved).
func (t *task) readyTable(ctx context.Context, name string, schemaID int64, values *arrow.Schema) (*tableState, error) {
	if _, err := t.prepareTable(ctx, name, schemaID, values); err != nil {
		return nil, err
	}
	return t.knownTable(name), nil
}

func (t *task) markAll(ctx context.Context, tables []*tableState) error {
	for _, st := range tables {
		if err := t.markTable(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// offsetColumn returns a batch's __offset column.
func offsetColumn(rec arrow.RecordBatch) (*array.Int64, error) {
	idx := rec.Schema().FieldIndices(sdk.ColumnOffset)
	if len(idx) != 1 {
		return nil, fmt.Errorf("iceberg sink: batch has no %s column", sdk.ColumnOffset)
	}
	col, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("iceberg sink: batch column %s is %s, expected int64", sdk.ColumnOffset, rec.Column(idx[0]).DataType())
	}
	return col, nil
}

// routeValues returns a function giving row i's route value as a string,
// and false when it is null (or a parent struct is).
func routeValues(rec arrow.RecordBatch, path []string) (func(int) (string, bool), error) {
	field := strings.Join(path, ".")
	idx := rec.Schema().FieldIndices(path[0])
	if len(idx) != 1 {
		return nil, fmt.Errorf("iceberg sink: %s: the records have no field %s", keyRouteField, field)
	}
	chain := []arrow.Array{rec.Column(idx[0])}
	for _, name := range path[1:] {
		st, ok := chain[len(chain)-1].(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("iceberg sink: %s: %s is not a struct, so it has no field %s", keyRouteField, field, name)
		}
		j, ok := st.DataType().(*arrow.StructType).FieldIdx(name)
		if !ok {
			return nil, fmt.Errorf("iceberg sink: %s: the records have no field %s", keyRouteField, field)
		}
		chain = append(chain, st.Field(j))
	}
	leaf := chain[len(chain)-1]
	isNull := func(i int) bool {
		for _, a := range chain {
			if a.IsNull(i) {
				return true
			}
		}
		return false
	}
	var get func(i int) string
	switch a := leaf.(type) {
	case *array.String:
		get = a.Value
	case *array.LargeString:
		get = a.Value
	case *array.StringView:
		get = a.Value
	case *array.Binary:
		get = a.ValueString
	case *array.Int8:
		get = func(i int) string { return strconv.FormatInt(int64(a.Value(i)), 10) }
	case *array.Int16:
		get = func(i int) string { return strconv.FormatInt(int64(a.Value(i)), 10) }
	case *array.Int32:
		get = func(i int) string { return strconv.FormatInt(int64(a.Value(i)), 10) }
	case *array.Int64:
		get = func(i int) string { return strconv.FormatInt(a.Value(i), 10) }
	default:
		return nil, fmt.Errorf("iceberg sink: %s: field %s is %s; route fields must be strings or integers", keyRouteField, field, leaf.DataType())
	}
	return func(i int) (string, bool) {
		if isNull(i) {
			return "", false
		}
		return get(i), true
	}, nil
}
