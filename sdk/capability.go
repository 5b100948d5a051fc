package sdk

import (
	"fmt"
	"slices"
)

// Capability names an optional part of the protocol a component's tasks
// serve: one of the optional interfaces (SinkTaskWithFrontier, …). A
// component declares its capabilities up front ([Component.Capabilities]);
// floe reads them from the binary's Describe answer, before any task is
// open, and never calls what is not declared. The SDK holds the
// declaration to the truth: an Open whose task implements an undeclared
// interface, or lacks a declared one, fails, naming both.
type Capability string

// The capabilities, each with the interface that provides it.
const (
	// CapabilityFrontier: the sink's task is a [SinkTaskWithFrontier]
	// (floe resumes sources from the sink's frontier).
	CapabilityFrontier Capability = "frontier"
	// CapabilitySchemas: the sink's task is a [SinkTaskWithSchemas]
	// (floe calls PrepareSchema before rows of a new schema).
	CapabilitySchemas Capability = "schemas"
	// CapabilityLoad: the partitioner's task is a [PartitionerWithLoad]
	// (floe shows the per-writer load it reports).
	CapabilityLoad Capability = "load"
	// CapabilityWaits: the component's Sink (not its task) is a
	// [SinkWithWaits] (floe's status names the service a stalled sink is
	// waiting for).
	CapabilityWaits Capability = "waits"
)

// allCapabilities lists every capability, in a fixed order.
func allCapabilities() []Capability {
	return []Capability{CapabilityFrontier, CapabilitySchemas, CapabilityLoad, CapabilityWaits}
}

// capabilityInfo is what one capability means: the kind it belongs to,
// the interface that provides it, and whether a task implements it (or,
// with component set, the component's plugin value: its Sink).
type capabilityInfo struct {
	kind      Kind
	iface     string
	has       func(v any) bool
	component bool
}

func infoOf(c Capability) (capabilityInfo, bool) {
	switch c {
	case CapabilityFrontier:
		return capabilityInfo{KindSink, "sdk.SinkTaskWithFrontier", func(t any) bool { _, ok := t.(SinkTaskWithFrontier); return ok }, false}, true
	case CapabilitySchemas:
		return capabilityInfo{KindSink, "sdk.SinkTaskWithSchemas", func(t any) bool { _, ok := t.(SinkTaskWithSchemas); return ok }, false}, true
	case CapabilityLoad:
		return capabilityInfo{KindPartitioner, "sdk.PartitionerWithLoad", func(t any) bool { _, ok := t.(PartitionerWithLoad); return ok }, false}, true
	case CapabilityWaits:
		return capabilityInfo{KindSink, "sdk.SinkWithWaits", func(s any) bool { _, ok := s.(SinkWithWaits); return ok }, true}, true
	}
	return capabilityInfo{}, false
}

// checkCapabilities rejects a declaration naming unknown capabilities,
// ones of another kind, or one twice, and checks the capabilities the
// component's plugin value provides (CapabilityWaits) against it.
func (c Component) checkCapabilities() error {
	for i, capa := range c.Capabilities {
		info, ok := infoOf(capa)
		switch {
		case !ok:
			return fmt.Errorf("sdk: component %q declares unknown capability %q (known: frontier, schemas, load, waits)", c.Name, capa)
		case info.kind != c.Kind():
			return fmt.Errorf("sdk: %s component %q declares capability %q, which only a %s has (%s)", c.Kind(), c.Name, capa, info.kind, info.iface)
		case slices.Contains(c.Capabilities[:i], capa):
			return fmt.Errorf("sdk: component %q declares capability %q twice", c.Name, capa)
		}
	}
	for _, capa := range allCapabilities() {
		info, _ := infoOf(capa)
		if !info.component || info.kind != c.Kind() {
			continue
		}
		v := c.value()
		declared, has := slices.Contains(c.Capabilities, capa), info.has(v)
		switch {
		case declared && !has:
			return fmt.Errorf("sdk: %s component %q declares capability %q, but its %s (%T) does not implement %s", c.Kind(), c.Name, capa, c.Kind(), v, info.iface)
		case has && !declared:
			return fmt.Errorf("sdk: %s component %q: its %s (%T) implements %s, but the component does not declare capability %q; add it to Component.Capabilities so floe uses it",
				c.Kind(), c.Name, c.Kind(), v, info.iface, capa)
		}
	}
	return nil
}

// matchCapabilities checks an opened task against the component's
// declaration.
func (c Component) matchCapabilities(task any) error {
	for _, capa := range allCapabilities() {
		info, _ := infoOf(capa)
		if info.kind != c.Kind() || info.component {
			continue
		}
		declared, has := slices.Contains(c.Capabilities, capa), info.has(task)
		switch {
		case declared && !has:
			return fmt.Errorf("%s component %q declares capability %q, but the task its Open returned (%T) does not implement %s",
				c.Kind(), c.Name, capa, task, info.iface)
		case has && !declared:
			return fmt.Errorf("%s component %q: the task its Open returned (%T) implements %s, but the component does not declare capability %q; add it to Component.Capabilities so floe uses it",
				c.Kind(), c.Name, task, info.iface, capa)
		}
	}
	return nil
}
