package sdktest

import (
	"slices"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// CheckCapabilities is the sink and partitioner kits' check that the
// capabilities a component declares at Describe are the ones it serves.
const CheckCapabilities = "capabilities"

// kindCapabilities are the capabilities a component of each kind may
// declare.
func kindCapabilities(kind sdk.Kind) []sdk.Capability {
	switch kind {
	case sdk.KindSink:
		return []sdk.Capability{sdk.CapabilityFrontier, sdk.CapabilitySchemas, sdk.CapabilityWaits}
	case sdk.KindPartitioner:
		return []sdk.Capability{sdk.CapabilityLoad}
	}
	return nil
}

// checkDeclared fails a declaration naming a capability the kind has not,
// and logs what the component declares.
func checkDeclared(t tb, comp client.Component) {
	t.Helper()
	allowed := kindCapabilities(comp.Kind)
	for _, c := range comp.Capabilities {
		if !slices.Contains(allowed, c) {
			t.Errorf("%s %q declares capability %q, which a %s does not have (a %s may declare %v)", comp.Kind, comp.Name, c, comp.Kind, comp.Kind, allowed)
		}
	}
	t.Logf("%s %q declares capabilities %v", comp.Kind, comp.Name, comp.Capabilities)
}

func (k *sinkKitRun) capabilities(t tb, s *session, cfg map[string]string, _ []client.Batch) {
	comp := s.describe(sdk.KindSink, k.c.Component)
	checkDeclared(t, comp)
	task := k.open(t, s, cfg)
	defer k.closeSink(t, s, task)
	if got := task.Capabilities(); !slices.Equal(got, comp.Capabilities) {
		t.Errorf("the opened sink has capabilities %v, Describe declared %v", got, comp.Capabilities)
	}
	if comp.Has(sdk.CapabilityFrontier) {
		ctx, cancel := s.callCtx(callTimeout)
		_, err := task.Frontier(ctx)
		cancel()
		if err != nil {
			t.Errorf("the sink declares the frontier capability, but Frontier failed: %v", err)
		}
	}
	if comp.Has(sdk.CapabilityWaits) {
		// The services answer: a healthy sink waits for none.
		ctx, cancel := s.callCtx(callTimeout)
		waits, err := s.p.SinkWaits(ctx, k.c.Component, commitConnector)
		cancel()
		switch {
		case err != nil:
			t.Errorf("the sink declares the waits capability, but Waits failed: %v", err)
		case len(waits) > 0:
			t.Errorf("the sink, open on services that answer, says it waits for %v", waits)
		}
	}
	if comp.Has(sdk.CapabilitySchemas) {
		for _, b := range k.c.Batches {
			if b.Records == nil {
				continue
			}
			ws, err := client.EncodeSchema(b.SchemaID, valueSchema(b.Records.Schema()))
			if err != nil {
				t.Fatalf("%v", err)
			}
			ctx, cancel := s.callCtx(callTimeout)
			_, err = task.PrepareSchema(ctx, ws)
			cancel()
			if err != nil {
				t.Errorf("the sink declares the schemas capability, but PrepareSchema %d failed: %v", b.SchemaID, err)
			}
			break
		}
	}
}

func (k *partitionerKitRun) capabilities(t tb, s *session, in []client.Batch) {
	comp := s.describe(sdk.KindPartitioner, k.c.Component)
	checkDeclared(t, comp)
	task := k.open(t, s, k.c.Writers)
	if got := task.Capabilities(); !slices.Equal(got, comp.Capabilities) {
		t.Errorf("the opened partitioner has capabilities %v, Describe declared %v", got, comp.Capabilities)
	}
	// The client refuses a load the partitioner does not declare; a
	// declared one must show once records went through.
	reported := false
	for _, b := range in {
		ctx, cancel := s.callCtx(callTimeout)
		_, load, err := task.Partition(ctx, b)
		cancel()
		if err != nil {
			t.Fatalf("Partition of %s [%d, %d): %v", b.Partition, b.From, b.Next, err)
		}
		reported = reported || len(load) > 0
	}
	if comp.Has(sdk.CapabilityLoad) && !reported {
		t.Errorf("the partitioner declares the load capability but reported no load for %d batches", len(in))
	}
}
