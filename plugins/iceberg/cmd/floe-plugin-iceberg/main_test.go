package main

import (
	"path/filepath"
	"testing"

	"github.com/floehq/floe/sdk/sdktest"
)

// The built plugin binary passes the SDK's sink kit, started exactly as
// floe starts it.
func TestBinaryConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := sdktest.Build(t, ".", "iceberg")
	sdktest.SinkKit(t, sdktest.Binary(bin), sdktest.SinkCase{
		Component: "iceberg",
		FreshConfig: func(t testing.TB) map[string]string {
			dir := t.TempDir()
			return map[string]string{
				"iceberg.tables": "kit.orders",
				"floe.data.dir":  filepath.Join(dir, "data"),
			}
		},
	})
}
