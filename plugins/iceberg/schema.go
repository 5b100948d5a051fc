package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floehq/floe/sdk"
)

// PrepareSchema readies every configured table for rows of s: creates the
// tables that do not exist (auto-create) or evolves their schemas.
// Dynamically routed tables are readied when rows of s first reach them.
// A schema a table cannot take yields an error wrapping
// sdk.ErrSchemaRejected, naming the table, the field and both types.
func (t *task) PrepareSchema(ctx context.Context, s sdk.Schema) ([]string, error) {
	if s.Arrow == nil {
		return nil, fmt.Errorf("iceberg sink: schema %d has no Arrow form", s.ID)
	}
	values := valueSchema(s.Arrow)
	t.mu.Lock()
	t.schemas[s.ID] = values
	t.mu.Unlock()

	var changes []string
	for _, name := range t.cfg.tables {
		c, err := t.prepareTable(ctx, name, s.ID, values)
		if err != nil {
			return changes, err
		}
		changes = append(changes, c...)
	}
	return changes, nil
}

// valueSchema drops floe's metadata columns from a schema.
func valueSchema(s *arrow.Schema) *arrow.Schema {
	keep := make([]arrow.Field, 0, s.NumFields())
	for _, f := range s.Fields() {
		if !sdk.IsMetadataColumn(f.Name) {
			keep = append(keep, f)
		}
	}
	if len(keep) == s.NumFields() {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(keep, &md)
}

// schemaOf returns the value schema of a batch: the one PrepareSchema
// recorded for its id, or the batch's own columns.
func (t *task) schemaOf(b sdk.Batch) *arrow.Schema {
	t.mu.RLock()
	s := t.schemas[b.SchemaID]
	t.mu.RUnlock()
	if s != nil {
		return s
	}
	s = valueSchema(b.Records.Schema())
	t.mu.Lock()
	t.schemas[b.SchemaID] = s
	t.mu.Unlock()
	return s
}
