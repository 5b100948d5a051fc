// Package sdktest holds the conformance kits every floe plugin runs: one
// per plugin kind, each a set of named subtests that start the plugin and
// talk to it over real go-plugin gRPC, through the same client the floe host
// uses, and check the contract of package sdk.
//
// # Targets
//
// A kit runs against a [Target]: a built binary ([Binary], started exactly
// as floe starts it; [Build] compiles one into a temporary folder) or
// components served from the test process ([InProcess]), which is quicker
// and lets the race detector see the plugin's code. Every check starts a
// fresh process (or in-process server).
//
// # Kits
//
// [SourceKit], [PartitionerKit], [SinkKit] and [MaintenanceKit] each take
// a case describing the component under test: its name, a valid config,
// and knobs with sensible defaults. Their doc comments list the checks.
// A check that cannot apply to a plugin can be skipped by name (the Check*
// constants) in the case's Skip list; say why next to it.
//
//	func TestConformance(t *testing.T) {
//		bin := sdktest.Build(t, ".", "modulo")
//		sdktest.PartitionerKit(t, sdktest.Binary(bin), sdktest.PartitionerCase{
//			Component:     "modulo",
//			Deterministic: true,
//		})
//	}
//
// # Test data
//
// [SampleBatches] makes chaining batches of an orders-like schema for the
// partitioner and sink kits (their default input); [SampleSchema] is its
// value schema.
//
// # Failures
//
// Failure messages name the batch, key or call at fault and the rule it
// broke. When a check fails, the plugin's last log lines are printed too.
package sdktest
