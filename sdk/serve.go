package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/floehq/floe/sdk/internal/handshake"
	"github.com/floehq/floe/sdk/internal/procmem"
)

// closeTimeout bounds how long a stopping server waits for the Close of
// tasks the host left open.
const closeTimeout = time.Second

// Serve runs the plugin binary's components over the floe plugin protocol
// (hashicorp/go-plugin, gRPC, protocol version 2). Call it from main with
// every component the binary offers; it returns when the host ends the
// process, after closing the tasks the host left open.
//
// The components are checked first: each must set a Name and exactly one
// kind, and names and aliases must be unique per kind. A bad declaration,
// or a start by hand instead of by floe, prints the reason on stderr and
// exits with status 1.
//
// When the floe host that started the process is gone (killed with
// SIGKILL, say), the process closes its tasks and exits within a second,
// rather than living on with what they hold; at once when the host's
// death brings SIGTERM (floe asks Linux for it when it starts a plugin).
// While the host runs, SIGTERM is ignored, as go-plugin ignores SIGINT: a
// service manager that signals every process of the group (systemd's
// default) must not kill plugins under the host's shutdown, which still
// needs them to flush and commit; the host ends its plugins itself.
//
// Task loggers write hclog-style JSON lines to the process's stderr, which
// floe reads and relabels; the level is info unless the host sets
// FLOE_PLUGIN_LOG_LEVEL (trace, debug, info, warn, error).
func Serve(components ...Component) {
	// Serve is a plugin's main: the process's lifetime is its context.
	ctx := context.Background()
	stderr := os.Stderr // go-plugin redirects os.Stderr once serving; keep the real one for logs
	srv, err := newServer(components, newPluginLogger(stderr, levelFromEnv()))
	// The writes to stderr below precede exit 1, which says what happened
	// when a write fails.
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "floe plugin %s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
	if os.Getenv(handshake.MagicCookieKey) != handshake.MagicCookieValue {
		_, _ = fmt.Fprintf(stderr, "%s is a floe plugin; floe starts it, it does not run on its own.\n"+
			"Put it in a folder listed in the worker's plugin.path and run `floe plugins` to see it.\n"+
			"It offers:\n", filepath.Base(os.Args[0]))
		for _, c := range srv.components {
			_, _ = fmt.Fprintf(stderr, "  %-12s %s %s\n", c.Kind(), c.Name, c.Version)
		}
		os.Exit(1)
	}
	sigterm := make(chan os.Signal, 1)
	signal.Notify(sigterm, syscall.SIGTERM)
	go watchParent(ctx, srv, os.Getppid(), parentPoll, sigterm)
	// Start-up touched most of the binary once; the steady state needs
	// little of it (see package procmem).
	procmem.Release()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  handshake.Config(),
		VersionedPlugins: map[int]plugin.PluginSet{handshake.ProtocolVersion: srv.pluginSet()},
		GRPCServer:       srv.grpcServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "go-plugin",
			Output:     stderr,
			Level:      hclog.Warn,
			JSONFormat: true,
		}),
	})
	srv.closeAll(ctx, closeTimeout)
}

// parentPoll is how often a plugin checks that the floe host still runs.
const parentPoll = time.Second

// watchParent ends the process when the floe host that started it is gone
// (killed with SIGKILL, say): an orphaned plugin would go on holding what
// its tasks hold, such as a Kafka consumer group membership. It looks
// every tick, and at once on SIGTERM, which Linux sends when the host dies
// (see sdk/client); a SIGTERM while the host runs is ignored.
func watchParent(ctx context.Context, srv *server, ppid int, every time.Duration, sigterm <-chan os.Signal) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		signalled := false
		select {
		case <-t.C:
		case <-sigterm:
			signalled = true
		}
		if os.Getppid() != ppid {
			srv.log.Warn("the floe host that started this plugin is gone; exiting", "host_pid", ppid)
			srv.closeAll(ctx, closeTimeout)
			os.Exit(1)
		}
		if signalled {
			srv.log.Warn("ignoring SIGTERM: the floe host that started this plugin still runs, and ends it itself", "host_pid", ppid)
		}
	}
}

// InProcessOptions configures [ServeInProcess].
type InProcessOptions struct {
	// Logs receives the tasks' log lines (hclog-style JSON, one per line).
	// Nil discards them.
	Logs io.Writer
}

// InProcessServer is a plugin server running inside the calling process.
type InProcessServer struct {
	// Addr is the unix socket the server listens on; sdk/client.Attach
	// connects to it.
	Addr net.Addr
	// Done is closed once the server has stopped and closed its tasks.
	Done <-chan struct{}
}

// ServeInProcess serves components from inside the calling process, for
// tests: the same go-plugin gRPC server and protocol code as [Serve], on a
// private unix socket, without a handshake on stdout or a magic cookie. It
// returns once the server listens. The server stops when ctx ends, or when
// a client attached to it shuts it down.
//
// Plugin authors rarely call it: sdktest.InProcess does, to run the
// conformance kits against components without building a binary.
func ServeInProcess(ctx context.Context, opts InProcessOptions, components ...Component) (*InProcessServer, error) {
	logs := opts.Logs
	if logs == nil {
		logs = io.Discard
	}
	srv, err := newServer(components, newPluginLogger(logs, levelTrace))
	if err != nil {
		return nil, err
	}
	reattach := make(chan *plugin.ReattachConfig, 1)
	served := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  handshake.Config(),
			VersionedPlugins: map[int]plugin.PluginSet{handshake.ProtocolVersion: srv.pluginSet()},
			GRPCServer:       srv.grpcServer,
			Logger:           hclog.New(&hclog.LoggerOptions{Name: "go-plugin", Output: logs, Level: hclog.Warn, JSONFormat: true}),
			Test: &plugin.ServeTestConfig{
				Context:          ctx,
				ReattachConfigCh: reattach,
				CloseCh:          served,
			},
		})
		<-served
		srv.closeAll(ctx, closeTimeout)
	}()
	select {
	case rc := <-reattach:
		return &InProcessServer{Addr: rc.Addr, Done: done}, nil
	case <-done:
		return nil, errors.New("sdk: in-process plugin server stopped before it listened (see its logs)")
	}
}
