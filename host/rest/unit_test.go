package rest

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestMaskInline(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://floe:pw@127.0.0.1/catalog", "postgres://floe:[hidden]@127.0.0.1/catalog"},
		{"postgres://floe@127.0.0.1/catalog", "postgres://floe@127.0.0.1/catalog"},
		{"host=db user=floe password=pw dbname=c", "host=db user=floe password=[hidden] dbname=c"},
		{"jdbc:x://h/db?user=a&password=pw&ssl=true", "jdbc:x://h/db?user=a&password=[hidden]&ssl=true"},
		{"http://127.0.0.1:8081", "http://127.0.0.1:8081"},
		{"a@b.c", "a@b.c"},
	} {
		if got := maskInline(tc.in); got != tc.want {
			t.Errorf("maskInline(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIsSecretName(t *testing.T) {
	for key, want := range map[string]bool{
		"kafka.sasl.password":                           true,
		"schema.registry.basic.auth.user.info":          true,
		"iceberg.catalog.s3.secret-access-key":          true,
		"iceberg.catalog.token":                         true,
		"sasl.oauthbearer.token.endpoint.url":           false,
		"schema.registry.basic.auth.credentials.source": false,
		"iceberg.catalog.s3.access-key-id":              false,
		"tasks.max":                                     false,
	} {
		if got := isSecretName(key); got != want {
			t.Errorf("isSecretName(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestLoggersLevels(t *testing.T) {
	var buf bytes.Buffer
	l := NewLoggers(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: LevelTrace}), slog.LevelInfo)
	w := l.Logger("floe.worker")
	w.Debug("hidden")
	w.Info("shown")
	l.SetLevel("floe", slog.LevelDebug)
	child := l.Logger("floe.worker.task") // created after: inherits DEBUG from floe.worker
	child.Debug("child debug")
	w.With("k", "v").WithGroup("g").Debug("worker debug")
	l.Logger("other").Debug("other hidden")
	out := buf.String()
	for _, s := range []string{"shown", "child debug", "worker debug", "logger=floe.worker.task"} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"msg=hidden", "other hidden"} {
		if strings.Contains(out, s) {
			t.Errorf("log has %q:\n%s", s, out)
		}
	}
	l.SetLevel("root", LevelOff)
	buf.Reset()
	w.Error("off")
	if buf.Len() != 0 {
		t.Errorf("OFF still logs: %s", buf.String())
	}
}

func TestParseLevel(t *testing.T) {
	for _, name := range []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"} {
		lv, err := ParseLevel(strings.ToLower(name))
		if err != nil || LevelName(lv) != name {
			t.Errorf("ParseLevel(%s) = %v %v (name %s)", name, lv, err, LevelName(lv))
		}
	}
	if _, err := ParseLevel("warning"); err != nil {
		t.Error(err)
	}
	if _, err := ParseLevel("LOUD"); err == nil || !strings.Contains(err.Error(), "TRACE, DEBUG") {
		t.Errorf("ParseLevel(LOUD) = %v", err)
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd\nef")
	for idx, want := range map[int][2]int{0: {1, 1}, 1: {1, 2}, 3: {2, 1}, 7: {3, 2}, 99: {3, 3}} {
		l, c := lineCol(data, idx)
		if l != want[0] || c != want[1] {
			t.Errorf("lineCol(%d) = %d:%d, want %d:%d", idx, l, c, want[0], want[1])
		}
	}
}
