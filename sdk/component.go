package sdk

import "fmt"

// Component is one named plugin implementation in a binary. Exactly one of
// Source, Partitioner, Sink and Maintenance is set.
type Component struct {
	// Name is what connector configs use ("datagen", "iceberg", "hash").
	Name string
	// Aliases are other names accepted for it (a Kafka Connect class name).
	Aliases []string
	Version string
	Summary string
	Spec    Spec
	// Capabilities lists the optional interfaces the component's tasks
	// (for CapabilityWaits, its Sink) implement (see [Capability]); floe
	// uses exactly these.
	Capabilities []Capability

	Source      Source
	Partitioner Partitioner
	Sink        Sink
	Maintenance Maintenance
}

// Kind returns which plugin kind the component implements.
func (c Component) Kind() Kind {
	switch {
	case c.Source != nil:
		return KindSource
	case c.Partitioner != nil:
		return KindPartitioner
	case c.Sink != nil:
		return KindSink
	case c.Maintenance != nil:
		return KindMaintenance
	}
	return ""
}

// value returns the one plugin value the component sets.
func (c Component) value() any {
	switch {
	case c.Source != nil:
		return c.Source
	case c.Partitioner != nil:
		return c.Partitioner
	case c.Sink != nil:
		return c.Sink
	}
	return c.Maintenance
}

// check reports a malformed component declaration.
func (c Component) check() error {
	n := 0
	for _, set := range []bool{c.Source != nil, c.Partitioner != nil, c.Sink != nil, c.Maintenance != nil} {
		if set {
			n++
		}
	}
	switch {
	case c.Name == "":
		return fmt.Errorf("sdk: a component has no Name")
	case n != 1:
		return fmt.Errorf("sdk: component %q must set exactly one of Source, Partitioner, Sink, Maintenance (it sets %d)", c.Name, n)
	}
	return c.checkCapabilities()
}
