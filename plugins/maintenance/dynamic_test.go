package maintenance

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floehq/floe/sdk"
)

// TestDynamicTables: with dynamic routing, the tables of the configured
// namespaces that the connector marked or wrote to are looked after too.
func TestDynamicTables(t *testing.T) {
	b := sqliteBackend(t)
	cat := b.catalog(t)
	createTable(t, cat, "db.events", nil)
	createTable(t, cat, "db.marked", iceberg.Properties{propConnectorPrefix + "orders": "1"})
	createTable(t, cat, "db.written", nil)
	createTable(t, cat, "db.foreign", nil)
	if err := newWriter(cat, "db.written", "orders").commit(context.Background(), rowsFor(0, 2, 1)); err != nil {
		t.Fatal(err)
	}
	if err := newWriter(cat, "db.foreign", "someone-else").commit(context.Background(), rowsFor(0, 2, 1)); err != nil {
		t.Fatal(err)
	}
	s, err := parseSettings("orders", sdk.NewConfig(b.config("db.events", keyDynamic, "true")))
	if err != nil {
		t.Fatal(err)
	}
	got, err := resolveTables(context.Background(), cat, s)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if strings.Join(got, ",") != "db.events,db.marked,db.written" {
		t.Fatalf("tables: %v", got)
	}
	// Without a namespace every namespace is searched.
	s.namespaces, s.tables = nil, nil
	if got, err = resolveTables(context.Background(), cat, s); err != nil || len(got) != 2 {
		t.Fatalf("all namespaces: %v %v", got, err)
	}
}

// TestForceUnknownTask names the tasks.
func TestForceUnknownTask(t *testing.T) {
	b := sqliteBackend(t)
	createTable(t, b.catalog(t), "db.events", nil)
	tk := b.openTask(t, b.config("db.events"))
	_, err := tk.Cycle(context.Background(), sdk.CycleRequest{Force: []string{"compact"}})
	if err == nil || !strings.Contains(err.Error(), taskRewriteData) {
		t.Fatalf("err = %v", err)
	}
	// A table the sink has not created yet is skipped, not an error.
	tk = b.openTask(t, b.config("db.events,db.later"))
	if res := cycle(t, tk, sdk.CycleRequest{}); len(res.Runs) == 0 {
		t.Log("no runs")
	}
	st, err := tk.Status(context.Background())
	if err != nil || len(st.Tables) != 1 {
		t.Fatalf("status: %+v %v", st.Tables, err)
	}
}
