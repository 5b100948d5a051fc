package rest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var a Auth
	if err := a.LoadBasicCredentials(write("users", "# users\nalice: wonder: land\n\n! comment\nbob=builder\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.LoadBearerTokens(write("tokens", "t0k\n")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, body, says string
		bearer           bool
	}{
		{"empty", "# nothing\n", "no credentials", false},
		{"noline", "alice\n", "line 1", false},
		{"nopass", "alice:\n", "empty user or password", false},
		{"spaced", "a b\n", "line 1", true},
	} {
		var b Auth
		load := b.LoadBasicCredentials
		if tc.bearer {
			load = b.LoadBearerTokens
		}
		if err := load(write(tc.file, tc.body)); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.says)
		}
	}

	f := newFixture(t)
	f.h = New(Options{Worker: f.w, Auth: &a})
	for _, tc := range []struct {
		name   string
		header func(*http.Request)
		path   string
		code   int
	}{
		{"no credentials", func(*http.Request) {}, "/connectors", http.StatusUnauthorized},
		{"health needs none", func(*http.Request) {}, "/health", http.StatusOK},
		{"password with a colon", func(r *http.Request) { r.SetBasicAuth("alice", "wonder: land") }, "/connectors", http.StatusOK},
		{"bob", func(r *http.Request) { r.SetBasicAuth("bob", "builder") }, "/connectors", http.StatusOK},
		{"wrong password", func(r *http.Request) { r.SetBasicAuth("bob", "builders") }, "/connectors", http.StatusUnauthorized},
		{"token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer t0k") }, "/", http.StatusOK},
		{"bad token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer t0") }, "/", http.StatusUnauthorized},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Digest x") }, "/", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest("GET", tc.path, nil)
		tc.header(req)
		rec := f.raw("GET", tc.path, "", map[string]string{"Authorization": req.Header.Get("Authorization")}, nil)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.code)
		}
		if rec.Code == http.StatusUnauthorized && len(rec.Header().Values("WWW-Authenticate")) != 2 {
			t.Errorf("%s: challenges %v, want Basic and Bearer", tc.name, rec.Header().Values("WWW-Authenticate"))
		}
	}
}
