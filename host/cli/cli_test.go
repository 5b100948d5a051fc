package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/floehq/floe/host/rest"
)

// syncBuffer is a bytes.Buffer safe for the goroutines of a command.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// run runs a command line with captured output.
type result struct {
	code           int
	stdout, stderr string
}

func runApp(t *testing.T, app *App, args ...string) result {
	t.Helper()
	return runAppCtx(t, context.Background(), app, args...)
}

func runAppCtx(t *testing.T, ctx context.Context, app *App, args ...string) result {
	t.Helper()
	var out, errOut syncBuffer
	if app == nil {
		app = &App{}
	}
	app.Stdout, app.Stderr = &out, &errOut
	if app.Getenv == nil {
		app.Getenv = func(string) string { return "" }
	}
	code := app.Run(ctx, args)
	return result{code, out.String(), errOut.String()}
}

func (r result) wants(t *testing.T, code int, stdout, stderr []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stdout {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	for _, s := range stderr {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	runApp(t, nil).wants(t, 2, nil, []string{"usage: floe <command>", "standalone", "plugins", "table", "maintain"})
	runApp(t, nil, "help").wants(t, 0, []string{"usage: floe <command>", "Quick start", "floe help <command>"}, nil)
	runApp(t, nil, "--help").wants(t, 0, []string{"usage: floe <command>"}, nil)
	runApp(t, nil, "help", "standalone").wants(t, 0, []string{"usage: floe standalone <worker.json>", "--exit-when-done", "--progress", "--log-level"}, nil)
	runApp(t, nil, "standalone", "--help").wants(t, 0, []string{"usage: floe standalone", "watched"}, nil)
	runApp(t, nil, "help", "table").wants(t, 0, []string{"table describe", "--json", "iceberg_scan"}, nil)
	runApp(t, nil, "help", "nope").wants(t, 2, nil, []string{`unknown command "nope"`})
	runApp(t, nil, "version").wants(t, 0, []string{"floe "}, nil)
	runApp(t, nil, "--version").wants(t, 0, []string{"floe "}, nil)
	runApp(t, nil, "version", "x").wants(t, 2, nil, []string{"takes no arguments", "usage: floe version"})
}

func TestUnknownCommandAndFlags(t *testing.T) {
	runApp(t, nil, "standalon").wants(t, 2, nil, []string{`unknown command "standalon"`, `did you mean "standalone"`, "floe help"})
	runApp(t, nil, "standalone", "--porgress", "w.json").wants(t, 2, nil,
		[]string{"unknown flag --porgress (did you mean --progress?)", "usage: floe standalone", "floe help standalone"})
	runApp(t, nil, "standalone").wants(t, 2, nil, []string{"missing the worker config file"})
	runApp(t, nil, "standalone", "--progress=maybe", "w.json").wants(t, 2, nil, []string{`"maybe" is not true or false`})
	runApp(t, nil, "standalone", "--log-level", "LOUD", "w.json").wants(t, 2, nil, []string{"invalid log level 'LOUD'"})
	runApp(t, nil, "standalone", "--log-format", "xml", "w.json").wants(t, 2, nil, []string{"use text or json"})
	runApp(t, nil, "table").wants(t, 2, nil, []string{"floe table describe"})
	runApp(t, nil, "table", "show", "a.b").wants(t, 2, nil, []string{`unknown subcommand "show"`})
	runApp(t, nil, "table", "describe", "orders").wants(t, 2, nil, []string{"has no namespace"})
}

func TestParseFlagsInterleaved(t *testing.T) {
	fs := newFlagSet("x")
	b := fs.Bool("b", false, "")
	s := fs.String("s", "", "")
	pos, err := parseFlags(fs, []string{"one", "--b", "two", "-s", "v", "three", "--", "--four"})
	if err != nil {
		t.Fatal(err)
	}
	if !*b || *s != "v" || strings.Join(pos, " ") != "one two three --four" {
		t.Errorf("b=%v s=%q pos=%q", *b, *s, pos)
	}
}

func TestLoggers(t *testing.T) {
	var buf bytes.Buffer
	app := &App{Stderr: &buf, Getenv: func(k string) string {
		if k == "FLOE_LOG_FORMAT" {
			return "json"
		}
		return ""
	}}
	fs := newFlagSet("x")
	lf := addLogFlags(fs, app)
	if _, err := parseFlags(fs, []string{"--log-level", "trace"}); err != nil {
		t.Fatal(err)
	}
	logs, err := app.loggers(lf)
	if err != nil {
		t.Fatal(err)
	}
	logs.Logger("floe.test").Log(context.Background(), rest.LevelTrace, "deep")
	if !strings.Contains(buf.String(), `"level":"TRACE"`) || !strings.Contains(buf.String(), `"logger":"floe.test"`) {
		t.Errorf("log = %s", buf.String())
	}
}

func TestGroupAndClock(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
	if got := bytesIEC(1536 << 20); got != "1.5 GiB" {
		t.Errorf("bytesIEC = %q", got)
	}
}

var _ io.Writer = (*syncBuffer)(nil)
