package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/internal/pb"
)

// Component is one component a binary declares.
type Component struct {
	Kind    sdk.Kind
	Name    string
	Aliases []string
	Version string
	Summary string
	Fields  []sdk.Field
	// Capabilities are the optional calls the component's tasks serve, as
	// it declares them (sdk.Capability).
	Capabilities []sdk.Capability
	// SDKVersion is the floe SDK version the binary was built with.
	SDKVersion string
}

// Has reports whether the component declares capability c.
func (c Component) Has(capa sdk.Capability) bool { return slices.Contains(c.Capabilities, capa) }

// Describe lists the binary's components.
func (p *Process) Describe(ctx context.Context) ([]Component, error) {
	resp, err := p.describe.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return nil, p.callError(ctx, "describe", err)
	}
	out := make([]Component, 0, len(resp.GetComponents()))
	for _, c := range resp.GetComponents() {
		out = append(out, componentFromProto(c, resp.GetSdkVersion()))
	}
	p.descMu.Lock()
	p.described = out
	p.descMu.Unlock()
	return out, nil
}

// declared returns what the binary declares of one component (by name or
// alias), asking it once per process.
func (p *Process) declared(ctx context.Context, kind sdk.Kind, name string) (Component, error) {
	p.descMu.Lock()
	comps := p.described
	p.descMu.Unlock()
	if comps == nil {
		var err error
		if comps, err = p.Describe(ctx); err != nil {
			return Component{}, err
		}
	}
	for _, c := range comps {
		if c.Kind == kind && (c.Name == name || slices.Contains(c.Aliases, name)) {
			return c, nil
		}
	}
	return Component{}, &Error{Plugin: p.name, Op: fmt.Sprintf("%s %s: describe", kind, quote(name)),
		Message: fmt.Sprintf("the binary declares no %s component %q (check the connector's component names with `floe plugins`)", kind, name)}
}

// Validate checks config against one component's spec, in the plugin (so
// the plugin's own validators run: field checks, then, when they pass, the
// whole-config checks of sdk.Spec.WithCheck). An error with an empty Key is
// about the config as a whole: show it under the key that names the
// component (connector.class for a sink, source for a source, ...).
func (p *Process) Validate(ctx context.Context, kind sdk.Kind, component string, config map[string]string) ([]sdk.ConfigError, error) {
	resp, err := p.describe.Validate(ctx, &pb.ValidateRequest{Kind: kindToProto(kind), Component: component, Config: config})
	if err != nil {
		return nil, p.callError(ctx, "validate "+string(kind)+" "+quote(component), err)
	}
	return configErrorsFromProto(resp.GetErrors()), nil
}

// ValidateAndProbe is [Process.Validate], and then, when the config passed,
// the component's probes (sdk.Spec.WithProbe): checks against the systems
// the config names, such as a registry or a catalog. Call it for
// config/validate only, with a deadline on ctx: the plugin answers a
// little before it, naming what did not answer in time.
func (p *Process) ValidateAndProbe(ctx context.Context, kind sdk.Kind, component string, config map[string]string) ([]sdk.ConfigError, error) {
	resp, err := p.describe.Validate(ctx, &pb.ValidateRequest{Kind: kindToProto(kind), Component: component, Config: config, Probe: true})
	if err != nil {
		return nil, p.callError(ctx, "validate "+string(kind)+" "+quote(component), err)
	}
	return configErrorsFromProto(resp.GetErrors()), nil
}
