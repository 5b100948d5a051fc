package worker

import (
	"context"

	"github.com/floehq/floe/host/registry"
	"github.com/floehq/floe/host/runtime"
	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// FromRegistry adapts the plugin registry a scan built to [Plugins].
func FromRegistry(r *registry.Registry) Plugins { return registryPlugins{r} }

type registryPlugins struct{ r *registry.Registry }

// Components lists the registry's components, in its order.
func (p registryPlugins) Components() []client.Component {
	entries := p.r.Components()
	out := make([]client.Component, len(entries))
	for i, e := range entries {
		out[i] = e.Component
	}
	return out
}

// Start starts the binary serving the component, checked against the
// checksum recorded at scan time.
func (p registryPlugins) Start(ctx context.Context, kind sdk.Kind, name string, opts client.StartOptions) (runtime.Process, error) {
	e, err := p.r.Lookup(kind, name)
	if err != nil {
		return nil, err
	}
	proc, err := p.r.Start(ctx, e, opts)
	if err != nil {
		return nil, err
	}
	return runtime.WrapProcess(proc), nil
}

// withTransport makes every process p starts speak the worker's plugin
// transport (plugin.transport.tls, plugin.transport.shared.memory).
func withTransport(p Plugins, cfg Config) Plugins {
	return transportPlugins{Plugins: p, tls: cfg.PluginTLS, shared: cfg.PluginSharedMemory}
}

type transportPlugins struct {
	Plugins
	tls, shared bool
}

func (p transportPlugins) Start(ctx context.Context, kind sdk.Kind, name string, opts client.StartOptions) (runtime.Process, error) {
	opts.TLS, opts.SharedMemory = p.tls, p.shared
	return p.Plugins.Start(ctx, kind, name, opts)
}
