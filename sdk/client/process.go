package client

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/floehq/floe/sdk/internal/handshake"
	"github.com/floehq/floe/sdk/internal/pb"
)

// StartOptions says how to start one plugin process.
type StartOptions struct {
	// Path is the plugin binary.
	Path string
	// Checksum is the binary's SHA-256 as the registry recorded it; the
	// start fails if the file changed since. Nil skips the check.
	Checksum []byte
	// Env is added to the process environment (GOMAXPROCS=2, …). It wins
	// over the host's own environment.
	Env []string
	// Nice is the process's niceness (0 leaves it).
	Nice int
	// Logger receives the plugin's log lines and go-plugin's lines about
	// the process. Nil discards them ([Process.ExitReason] still has the
	// last lines).
	Logger *slog.Logger
	// Labels are key-value pairs put on every line Logger receives (the
	// host's connector=…, plugin=<component>). A plugin line's own
	// attribute that repeats a label is dropped, so give the labels here
	// rather than through Logger.With.
	Labels []any
	// StartTimeout bounds the handshake; 0 means 30 s or ctx's deadline,
	// whichever comes first.
	StartTimeout time.Duration
	// TLS wraps the connection to the process in go-plugin's AutoMTLS: a
	// fresh certificate for each end, both checked. Without it the
	// connection is plain gRPC. Either way the process listens on a Unix
	// socket in a directory of its own that only this user may enter,
	// and the binary's checksum is verified. docs/architecture.md
	// ("Plugin transport") weighs the two; the worker's
	// plugin.transport.tls chooses.
	TLS bool
	// SharedMemory moves batches from the process's sources, and to its
	// sinks, in sealed memory files (Linux memfd) instead of through gRPC:
	// only a handle travels, and this process never copies the bytes
	// (docs/architecture.md, "Batches in shared memory"). A plugin built
	// with an SDK before it, or a system without memfd, sends bytes.
	SharedMemory bool
}

// tailLines is how many of the plugin's last stderr lines ExitReason shows.
const tailLines = 20

// defaultStartTimeout bounds a handshake when neither ctx nor the options do.
const defaultStartTimeout = 30 * time.Second

// exitPoll is how often a process is checked for having exited.
const exitPoll = 100 * time.Millisecond

// Process is one running plugin binary. Its methods are safe for
// concurrent use.
type Process struct {
	name string // the binary's path, or a label for an attached server
	pid  int

	pc  *plugin.Client // nil when attached
	cmd *exec.Cmd      // nil when attached
	rpc plugin.ClientProtocol
	// sockDir holds the process's socket; removed once it exited.
	sockDir string
	// shared: batches may travel in shared memory (StartOptions.
	// SharedMemory); sharedFailed is set once opening one failed, and new
	// source tasks then ask for bytes.
	shared       bool
	sharedFailed atomic.Bool

	conn   *grpc.ClientConn
	broker *plugin.GRPCBroker
	tail   *tail

	descMu    sync.Mutex
	described []Component // the last Describe answer, nil before

	describe    pb.DescribeClient
	source      pb.SourceClient
	partitioner pb.PartitionerClient
	sink        pb.SinkClient
	maintenance pb.MaintenanceClient

	exited     chan struct{}
	exitOnce   sync.Once
	killed     atomic.Bool
	killOnce   sync.Once
	serverDone <-chan struct{} // attached: closed when the server stopped
}

// Start launches a plugin binary and completes the handshake. Errors name
// the binary: missing, not executable, exited at start, or speaking
// another protocol version.
//
// ctx bounds the start only; the process lives until [Process.Kill] or
// until it exits. The caller must Kill it when done.
func Start(ctx context.Context, opts StartOptions) (*Process, error) {
	if err := checkBinary(opts.Path); err != nil {
		return nil, err
	}
	logger := newPluginLogger(opts.Logger, opts.Labels)
	t := newTail(tailLines)
	// The plugin's socket goes in a directory only this user may enter
	// (go-plugin would put it straight in TMPDIR), so no other user can
	// connect to it, with TLS or without.
	sockDir, err := os.MkdirTemp("", "floe-plugin-")
	if err != nil {
		return nil, fmt.Errorf("plugin %s: make its socket directory: %w", opts.Path, err)
	}
	cmd := exec.Command(opts.Path)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sockDir)
	dieWithHost(cmd)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  handshake.Config(),
		VersionedPlugins: map[int]plugin.PluginSet{handshake.ProtocolVersion: hostPluginSet()},
		Cmd:              cmd,
		SkipHostEnv:      true, // the environment is in cmd.Env already, with opts.Env winning
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         opts.TLS,
		Logger:           logger,
		Stderr:           t,
		SyncStderr:       &lineWriter{tail: t, log: logger.With("stream", "stderr")},
		SyncStdout:       &lineWriter{log: logger.With("stream", "stdout")},
		GRPCDialOptions:  dialOptions(),
		StartTimeout:     startTimeout(ctx, opts.StartTimeout),
	}
	if len(opts.Checksum) > 0 {
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: opts.Checksum, Hash: sha256.New()}
	}
	pc := plugin.NewClient(cfg)

	type started struct {
		rpc plugin.ClientProtocol
		err error
	}
	ch := make(chan started, 1)
	go func() {
		rpc, err := pc.Client()
		ch <- started{rpc, err}
	}()
	var s started
	select {
	case s = <-ch:
	case <-ctx.Done():
		// go-plugin's handshake cannot be interrupted; end the process as
		// soon as it returns.
		go func() { <-ch; pc.Kill(); _ = os.RemoveAll(sockDir) }()
		return nil, fmt.Errorf("plugin %s: start: %w", opts.Path, ctx.Err())
	}
	if s.err != nil {
		err := startError(opts.Path, s.err, pc, cmd, t)
		pc.Kill()
		_ = os.RemoveAll(sockDir)
		return nil, err
	}
	p, err := newProcess(opts.Path, s.rpc)
	if err != nil {
		pc.Kill()
		_ = os.RemoveAll(sockDir)
		return nil, fmt.Errorf("plugin %s: %w", opts.Path, err)
	}
	p.pc, p.cmd, p.tail, p.sockDir, p.shared = pc, cmd, t, sockDir, opts.SharedMemory
	p.pid = cmd.Process.Pid
	if opts.Nice != 0 {
		if err := setNice(p.pid, opts.Nice); err != nil {
			p.Kill()
			hint := ""
			if opts.Nice < 0 {
				hint = " (a negative niceness needs CAP_SYS_NICE; use 0 or a positive value)"
			}
			return nil, fmt.Errorf("plugin %s: set niceness %d: %w%s", opts.Path, opts.Nice, err, hint)
		}
	}
	go p.watch()
	return p, nil
}

// AttachOptions says how to reach a plugin server running in this process.
type AttachOptions struct {
	// Name labels the plugin in errors ("in-process" if empty).
	Name string
	// Addr is where the server listens (sdk.InProcessServer.Addr).
	Addr net.Addr
	// Done is closed when the server has stopped (sdk.InProcessServer.Done).
	Done <-chan struct{}
	// Logger receives go-plugin's client logs, labelled with Labels (see
	// [StartOptions]). Nil discards them.
	Logger *slog.Logger
	Labels []any
	// SharedMemory is [StartOptions.SharedMemory]: batches between the
	// server and this client travel in shared memory files.
	SharedMemory bool
}

// Attach connects to a plugin server running inside the calling process
// (see sdk.ServeInProcess), over the same go-plugin gRPC client Start uses,
// without a subprocess, AutoMTLS or checksum. Tests use it; Kill stops the
// server.
func Attach(ctx context.Context, opts AttachOptions) (*Process, error) {
	if opts.Addr == nil {
		return nil, errors.New("client.Attach: no server address")
	}
	name := opts.Name
	if name == "" {
		name = "in-process"
	}
	logger := newPluginLogger(opts.Logger, opts.Labels)
	addr := opts.Addr
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: handshake.Config(),
		// A reattached client skips version negotiation and uses Plugins.
		Plugins:          hostPluginSet(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Reattach: &plugin.ReattachConfig{
			Protocol:        plugin.ProtocolGRPC,
			ProtocolVersion: handshake.ProtocolVersion,
			Addr:            addr,
			Pid:             os.Getpid(),
			Test:            true, // never kill our own process
		},
		Logger:          logger,
		GRPCDialOptions: dialOptions(),
	})
	rpc, err := pc.Client()
	if err != nil {
		return nil, fmt.Errorf("plugin %s: attach to %s: %w", name, addr, err)
	}
	p, err := newProcess(name, rpc)
	if err != nil {
		_ = rpc.Close()
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	p.pid = os.Getpid()
	p.tail = newTail(tailLines)
	p.shared = opts.SharedMemory
	p.serverDone = opts.Done
	go func() {
		if opts.Done != nil {
			<-opts.Done
			p.markExited()
		}
	}()
	if err := ctx.Err(); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

func newProcess(name string, rpc plugin.ClientProtocol) (*Process, error) {
	raw, err := rpc.Dispense(handshake.Describe)
	if err != nil {
		return nil, fmt.Errorf("dispense %s: %w", handshake.Describe, err)
	}
	c, ok := raw.(*rpcConn)
	if !ok {
		return nil, fmt.Errorf("dispense %s: unexpected %T", handshake.Describe, raw)
	}
	return &Process{
		name:        name,
		rpc:         rpc,
		conn:        c.conn,
		broker:      c.broker,
		describe:    pb.NewDescribeClient(c.conn),
		source:      pb.NewSourceClient(c.conn),
		partitioner: pb.NewPartitionerClient(c.conn),
		sink:        pb.NewSinkClient(c.conn),
		maintenance: pb.NewMaintenanceClient(c.conn),
		exited:      make(chan struct{}),
	}, nil
}

// Exited is closed when the process ends, for whatever reason.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitReason describes why the process ended (exit status and the last
// lines it wrote), once Exited is closed. It is empty before.
func (p *Process) ExitReason() string {
	select {
	case <-p.exited:
	default:
		return ""
	}
	return p.reason()
}

// reason describes the exit; the caller knows the process has exited.
func (p *Process) reason() string {
	var st string
	switch {
	case p.cmd == nil:
		st = "the in-process plugin server stopped"
	case p.cmd.ProcessState != nil:
		st = p.cmd.ProcessState.String()
	default:
		st = "exited"
	}
	if p.killed.Load() {
		st += " (killed by floe)"
	}
	if lines := p.tail.Lines(); len(lines) > 0 {
		st += "; its last lines:\n  " + strings.Join(lines, "\n  ")
	}
	return st
}

// Pid returns the process id (the caller's own for an attached server).
func (p *Process) Pid() int { return p.pid }

// Name returns the binary's path (or the attached server's label).
func (p *Process) Name() string { return p.name }

// Kill ends the process (and its tasks) at once. go-plugin first asks it to
// stop and gives it two seconds before killing it. Safe to call more than
// once.
func (p *Process) Kill() {
	p.killOnce.Do(func() {
		p.killed.Store(true)
		if p.pc != nil {
			p.pc.Kill()
			p.markExited()
			return
		}
		// Attached: shutting the client down stops the server.
		_ = p.rpc.Close()
		if p.serverDone != nil {
			select {
			case <-p.serverDone:
			case <-time.After(5 * time.Second):
			}
		}
		p.markExited()
	})
}

func (p *Process) markExited() {
	p.exitOnce.Do(func() {
		if p.sockDir != "" {
			// A killed process leaves its socket behind.
			_ = os.RemoveAll(p.sockDir)
		}
		close(p.exited)
	})
}

// watch closes exited when go-plugin sees the process end. go-plugin only
// offers a poll (Client.Exited); once a 100 ms tick is cheap next to a
// process.
func (p *Process) watch() {
	t := time.NewTicker(exitPoll)
	defer t.Stop()
	for {
		select {
		case <-p.exited:
			return
		case <-t.C:
			if p.pc.Exited() {
				p.markExited()
				return
			}
		}
	}
}

// hasExited reports whether the process is gone, waiting up to wait for
// go-plugin to notice.
func (p *Process) hasExited(wait time.Duration) bool {
	if p.pc == nil {
		select {
		case <-p.exited:
			return true
		case <-time.After(wait):
			return false
		}
	}
	deadline := time.Now().Add(wait)
	for {
		if p.pc.Exited() {
			p.markExited()
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkBinary catches the usual mistakes before go-plugin's own errors,
// which do not say what to do.
func checkBinary(path string) error {
	if path == "" {
		return errors.New("plugin start: no binary path given")
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("plugin %s: no such file; check plugin.path, or build the plugin there (go build -o %s)", path, path)
	case err != nil:
		return fmt.Errorf("plugin %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("plugin %s is a directory, not an executable", path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("plugin %s is not executable; run chmod +x %s", path, path)
	}
	return nil
}

var pluginVersionRE = regexp.MustCompile(`Plugin version: (\d+)`)

// startError turns go-plugin's start errors into ones that name the binary
// and say what to do.
func startError(path string, err error, pc *plugin.Client, cmd *exec.Cmd, t *tail) error {
	msg := err.Error()
	// The stderr tail is complete only once the process is gone.
	waitExit := func() string {
		deadline := time.Now().Add(2 * time.Second)
		for !pc.Exited() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		var b strings.Builder
		if pc.Exited() && cmd.ProcessState != nil {
			fmt.Fprintf(&b, " (%s)", cmd.ProcessState)
		}
		if lines := t.Lines(); len(lines) > 0 {
			b.WriteString("; its last lines:\n  " + strings.Join(lines, "\n  "))
		} else {
			b.WriteString("; it wrote nothing to stderr")
		}
		return b.String()
	}
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return fmt.Errorf("plugin %s: the binary changed since it was scanned; restart floe or re-scan plugin.path (its SHA-256 differs from the one recorded)", path)
	case strings.HasPrefix(msg, "error verifying checksum"):
		return fmt.Errorf("plugin %s: cannot read it to verify its checksum: %w", path, err)
	case strings.Contains(strings.ToLower(msg), "incompatible api version"):
		if m := pluginVersionRE.FindStringSubmatch(msg); m != nil {
			v, _ := strconv.Atoi(m[1])
			return fmt.Errorf("plugin %s speaks floe protocol v%d, this host speaks v%d; install a build of the plugin made for this floe version",
				path, v, handshake.ProtocolVersion)
		}
		return fmt.Errorf("plugin %s speaks another floe protocol version than this host (v%d): %w", path, handshake.ProtocolVersion, err)
	case strings.Contains(msg, "incompatible core API version"):
		return fmt.Errorf("plugin %s was built with an incompatible hashicorp/go-plugin; rebuild it against this floe SDK: %w", path, err)
	case strings.Contains(msg, "unsupported plugin protocol"):
		return fmt.Errorf("plugin %s speaks go-plugin's net/rpc, not gRPC; it is not a floe plugin (build it with sdk.Serve)", path)
	case strings.Contains(msg, "plugin exited before we could connect"):
		return fmt.Errorf("plugin %s exited before the handshake%s", path, waitExit())
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		line := strings.TrimSpace(strings.SplitN(strings.TrimPrefix(msg, "Unrecognized remote plugin message:"), "\n", 2)[0])
		if line == "" {
			return fmt.Errorf("plugin %s exited before the handshake%s", path, waitExit())
		}
		return fmt.Errorf("plugin %s printed %q on stdout instead of the floe handshake; is it a floe plugin (does main call sdk.Serve, and nothing print to stdout first)?%s",
			path, line, waitExit())
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("plugin %s did not complete the handshake in time; it may be hanging at start%s", path, waitExit())
	case strings.Contains(msg, "exec format error"):
		return fmt.Errorf("plugin %s is not a program for this OS and architecture; rebuild it (GOOS/GOARCH)", path)
	case strings.Contains(msg, "permission denied"):
		return fmt.Errorf("plugin %s cannot be run (permission denied); run chmod +x %s and check the folder's mount options", path, path)
	}
	return fmt.Errorf("plugin %s: start: %w%s", path, err, waitExit())
}

func startTimeout(ctx context.Context, configured time.Duration) time.Duration {
	d := configured
	if d <= 0 {
		d = defaultStartTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, max(time.Until(dl), 10*time.Millisecond))
	}
	return d
}

func baseName(path string) string { return filepath.Base(path) }
