package cli

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"

	"github.com/floehq/floe/host/rest"
)

// hclogger adapts floe's named slog loggers to hclog.Logger, the logger
// go-plugin and the worker take. Named("x") is floe's logger "<name>.x",
// so /admin/loggers sets its level like any other.
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
	h.l.Log(context.Background(), slogLevel(level), msg, args...)
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
