package iceberg

import (
	"testing"

	"github.com/floehq/floe/sdk/sdktest"
)

// The SDK's sink conformance kit, over real go-plugin gRPC, in process.
func TestConformance(t *testing.T) {
	sdktest.SinkKit(t, sdktest.InProcess(Component()), sdktest.SinkCase{
		Component: "iceberg",
		FreshConfig: func(t testing.TB) map[string]string {
			return map[string]string{keyTables: "kit.orders", keyDataDir: t.TempDir()}
		},
		Writers: 2,
	})
}
