package iceberg

import (
	"context"
	"errors"
	"testing"

	icebergapi "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// raceLosingCatalog creates what it is asked to and then answers as a
// catalog does for a creation that lost the race with another task: the
// REST catalog's JDBC backend answers a duplicate key with a server error,
// not "already exists".
type raceLosingCatalog struct{ catalog.Catalog }

var errLostRace = errors.New("UncheckedSQLException: Failed to execute: INSERT INTO iceberg_namespace_properties")

func (c raceLosingCatalog) CreateNamespace(ctx context.Context, ns table.Identifier, props icebergapi.Properties) error {
	if err := c.Catalog.CreateNamespace(ctx, ns, props); err != nil {
		return err
	}
	return errLostRace
}

func (c raceLosingCatalog) CreateTable(ctx context.Context, id table.Identifier, sc *icebergapi.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	if _, err := c.Catalog.CreateTable(ctx, id, sc, opts...); err != nil {
		return nil, err
	}
	return nil, errLostRace
}

func TestCreateTableSurvivesALostCreationRace(t *testing.T) {
	f := newFixture(t, nil)
	tk := f.open(1)
	tk.cat = raceLosingCatalog{tk.cat}
	st, _, err := tk.createTable(context.Background(), "db.events", schemaV1)
	if err != nil {
		t.Fatalf("createTable after the other task won both races: %v", err)
	}
	if st == nil || st.ident == nil {
		t.Fatalf("createTable returned no table state")
	}
	f.load("db.events")
}
