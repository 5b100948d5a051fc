package maintenance

import (
	"context"
	"testing"

	"github.com/floehq/floe/sdk/sdktest"
)

// kitCase is the conformance case: every check gets a fresh catalog with a
// table of small files, so cycles have real work.
func kitCase(b func(t testing.TB) backend) sdktest.MaintenanceCase {
	return sdktest.MaintenanceCase{
		Component: "iceberg-maintenance",
		Config:    map[string]string{keyIcebergTables: "db.events", keyDataDir: "/nonexistent"},
		FreshConfig: func(t testing.TB) map[string]string {
			bk := b(t)
			cat := bk.catalog(t)
			createTable(t, cat, "db.events", sinkTableProps)
			fill(t, newWriter(cat, "db.events", "sdktest"), 12, 2, 2)
			return bk.config("db.events")
		},
		Force: []string{taskRewriteData, taskExpire},
	}
}

// TestConformance runs sdk/sdktest's MaintenanceKit in process over real
// go-plugin gRPC (the race detector sees the plugin's code).
func TestConformance(t *testing.T) {
	// One catalog per check, shared by every Open of that check.
	var current backend
	open := func(ctx context.Context, cfg map[string]string) (catalogConn, error) { return current.open(ctx, cfg) }
	c := kitCase(func(t testing.TB) backend { current = sqliteBackend(t); return current })
	sdktest.MaintenanceKit(t, sdktest.InProcess(newComponent(open)), c)
}

// TestConformanceBinary runs the kit against the built plugin binary, as
// floe starts it; the binary opens the embedded catalog under
// floe.data.dir through package lake.
func TestConformanceBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := sdktest.Build(t, "./cmd/floe-plugin-iceberg-maintenance", "iceberg-maintenance")
	sdktest.MaintenanceKit(t, sdktest.Binary(bin), kitCase(sqliteBackend))
}
