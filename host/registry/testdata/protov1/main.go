// Command protov1 is a test plugin that speaks the floe handshake with protocol
// version 1, as a plugin built before components declared their
// capabilities would.
package main

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			MagicCookieKey:   "FLOE_PLUGIN",
			MagicCookieValue: "deebbc6e8fe9924a6a79aadacb314fe5",
		},
		VersionedPlugins: map[int]plugin.PluginSet{1: {"describe": describe{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

type describe struct{ plugin.NetRPCUnsupportedPlugin }

func (describe) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }
func (describe) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}
