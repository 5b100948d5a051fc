package cli

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"

	"github.com/floehq/floe/host/rest"
)

// newFlagSet returns a flag set that reports errors instead of printing.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with flags and positional arguments in any order
// (floe standalone worker.json --progress c.json) and returns the
// positional ones. "--" ends the flags. A bad flag is a usage error naming
// it, with the closest known flag.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, flagError(fs, err)
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError rewords the flag package's errors, proposing a defined flag
// close to an undefined one.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	const undefined = "flag provided but not defined: -"
	if !strings.HasPrefix(msg, undefined) {
		msg = strings.Replace(msg, " flag -", " flag --", 1)
		return usagef("%s", strings.Replace(msg, " for -", " for --", 1))
	}
	name := strings.TrimLeft(strings.TrimPrefix(msg, undefined), "-")
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best != "" {
		return usagef("unknown flag --%s (did you mean --%s?)", name, best)
	}
	return usagef("unknown flag --%s", name)
}

// logFlags are the logging flags every command takes.
type logFlags struct {
	level  levelFlag
	format string
}

// levelFlag is --log-level; it remembers whether the user chose it (flag
// or FLOE_LOG_LEVEL), so that a worker config's log.level can apply
// otherwise.
type levelFlag struct {
	value string
	set   bool
}

func (f *levelFlag) String() string     { return f.value }
func (f *levelFlag) Set(v string) error { f.value, f.set = v, true; return nil }

func addLogFlags(fs *flag.FlagSet, a *App) *logFlags {
	lf := &logFlags{level: levelFlag{value: "INFO"}}
	if v := a.Getenv("FLOE_LOG_LEVEL"); v != "" {
		lf.level = levelFlag{value: v, set: true}
	}
	lf.format = a.Getenv("FLOE_LOG_FORMAT")
	if lf.format == "" {
		lf.format = "text"
	}
	fs.Var(&lf.level, "log-level", "log level: TRACE, DEBUG, INFO, WARN, ERROR or OFF (env FLOE_LOG_LEVEL; default the worker config's log.level, else INFO)")
	fs.StringVar(&lf.format, "log-format", lf.format, "log format: text or json (env FLOE_LOG_FORMAT)")
	return lf
}

// loggers builds the named loggers writing to stderr.
func (a *App) loggers(lf *logFlags) (*rest.Loggers, error) {
	return a.loggersWithDefault(lf, "")
}

// loggersWithDefault is loggers where def (a worker config's log.level)
// applies unless the user chose a level.
func (a *App) loggersWithDefault(lf *logFlags, def string) (*rest.Loggers, error) {
	return a.loggersTo(a.Stderr, lf, def)
}

// loggersTo is loggersWithDefault writing to out.
func (a *App) loggersTo(out io.Writer, lf *logFlags, def string) (*rest.Loggers, error) {
	name := lf.level.value
	if !lf.level.set && def != "" {
		name = def
	}
	level, err := rest.ParseLevel(name)
	if err != nil {
		return nil, usagef("--log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: rest.LevelTrace, ReplaceAttr: levelNames}
	var h slog.Handler
	switch strings.ToLower(lf.format) {
	case "text", "":
		h = slog.NewTextHandler(out, opts)
	case "json":
		h = slog.NewJSONHandler(out, opts)
	default:
		return nil, usagef("--log-format %q: use text or json", lf.format)
	}
	return rest.NewLoggers(h, level), nil
}

// levelNames prints log4j's names for floe's extra levels.
func levelNames(groups []string, attr slog.Attr) slog.Attr {
	if attr.Key == slog.LevelKey && len(groups) == 0 {
		if lv, ok := attr.Value.Any().(slog.Level); ok {
			attr.Value = slog.StringValue(rest.LevelName(lv))
		}
	}
	return attr
}

// Logger names, dotted like log4j's so that /admin/loggers can set a
// whole subtree ("floe" is all of floe).
const (
	logCLI         = "floe.cli"
	logWorker      = "floe.worker"
	logRegistry    = "floe.registry"
	logREST        = "floe.rest"
	logDistributed = "floe.distributed"
	logStandalone  = "floe.standalone"
	logMaintain    = "floe.maintain"
)

// argCount checks the number of positional arguments.
func argCount(pos []string, min, max int, what string) error {
	switch {
	case len(pos) < min:
		return usagef("missing %s", what)
	case max >= 0 && len(pos) > max:
		return usagef("unexpected argument %q", pos[max])
	}
	return nil
}
