package client

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestPluginLinesRelabelled logs what go-plugin hands the host for a
// plugin's lines, on the logger a host gives a plugin process.
func TestPluginLinesRelabelled(t *testing.T) {
	var buf bytes.Buffer
	host := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: LevelTrace}))
	proc := newPluginLogger(host, []any{"connector", "orders", "plugin", "kafka"})
	stderr := proc.Named("floe-plugin-kafka") // as go-plugin names it

	// A JSON line: go-plugin decoded every number into a float64.
	stderr.Warn("schema id unknown", "connector", "orders", "component", "kafka", "task", float64(0),
		"schema", float64(2000000031), "buffer_max_bytes", float64(67108864), "ratio", 0.25,
		"partitions", []any{float64(0), float64(12)}, "timestamp", "2026-11-29T13:04:48.010Z")
	// go-plugin's own line about the process.
	proc.Info("plugin process exited", "plugin", "/opt/floe/plugins/floe-plugin-kafka", "id", float64(4242))
	// A raw librdkafka line on the plugin's stderr, which go-plugin logs at debug.
	stderr.Debug("%4|1795957496.987|FAIL|rdkafka#producer-1| [thrd:k:9092/bootstrap]: k:9092/bootstrap: Disconnected")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), buf.String())
	}
	for i, line := range lines {
		for _, key := range []string{"connector=", "plugin="} {
			if n := strings.Count(line, " "+key); n != 1 {
				t.Errorf("line %d has %s %d times: %s", i, key, n, line)
			}
		}
		if !strings.Contains(line, "connector=orders") || !strings.Contains(line, "plugin=kafka") {
			t.Errorf("line %d lacks the connector's and the component's labels: %s", i, line)
		}
		if strings.Contains(line, "component=") || strings.Contains(line, "e+0") {
			t.Errorf("line %d: %s", i, line)
		}
	}
	for _, want := range []string{"schema=2000000031", "buffer_max_bytes=67108864", "task=0", "ratio=0.25", "partitions=\"[0 12]\""} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("plugin line lacks %s: %s", want, lines[0])
		}
	}
	if !strings.Contains(lines[1], "binary=/opt/floe/plugins/floe-plugin-kafka") || !strings.Contains(lines[1], "id=4242") {
		t.Errorf("go-plugin's line: %s", lines[1])
	}
	if !strings.Contains(lines[2], "level=WARN") || !strings.Contains(lines[2], "%4|") {
		t.Errorf("librdkafka's warning: %s", lines[2])
	}
}

// TestPluginLoggerLevel: go-plugin reads the level to skip parsing the
// lines of a plugin whose logger takes none.
func TestPluginLoggerLevel(t *testing.T) {
	var buf bytes.Buffer
	for _, c := range []struct {
		level slog.Level
		want  string
	}{{LevelTrace, "TRACE"}, {slog.LevelInfo, "INFO"}, {slog.LevelError, "ERROR"}, {slog.LevelError + 100, "OFF"}} {
		l := newPluginLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: c.level})), nil)
		if got := l.GetLevel().String(); !strings.EqualFold(got, c.want) {
			t.Errorf("level %v: GetLevel %s, want %s", c.level, got, c.want)
		}
	}
	newPluginLogger(nil, nil).Info("discarded") // a nil logger discards
}
