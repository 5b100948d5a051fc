package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/sdktest"
)

// TestConformance runs the SDK's partitioner kit against the built binary,
// exactly as floe would start it.
func TestConformance(t *testing.T) {
	bin := sdktest.Build(t, ".", "modulo")
	sdktest.PartitionerKit(t, sdktest.Binary(bin), sdktest.PartitionerCase{
		Component:     "modulo",
		Config:        map[string]string{"modulo.stride": "10"},
		Deterministic: true,
	})
}

// TestConformanceInProcess runs the same kit in-process, where the race
// detector sees the partitioner's code.
func TestConformanceInProcess(t *testing.T) {
	sdktest.PartitionerKit(t, sdktest.InProcess(Component()), sdktest.PartitionerCase{
		Component:     "modulo",
		Deterministic: true,
	})
}

func TestStride(t *testing.T) {
	batches := sdktest.SampleBatches(1, 1, 40)
	defer batches[0].Records.Release()
	p, err := modulo{}.Open(context.Background(), sdk.PartitionerOpenRequest{
		Config:  Component().Spec.Config(map[string]string{"modulo.stride": "10"}),
		Writers: 3,
		Logger:  discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Partition(context.Background(), batches[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range got {
		if want := uint32(i/10) % 3; w != want {
			t.Fatalf("offset %d went to writer %d, want %d", i, w, want)
		}
	}
	load := p.(sdk.PartitionerWithLoad).Load()
	if len(load) != 3 || load[0] != 1.5 { // offsets 0-9 and 30-39 on writer 0
		t.Errorf("Load() = %v", load)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
