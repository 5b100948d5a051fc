package sdk

import (
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/floehq/floe/sdk/internal/handshake"
)

// levelTrace is hclog's trace level, below slog's debug.
const levelTrace = slog.LevelDebug - 4

// hclogTimeFormat is the timestamp layout go-plugin's host side parses.
const hclogTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// newPluginLogger returns the root logger of a plugin process: one JSON
// object per line in hclog's shape (@level, @message, @timestamp, then the
// attributes), so go-plugin on the host side parses each line and hands it
// to the host's logger with its level and attributes.
func newPluginLogger(w io.Writer, level slog.Level) *slog.Logger {
	if w == nil {
		w = io.Discard
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level:       level,
		ReplaceAttr: hclogAttr,
	}))
}

// hclogAttr renames slog's built-in keys to hclog's.
func hclogAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		return slog.String("@timestamp", a.Value.Time().Format(hclogTimeFormat))
	case slog.LevelKey:
		l, _ := a.Value.Any().(slog.Level)
		return slog.String("@level", hclogLevel(l))
	case slog.MessageKey:
		return slog.String("@message", a.Value.String())
	}
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

func hclogLevel(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	}
	return "error"
}

// levelFromEnv reads the log level the host asked for, info by default.
func levelFromEnv() slog.Level {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(handshake.LogLevelEnv))) {
	case "trace":
		return levelTrace
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
