package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/floehq/floe/lake"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/sdktest"
)

// The built plugin binary passes the SDK's sink kit, started exactly as
// floe starts it. commit_retry kills the plugin right after its first
// table's catalog commit (the host is never told) and retries from a
// fresh process.
func TestBinaryConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := sdktest.Build(t, ".", "iceberg")
	fresh := func(tables string) func(t testing.TB) map[string]string {
		return func(t testing.TB) map[string]string {
			dir := t.TempDir()
			return map[string]string{
				"iceberg.tables": tables,
				"floe.data.dir":  filepath.Join(dir, "data"),
			}
		}
	}
	sdktest.SinkKit(t, sdktest.Binary(bin), sdktest.SinkCase{
		Component:   "iceberg",
		FreshConfig: fresh("kit.orders"),
		CommitRetry: &sdktest.CommitRetry{
			Interrupted: sdktest.BinaryWithEnv(bin, sdk.CrashPointEnv+"=iceberg.commit.after-catalog"),
			Config:      fresh("kit.a,kit.b"),
			Checkpoints: tableCheckpoints,
		},
	})
}

// tableCheckpoints reads, per table of the config, the checkpoint of
// every floe commit of connector from the snapshot summaries.
func tableCheckpoints(t testing.TB, cfg map[string]string, connector string) map[string][]uint64 {
	t.Helper()
	ctx := context.Background()
	cc, err := lake.ParseCatalogConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cat, closeCat, err := lake.OpenCatalog(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeCat() }()
	out := map[string][]uint64{}
	for _, name := range strings.Split(cfg["iceberg.tables"], ",") {
		tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(name))
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		out[name] = []uint64{}
		for _, s := range tbl.Metadata().Snapshots() {
			c, ok, err := lake.ParseCommit(&s)
			if err != nil {
				t.Fatalf("%s: snapshot %d: %v", name, s.SnapshotID, err)
			}
			if ok && c.Connector == connector {
				out[name] = append(out[name], c.Checkpoint)
			}
		}
	}
	return out
}
