package sdktest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floehq/floe/sdk"
	"github.com/floehq/floe/sdk/client"
)

// Target is the plugin a kit runs: a built binary ([Binary]) or
// components served from the test process ([InProcess]). Either way the
// kit talks to it over real go-plugin gRPC, through the same client the
// floe host uses. Each check starts a fresh plugin process (or server).
type Target struct {
	name  string
	start func(ctx context.Context, logs io.Writer, tr transport) (*client.Process, error)
}

// transport is how the kit talks to the plugin: floe's worker keys
// plugin.transport.tls and plugin.transport.shared.memory.
type transport struct{ tls, shared bool }

// defaultTransport is floe's default: plain gRPC, batches in shared
// memory. The source kit's transport check tries the other one.
var defaultTransport = transport{tls: false, shared: true}

// String names the target in messages.
func (t Target) String() string { return t.name }

// Binary targets a built plugin binary, started as floe starts it
// (handshake, checksum-free; plain gRPC with batches in shared memory, as
// floe's defaults; the source kit's transport check also tries AutoMTLS
// with batches as bytes).
func Binary(path string) Target {
	return BinaryWithEnv(path)
}

// BinaryWithEnv is [Binary] with extra environment variables for the
// plugin process, such as a crash point ([sdk.CrashPointEnv]).
func BinaryWithEnv(path string, env ...string) Target {
	name := path
	if len(env) > 0 {
		name += " (" + strings.Join(env, " ") + ")"
	}
	return Target{
		name: name,
		start: func(ctx context.Context, logs io.Writer, tr transport) (*client.Process, error) {
			return client.Start(ctx, client.StartOptions{
				Path:         path,
				StartTimeout: startTimeout,
				Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime})),
				Env:          append([]string{"FLOE_PLUGIN_LOG_LEVEL=debug"}, env...),
				TLS:          tr.tls,
				SharedMemory: tr.shared,
			})
		},
	}
}

// InProcess targets components served from the test process over a real
// gRPC connection (sdk.ServeInProcess): quicker than building a binary,
// and the race detector sees the plugin's code.
func InProcess(components ...sdk.Component) Target {
	return Target{
		name: "in-process " + componentNames(components),
		start: func(ctx context.Context, logs io.Writer, tr transport) (*client.Process, error) {
			srv, err := sdk.ServeInProcess(ctx, sdk.InProcessOptions{Logs: logs}, components...)
			if err != nil {
				return nil, err
			}
			// In-process: no TLS, whatever tr says.
			return client.Attach(ctx, client.AttachOptions{Name: "in-process", Addr: srv.Addr, Done: srv.Done, SharedMemory: tr.shared})
		},
	}
}

func componentNames(cs []sdk.Component) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

// Build compiles the plugin's main package (pkg, as `go build` takes it,
// such as "." or "./cmd/floe-plugin-x") into a temporary folder and returns
// the binary's path, named floe-plugin-<name>. It fails the test if the
// build fails. It needs the go command on PATH.
func Build(t testing.TB, pkg, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "floe-plugin-"+name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sdktest.Build: go build -o %s %s: %v\n%s", out, pkg, err, stderr.String())
	}
	return out
}

// startTimeout bounds starting one plugin process.
const startTimeout = 30 * time.Second

// session is one check's plugin process and its deadline.
type session struct {
	t   tb
	p   *client.Process
	ctx context.Context
}

// newSession starts the target for one check. The process is killed, and
// its log shown if the check failed, when the check ends.
func newSession(t tb, target Target, timeout time.Duration) *session {
	t.Helper()
	return newSessionWith(t, target, timeout, defaultTransport)
}

// newSessionWith is newSession over another transport.
func newSessionWith(t tb, target Target, timeout time.Duration, tr transport) *session {
	t.Helper()
	logs := &logTail{max: 200}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	p, err := target.start(ctx, logs, tr)
	if err != nil {
		t.Fatalf("start %s: %v", target, err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			if lines := logs.String(); lines != "" {
				t.Logf("plugin log (last lines):\n%s", lines)
			}
		}
	})
	return &session{t: t, p: p, ctx: ctx}
}

// logTail keeps a plugin's last log lines.
type logTail struct {
	mu    sync.Mutex
	max   int
	lines []string
	part  []byte
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data := append(l.part, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(data[:i]))
		if len(l.lines) > l.max {
			l.lines = l.lines[len(l.lines)-l.max:]
		}
		data = data[i+1:]
	}
	l.part = append([]byte(nil), data...)
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// skipIf skips a check the case opted out of.
func skipIf(t tb, skip []string, check string) {
	for _, s := range skip {
		if s == check {
			t.Skipf("the case skips %q", check)
		}
	}
}

// callCtx bounds one call within the session.
func (s *session) callCtx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, d)
}

// dropTime leaves the time out of the plugin's log lines a kit shows: the
// test's own output has it already.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
