package rest

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/floehq/floe/host/worker"
)

// TestMaskValue: answers hide what the SDK's classification calls secret
// (the same the sdktest kits hold specs to), and what a component
// declares PASSWORD whatever its name.
func TestMaskValue(t *testing.T) {
	declared := map[string]bool{"catalog.pass": true}
	for _, tc := range []struct{ key, in, want string }{
		{"iceberg.catalog.uri", "postgres://floe:pw@127.0.0.1/catalog", "postgres://floe:[hidden]@127.0.0.1/catalog"},
		{"iceberg.catalog.uri", "postgres://floe@127.0.0.1/catalog", "postgres://floe@127.0.0.1/catalog"},
		{"iceberg.catalog.uri", "host=db user=floe password=pw dbname=c", "host=db user=floe password=[hidden] dbname=c"},
		{"kafka.sasl.oauthbearer.extensions", "clientId=floe clientSecret=s", "clientId=floe clientSecret=[hidden]"},
		{"kafka.sasl.oauthbearer.config", "clientId=floe clientSecret=s", hidden},
		{"iceberg.catalog.adls.endpoint", "AccountName=a;AccountKey=k", "AccountName=a;AccountKey=[hidden]"},
		{"kafka.sasl.password", "pw", hidden},
		{"schema.registry.basic.auth.user.info", "u:pw", hidden},
		{"iceberg.catalog.header.Authorization", "Bearer abcdefgh", hidden},
		{"iceberg.catalog.s3.sse.key", "k", hidden},
		{"catalog.pass", "pw", hidden},
		{"kafka.sasl.oauthbearer.token.endpoint.url", "https://idp/token", "https://idp/token"},
		{"schema.registry.url", "http://127.0.0.1:8081", "http://127.0.0.1:8081"},
	} {
		if got := maskValue(tc.key, tc.in, declared); got != tc.want {
			t.Errorf("maskValue(%q, %q) = %q, want %q", tc.key, tc.in, got, tc.want)
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

// TestMaskInfosErrors: a key's errors hide what its value hides, since a
// check may quote the value it refused.
func TestMaskInfosErrors(t *testing.T) {
	secret, inline := "s3cr3t-value", "iceberg.catalog.uri"
	v1, v2 := secret, "Bearer tok_en_12345"
	raw := worker.ConfigInfos{Configs: []worker.ConfigInfo{
		{Definition: worker.ConfigDef{Type: "PASSWORD"}, Value: worker.ConfigValue{Name: "catalog.pass", Value: &v1, Errors: []string{"bad value " + secret}}},
		{Value: worker.ConfigValue{Name: inline, Value: &v2, Errors: []string{`"Bearer tok_en_12345" is not a URI`}}},
	}}
	infos := maskInfos(raw)
	if e := infos.Configs[0].Value.Errors[0]; e != "bad value "+hidden || infos.Configs[0].Value.Value != nil {
		t.Errorf("password key: errors %q, value %v", e, infos.Configs[0].Value.Value)
	}
	if e := infos.Configs[1].Value.Errors[0]; strings.Contains(e, "tok_en") {
		t.Errorf("inline secret in an error: %q", e)
	}
	if msg := messageOf(&worker.ValidationError{Infos: raw}); strings.Contains(msg, secret) || strings.Contains(msg, "tok_en") {
		t.Errorf("400 message leaks: %s", msg)
	}
}
