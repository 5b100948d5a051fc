package datagen_test

import (
	"testing"

	"github.com/floehq/floe/plugins/datagen"
	"github.com/floehq/floe/sdk/sdktest"
)

// kitCase is datagen's conformance case: a bounded run (so the kit sees
// the end of input) with several partitions.
func kitCase() sdktest.SourceCase {
	return sdktest.SourceCase{
		Component: "datagen",
		Config: map[string]string{
			datagen.KeyShape:      "clickstream",
			datagen.KeyCount:      "40000",
			datagen.KeyPartitions: "3",
			datagen.KeyBatchSize:  "1000",
		},
		Tasks:   2,
		Records: 5000,
	}
}

// The source kit over real go-plugin gRPC, with the component served from
// this process (so the race detector sees it).
func TestSourceKitInProcess(t *testing.T) {
	sdktest.SourceKit(t, sdktest.InProcess(datagen.Component()), kitCase())
}

// The source kit against the built binary, started as floe starts it.
func TestSourceKitBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := sdktest.Build(t, "./cmd/floe-plugin-datagen", "datagen")
	c := kitCase()
	c.Config[datagen.KeyShape] = "orders"
	c.Config[datagen.KeyRate] = "20000"
	sdktest.SourceKit(t, sdktest.Binary(bin), c)
}
