// Command protofuture is a plugin binary built for a future floe: it answers
// floe's go-plugin handshake (same magic cookie) with protocol version 3
// only, one past the host's. TestBadInput drops it into plugin.path.
package main

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			// sdk/internal/handshake's values, which e2e cannot import.
			MagicCookieKey:   "FLOE_PLUGIN",
			MagicCookieValue: "deebbc6e8fe9924a6a79aadacb314fe5",
		},
		VersionedPlugins: map[int]plugin.PluginSet{3: {"describe": describe{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

type describe struct{ plugin.NetRPCUnsupportedPlugin }

func (describe) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }

func (describe) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}
