package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/floehq/floe/host/rest"
	"github.com/floehq/floe/host/worker"
)

// Version is floe's version, set at build time by the Makefile
// (-ldflags "-X github.com/floehq/floe/host/cli.Version=…"). Empty falls
// back to the module version in the binary's build info.
var Version = ""

// Commit is the commit floe was built from, set at build time by the
// Makefile (-ldflags "-X github.com/floehq/floe/host/cli.Commit=…", from
// git rev-parse --short HEAD). Empty falls back to the vcs.revision the Go
// toolchain stamped in the build info, when it did. GET / and
// `floe version` show it.
var Commit = ""

// App runs floe's subcommands. Its fields are where output goes; the zero
// value is not usable, see [Run] for the process's own.
type App struct {
	Stdout io.Writer
	Stderr io.Writer
	// Terminal reports whether w is an interactive terminal; it decides
	// the default of --progress and whether progress redraws in place.
	// Nil means never.
	Terminal func(w io.Writer) bool
	// Getenv reads the environment (FLOE_LOG_LEVEL, FLOE_LOG_FORMAT). Nil
	// means os.Getenv.
	Getenv func(string) string

	// newWorker, when set, replaces the real worker (tests).
	newWorker func(ctx context.Context, wc worker.Config, logs *rest.Loggers) (runningWorker, error)
	// openCatalog, when set, replaces the iceberg catalog opener (tests).
	openCatalog catalogOpener
}

// Run runs floe with the process's standard output and error and returns
// the exit code: 0 on success, 1 on failure, 2 for a usage mistake.
func Run(ctx context.Context, args []string) int {
	app := &App{Stdout: os.Stdout, Stderr: os.Stderr, Terminal: isTerminal, Getenv: os.Getenv}
	return app.Run(ctx, args)
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // the usage line after "floe "
	help    string // the rest of `floe help <name>`
	// flagSet declares the command's flags (for help); nil for none.
	flagSet func(a *App) *flag.FlagSet
	run     func(a *App, ctx context.Context, args []string) error
}

func (a *App) commands() []*command {
	return []*command{
		standaloneCommand(),
		distributedCommand(),
		pluginsCommand(),
		validateCommand(),
		tableCommand(),
		maintainCommand(),
		versionCommand(),
		helpCommand(),
	}
}

func (a *App) lookup(name string) *command {
	for _, c := range a.commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// Run runs one floe command line (without the program name) and returns
// the exit code.
func (a *App) Run(ctx context.Context, args []string) int {
	if a.Getenv == nil {
		a.Getenv = os.Getenv
	}
	if len(args) == 0 {
		_ = a.printUsage(a.Stderr) // a failed write to stderr has nowhere to go; the exit code says it
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		if err := a.printUsage(a.Stdout); err != nil {
			warnf(a.Stderr, "floe: %v\n", err)
			return 1
		}
		return 0
	case "-version", "--version":
		name = "version"
	}
	cmd := a.lookup(name)
	if cmd == nil {
		warnf(a.Stderr, "floe: unknown command %q%s\n", name, suggest(name, a.commandNames()))
		warnf(a.Stderr, "usage: floe <command> [arguments]; run `floe help` for the commands\n")
		return 2
	}
	err := cmd.run(a, ctx, rest)
	return a.report(cmd, err)
}

// report prints err and returns the exit code.
func (a *App) report(cmd *command, err error) int {
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		if err := a.printCommandHelp(a.Stdout, cmd); err != nil {
			warnf(a.Stderr, "floe %s: %v\n", cmd.name, err)
			return 1
		}
		return 0
	case errors.As(err, &ue):
		warnf(a.Stderr, "floe %s: %s\n", cmd.name, ue.msg)
		warnf(a.Stderr, "usage: floe %s\nrun `floe help %s` for details\n", cmd.usage, cmd.name)
		return 2
	case errors.As(err, &ee):
		if ee.err != nil {
			warnf(a.Stderr, "floe %s: %v\n", cmd.name, ee.err)
		}
		return ee.code
	}
	warnf(a.Stderr, "floe %s: %v\n", cmd.name, err)
	return 1
}

func (a *App) commandNames() []string {
	var names []string
	for _, c := range a.commands() {
		names = append(names, c.name)
	}
	return names
}

// usageError is a mistake on the command line (exit 2, usage printed).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError ends a command with a given code; err, if any, is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// version returns floe's version and the commit it was built from.
func version() (ver, commit string) {
	ver, commit = Version, Commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if ver == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			ver = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && commit == "" {
				commit = s.Value
			}
		}
	}
	if ver == "" {
		ver = "dev"
	}
	return ver, commit
}

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print floe's version",
		usage:   "version",
		help:    "Prints the version and the commit floe was built from.",
		run: func(a *App, ctx context.Context, args []string) error {
			pos, err := parseFlags(newFlagSet("version"), args)
			if err != nil {
				return err
			}
			if len(pos) > 0 {
				return usagef("version takes no arguments")
			}
			ver, commit := version()
			p := newPrinter(a.Stdout)
			if commit != "" {
				p.printf("floe %s (commit %s)\n", ver, commit)
			} else {
				p.printf("floe %s\n", ver)
			}
			return p.err
		},
	}
}

// suggest returns ` (did you mean "x"?)` for the closest name, if close.
func suggest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(name), n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
