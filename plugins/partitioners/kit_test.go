package partitioners_test

import (
	"testing"

	"github.com/floehq/floe/plugins/partitioners"
	"github.com/floehq/floe/sdk/sdktest"
)

// kitCases runs every component, and hash in each of its key modes,
// through the SDK's partitioner conformance kit.
func kitCases() []sdktest.PartitionerCase {
	return []sdktest.PartitionerCase{
		{Component: "hash", Deterministic: true, InvalidConfig: map[string]string{"partitioner.fields": "customer..id"}},
		{Component: "hash", Config: map[string]string{"partitioner.fields": "customer_id"}, Deterministic: true, Writers: 8,
			InvalidConfig: map[string]string{"partitioner.fields": "customer_id, (x)"}},
		{Component: "hash", Config: map[string]string{"iceberg.tables.default-partition-by": "day(ts), bucket(16, id)"}, Deterministic: true, Writers: 8,
			InvalidConfig: map[string]string{"iceberg.tables.default-partition-by": "bucket(id)"}},
		{Component: "roundrobin"},
		{Component: "shuffle"},
		{Component: "skew-aware", InvalidConfig: map[string]string{
			"partitioner.skew.hot-threshold": "1.5",
			"partitioner.skew.decay":         "0",
			"partitioner.skew.sketch.depth":  "99",
		}},
		{Component: "skew-aware", Config: map[string]string{
			"iceberg.tables.default-partition-by": "hour(ts)",
			"partitioner.skew.hot-threshold":      "0.05",
		}, Writers: 8},
	}
}

func name(c sdktest.PartitionerCase) string {
	n := c.Component
	for k, v := range c.Config {
		n += " " + k + "=" + v
	}
	return n
}

func TestKitInProcess(t *testing.T) {
	target := sdktest.InProcess(partitioners.Components()...)
	for _, c := range kitCases() {
		t.Run(name(c), func(t *testing.T) { sdktest.PartitionerKit(t, target, c) })
	}
}

func TestKitBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	target := sdktest.Binary(sdktest.Build(t, "./cmd/floe-plugin-partitioners", "partitioners"))
	for _, c := range kitCases() {
		t.Run(name(c), func(t *testing.T) { sdktest.PartitionerKit(t, target, c) })
	}
}
