package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Plugins is what the worker needs of the plugin registry: the components
// found, and a way to start the binary serving one. [FromRegistry] adapts
// host/registry; tests pass fakes.
type Plugins interface {
	runtime.Plugins
	// Components lists every component found, in a stable order.
	Components() []client.Component
}

// kindKey is the connector config key that names the component of a kind.
func kindKey(k sdk.Kind) string {
	switch k {
	case sdk.KindSource:
		return runtime.KeySource
	case sdk.KindPartitioner:
		return runtime.KeyPartitioner
	case sdk.KindSink:
		return runtime.KeyConnectorClass
	case sdk.KindMaintenance:
		return runtime.KeyMaintenance
	}
	return ""
}

// componentName returns the component a config names for kind ("" when
// none: only maintenance is optional; the partitioner defaults to hash).
func componentName(config map[string]string, k sdk.Kind) string {
	v := strings.TrimSpace(config[kindKey(k)])
	if v == "" && k == sdk.KindPartitioner {
		return runtime.DefaultPartitioner
	}
	return v
}

// findComponent looks a component up by kind and name or alias. As Kafka
// Connect resolves connector.class, an alias that is a class name also
// answers to its simple name and to that name without its "Connector"
// suffix (org.apache.iceberg.connect.IcebergSinkConnector: also
// IcebergSinkConnector and IcebergSink).
func findComponent(all []client.Component, k sdk.Kind, name string) (client.Component, bool) {
	for _, c := range all {
		if c.Kind == k && (c.Name == name || slices.Contains(c.Aliases, name)) {
			return c, true
		}
	}
	for _, c := range all {
		if c.Kind != k {
			continue
		}
		for _, a := range c.Aliases {
			simple := a[strings.LastIndexByte(a, '.')+1:]
			if simple != a && (name == simple || name == strings.TrimSuffix(simple, "Connector")) {
				return c, true
			}
		}
	}
	return client.Component{}, false
}

// connectClass is the name Kafka Connect users know a component by: its
// first alias that is a Java class name (dotted, as
// org.apache.iceberg.connect.IcebergSinkConnector), else its floe name.
// Aliases such as round-robin are not class names.
func connectClass(c client.Component) string {
	for _, a := range c.Aliases {
		if isClassName(a) {
			return a
		}
	}
	return c.Name
}

// isClassName reports whether s looks like a fully qualified Java class
// name: dot-separated identifiers, at least two.
func isClassName(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for i, r := range p {
			ok := r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))
			if !ok {
				return false
			}
		}
	}
	return true
}

// missingComponent explains a component name that matches nothing of its
// kind, listing the known ones and naming another kind that has it.
func missingComponent(all []client.Component, k sdk.Kind, name string) string {
	var known []string
	other := ""
	for _, c := range all {
		if c.Kind == k {
			known = append(known, c.Name)
		} else if c.Name == name || slices.Contains(c.Aliases, name) {
			other = string(c.Kind)
		}
	}
	msg := fmt.Sprintf("no %s plugin named %q was found in plugin.path", k, name)
	if other != "" {
		msg = fmt.Sprintf("%q is a %s component, not a %s", name, other, k)
	}
	if len(known) == 0 {
		return msg + fmt.Sprintf("; no %s plugins are installed (build them with `make build`, or check plugin.path)", k)
	}
	if s := closest(name, known); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg + fmt.Sprintf(" (known %s plugins: %s)", k, strings.Join(known, ", "))
}

// pluginType is the Connect plugin type shown for a kind.
func pluginType(k sdk.Kind) string { return string(k) }

// startForValidation starts a process serving component name of kind, to
// validate a config in it. The caller kills it.
func startForValidation(ctx context.Context, p Plugins, k sdk.Kind, name string) (runtime.Process, error) {
	return p.Start(ctx, k, name, client.StartOptions{})
}
