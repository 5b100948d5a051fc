// Command foreign is a floe plugin for sdk/client's tests that is not built
// on sdk.Serve, as one written in another language is not: it speaks the
// handshake and serves Describe, and does nothing about its parent.
package main

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/floehq/floe/sdk/internal/handshake"
	"github.com/floehq/floe/sdk/internal/pb"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  handshake.Config(),
		VersionedPlugins: map[int]plugin.PluginSet{handshake.ProtocolVersion: {handshake.Describe: describe{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

type describe struct {
	plugin.NetRPCUnsupportedPlugin
}

func (describe) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterDescribeServer(s, pb.UnimplementedDescribeServer{})
	return nil
}

func (describe) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}
