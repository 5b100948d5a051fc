package client

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level of go-plugin's and a plugin's trace lines,
// below slog's debug (the host's TRACE).
const LevelTrace = slog.LevelDebug - 4

// pluginLogger is the hclog.Logger go-plugin needs, writing to the host's
// slog logger: hclog stays inside this package.
//
// It is also where plugin log lines become the host's: go-plugin parses
// each JSON line a plugin writes and logs it here, on a logger that
// carries the host's labels ([StartOptions.Labels]: connector=…,
// plugin=<component>). So that those lines read like the host's own:
//   - numbers that are whole print as integers (JSON decoding made every
//     number a float64: schema=2000000031, not 2.000000031e+09);
//   - a key a label has already is dropped when the value is the same
//     (the plugin's own connector=…), and so is component=… when it names
//     the plugin; go-plugin's plugin=<binary path> becomes binary=…, so a
//     line has one plugin (the component) and one binary;
//   - a raw line written to stderr in librdkafka's "%<level>|…" form, which
//     go-plugin logs at debug, is logged at the syslog level it names.
//
// Named keeps the logger: the host's logger names which part of the host
// it is, not which binary (binary=… and the labels say that).
type pluginLogger struct {
	l    *slog.Logger
	name string
	args []any // the labels l carries, for relabel
}

// newPluginLogger returns go-plugin's view of l, which it labels with
// labels (key-value pairs). A nil l discards.
func newPluginLogger(l *slog.Logger, labels []any) *pluginLogger {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	labels = relabel(nil, labels)
	return &pluginLogger{l: l.With(labels...), args: labels}
}

// slogLevel maps an hclog level to slog's.
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *pluginLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level == hclog.NoLevel {
		return
	}
	if level == hclog.Debug {
		level = rawLineLevel(msg, level)
	}
	// go-plugin's log calls carry no ctx; the record needs none.
	h.l.Log(context.Background(), slogLevel(level), msg, relabel(h.args, args)...) //nolint:contextcheck // see above
}

// relabel returns args without what implied (the labels the logger
// carries) says already, with whole float64 numbers made integers; see
// [pluginLogger].
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

func (h *pluginLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *pluginLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *pluginLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *pluginLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *pluginLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *pluginLogger) enabled(l hclog.Level) bool {
	return h.l.Enabled(context.Background(), slogLevel(l)) //nolint:contextcheck // hclog's API has no ctx
}

func (h *pluginLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *pluginLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *pluginLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *pluginLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *pluginLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *pluginLogger) ImpliedArgs() []any { return append([]any(nil), h.args...) }

func (h *pluginLogger) With(args ...any) hclog.Logger {
	args = relabel(h.args, args)
	return &pluginLogger{name: h.name, args: append(h.ImpliedArgs(), args...), l: h.l.With(args...)}
}

func (h *pluginLogger) Name() string { return h.name }

func (h *pluginLogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *pluginLogger) ResetNamed(name string) hclog.Logger {
	return &pluginLogger{name: name, args: h.ImpliedArgs(), l: h.l}
}

// SetLevel does nothing: the host's logger decides its level.
func (h *pluginLogger) SetLevel(hclog.Level) {}

// GetLevel is the lowest level the host's logger takes (Off for none),
// so that go-plugin skips parsing the lines of a plugin nobody reads.
func (h *pluginLogger) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (h *pluginLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	level := slog.LevelInfo
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = slogLevel(opts.ForceLevel)
	}
	return slog.NewLogLogger(h.l.Handler(), level)
}

func (h *pluginLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}

var _ hclog.Logger = (*pluginLogger)(nil)
