package client

import (
	"context"

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
	// SDKVersion is the floe SDK version the binary was built with.
	SDKVersion string
}

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
	return out, nil
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
