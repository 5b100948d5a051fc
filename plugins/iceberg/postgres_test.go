package iceberg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestPostgresCatalog runs the sink against a sql catalog on Postgres.
// Each run uses its own catalog name, so runs do not see each other's
// tables.
func TestPostgresCatalog(t *testing.T) {
	url := os.Getenv("FLOE_POSTGRES_URL")
	if url == "" {
		t.Skip("set FLOE_POSTGRES_URL=postgres://user:pw@host:5432/db to run the sink against a Postgres catalog")
	}
	f := newFixture(t, map[string]string{
		keyCatalogURI:  url,
		keyCatalogName: fmt.Sprintf("floe_test_%d", time.Now().UnixNano()),
		keyTables:      "pg.events,pg.copy",
	})
	tk := f.open(2)
	prepare(t, tk, 1, schemaV1)
	step(t, tk, 1, batchV1("p", 0, 100))
	step(t, tk, 2, batchV1("p", 100, 50), batchV1("q", 0, 10))
	for _, name := range []string{"pg.events", "pg.copy"} {
		f.checkExactlyOnce(name, map[string][2]int64{"p": {0, 150}, "q": {0, 10}})
	}
	fr, err := f.open(1).Frontier(context.Background())
	if err != nil || fr.Checkpoint != 2 || fr.Positions["p"] != 150 || fr.Positions["q"] != 10 {
		t.Fatalf("frontier = %+v, %v", fr, err)
	}
	if err := commitErr(t, tk, 3, batchV1("p", 100, 10)); !errors.Is(err, ErrFenced) {
		t.Fatalf("overlap: %v", err)
	}
}
