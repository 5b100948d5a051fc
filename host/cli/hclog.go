package cli

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"

	"github.com/hashicorp/go-hclog"

	"github.com/floehq/floe/host/rest"
)

// hclogger adapts floe's named slog loggers to hclog.Logger, the logger
// go-plugin and the worker take. Named("x") is floe's logger "<name>.x",
// so /admin/loggers sets its level like any other.
//
// It is also where plugin log lines become floe's: go-plugin parses each
// JSON line a plugin writes and logs it here, on a logger that carries the
// host's labels (connector=…, plugin=<component>). So that those lines
// read like the host's own:
//   - numbers that are whole print as integers (JSON decoding made every
//     number a float64: schema=2000000031, not 2.000000031e+09);
//   - a key the logger carries already is dropped when the value is the
//     same (the plugin's own connector=…), and so is component=… when it
//     names the plugin; go-plugin's plugin=<binary path> becomes binary=…,
//     so a line has one plugin (the component) and one binary;
//   - a raw line written to stderr in librdkafka's "%<level>|…" form, which
//     go-plugin logs at debug, is logged at the syslog level it names.
type hclogger struct {
	logs *rest.Loggers
	name string
	args []any
	l    *slog.Logger
}

// newHCLogger returns the hclog view of floe's logger name.
func newHCLogger(logs *rest.Loggers, name string) hclog.Logger {
	return &hclogger{logs: logs, name: name, l: logs.Logger(name)}
}

// slogLevel maps an hclog level to slog's (with floe's TRACE and OFF).
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return rest.LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	case hclog.Off:
		return rest.LevelOff
	}
	return slog.LevelInfo
}

func hclogLevel(l slog.Level) hclog.Level {
	switch {
	case l >= rest.LevelOff:
		return hclog.Off
	case l >= slog.LevelError:
		return hclog.Error
	case l >= slog.LevelWarn:
		return hclog.Warn
	case l >= slog.LevelInfo:
		return hclog.Info
	case l >= slog.LevelDebug:
		return hclog.Debug
	}
	return hclog.Trace
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Debug {
		level = rawLineLevel(msg, level)
	}
	h.l.Log(context.Background(), slogLevel(level), msg, relabel(h.args, args)...)
}

// relabel returns args without what implied (the labels the logger
// carries) says already, with whole float64 numbers made integers; see
// [hclogger].
func relabel(implied, args []any) []any {
	if len(args) == 0 {
		return args
	}
	has := func(kvs []any, key string) (any, bool) {
		for i := 0; i+1 < len(kvs); i += 2 {
			if k, ok := kvs[i].(string); ok && k == key {
				return kvs[i+1], true
			}
		}
		return nil, false
	}
	out := make([]any, 0, len(args))
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) { // a value without a key: slog reports it
			out = append(out, args[i])
			break
		}
		k, v := args[i], wholeNumbers(args[i+1], 0)
		key, ok := k.(string)
		if !ok {
			out = append(out, k, v)
			continue
		}
		if key == "component" {
			if p, ok := has(implied, "plugin"); ok && fmt.Sprint(p) == fmt.Sprint(v) {
				continue
			}
		}
		if prev, ok := has(implied, key); ok {
			if fmt.Sprint(prev) == fmt.Sprint(v) {
				continue
			}
			if key == "plugin" { // go-plugin's plugin=<path>
				key = "binary"
			}
		}
		if prev, ok := has(out, key); ok && fmt.Sprint(prev) == fmt.Sprint(v) {
			continue
		}
		out = append(out, key, v)
	}
	return out
}

// wholeNumbers turns float64 values that are whole numbers into int64,
// inside slices and maps too (as JSON decoding yields them).
func wholeNumbers(v any, depth int) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 && !math.IsInf(x, 0) {
			return int64(x)
		}
	case []any:
		if depth < 4 {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = wholeNumbers(e, depth+1)
			}
			return out
		}
	case map[string]any:
		if depth < 4 {
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = wholeNumbers(e, depth+1)
			}
			return out
		}
	}
	return v
}

// rawLineLevel reads the level of a librdkafka line ("%4|1795957496.987|
// FAIL|…", the syslog level after the %): go-plugin logs raw stderr lines
// at debug, which would hide librdkafka's warnings and errors.
func rawLineLevel(msg string, def hclog.Level) hclog.Level {
	if len(msg) < 3 || msg[0] != '%' || msg[2] != '|' || msg[1] < '0' || msg[1] > '7' {
		return def
	}
	switch l := msg[1] - '0'; {
	case l <= 3:
		return hclog.Error
	case l == 4:
		return hclog.Warn
	case l <= 6:
		return hclog.Info
	}
	return hclog.Debug
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogger) enabled(l hclog.Level) bool {
	return h.l.Enabled(context.Background(), slogLevel(l))
}

func (h *hclogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hclogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hclogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hclogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hclogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hclogger) ImpliedArgs() []any { return append([]any(nil), h.args...) }

func (h *hclogger) With(args ...any) hclog.Logger {
	args = relabel(h.args, args)
	return &hclogger{logs: h.logs, name: h.name, args: append(h.ImpliedArgs(), args...), l: h.l.With(args...)}
}

func (h *hclogger) Name() string { return h.name }

func (h *hclogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	return &hclogger{logs: h.logs, name: name, args: h.ImpliedArgs(), l: h.logs.Logger(name).With(h.args...)}
}

// SetLevel sets the level of this logger's name (and the names under it).
func (h *hclogger) SetLevel(level hclog.Level) {
	if level == hclog.NoLevel {
		return
	}
	h.logs.SetLevel(h.name, slogLevel(level))
}

func (h *hclogger) GetLevel() hclog.Level {
	if lv, ok := h.logs.Level(h.name); ok {
		if l, err := rest.ParseLevel(lv.Level); err == nil {
			return hclogLevel(l)
		}
	}
	return hclog.Info
}

func (h *hclogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	level := slog.LevelInfo
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = slogLevel(opts.ForceLevel)
	}
	return slog.NewLogLogger(h.l.Handler(), level)
}

func (h *hclogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}

var _ hclog.Logger = (*hclogger)(nil)
