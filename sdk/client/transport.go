package client

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/floehq/floe/sdk/internal/handshake"
)

// rpcConn is what dispensing gives the host: the process's gRPC connection
// and go-plugin's broker, through which the host serves SourceHost.
type rpcConn struct {
	conn   *grpc.ClientConn
	broker *plugin.GRPCBroker
}

// hostPlugin is the host side of every name in the plugin set. The typed
// service clients are made from the one connection; which services exist
// depends on the kinds the binary serves.
type hostPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

func (hostPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }

func (hostPlugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &rpcConn{conn: c, broker: b}, nil
}

// hostPluginSet lists every name a floe plugin may serve.
func hostPluginSet() plugin.PluginSet {
	return plugin.PluginSet{
		handshake.Describe:    hostPlugin{},
		handshake.Source:      hostPlugin{},
		handshake.Partitioner: hostPlugin{},
		handshake.Sink:        hostPlugin{},
		handshake.Maintenance: hostPlugin{},
	}
}

// dialOptions raise gRPC's message limit to floe's.
func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(handshake.MaxMessageSize),
		grpc.MaxCallSendMsgSize(handshake.MaxMessageSize),
	)}
}
