package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floehq/floe/e2e/harness"
)

// TestRESTRefusesBrowserRequests sends a real `floe standalone` the
// requests a web page in a user's browser can make: a cross-origin
// text/plain POST creating a connector (no CORS preflight needed), a
// cross-origin restart and delete, a read through a name rebound to
// 127.0.0.1. Each is refused and changes nothing; the same calls from a
// non-browser client work.
func TestRESTRefusesBrowserRequests(t *testing.T) {
	env := harness.Require(t, harness.FloeBinary, harness.Plugin("datagen"), harness.Plugin("partitioners"), harness.Plugin("iceberg"))
	ctx := harness.Context(t, 3*time.Minute)
	f := harness.StartFloe(t, env, harness.Options{})
	api := f.API

	send := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, api.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("%s %s answered CORS header Access-Control-Allow-Origin %q", method, path, v)
		}
		return resp.StatusCode, string(b)
	}
	body := `{"name": "csrf", "config": {"connector.class": "iceberg", "source": "datagen", "datagen.rate": "10", "iceberg.tables": "csrf.t"}}`
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   string
		header map[string]string
		code   int
	}{
		{"text/plain POST", "POST", "/connectors", body, map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"text/plain POST without Origin", "POST", "/connectors", body, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"form POST", "POST", "/connectors", body, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"rebound name", "GET", "/connectors", "", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
	} {
		code, answer := send(tc.method, tc.path, tc.body, tc.header)
		if code != tc.code {
			t.Errorf("%s: %s %s answered %d %s, want %d", tc.name, tc.method, tc.path, code, answer, tc.code)
		}
	}
	if names, err := api.Connectors(ctx); err != nil || len(names) != 0 {
		t.Fatalf("after refused requests GET /connectors = %v %v, want none", names, err)
	}

	if _, err := api.CreateConnector(ctx, harness.Connector{Name: "csrf", Config: map[string]string{
		"connector.class": "iceberg", "source": "datagen", "datagen.rate": "10", "iceberg.tables": "csrf.t",
	}}); err != nil {
		t.Fatal(err)
	}
	f.WaitStatus(ctx, "csrf", "RUNNING", false, harness.ConnectorStatus.Running)
	for _, path := range []string{"/connectors/csrf/restart", "/connectors/csrf"} {
		method := map[string]string{"/connectors/csrf/restart": "POST", "/connectors/csrf": "DELETE"}[path]
		if code, answer := send(method, path, "", map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
			t.Errorf("cross-origin %s %s answered %d %s, want 403", method, path, code, answer)
		}
	}
	if _, err := api.Connector(ctx, "csrf"); err != nil {
		t.Errorf("after a refused cross-origin DELETE: %v", err)
	}
	if code, _ := send("GET", "/connectors", "", map[string]string{"Host": "localhost"}); code != http.StatusOK {
		t.Errorf("GET with Host localhost answered %d", code)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := api.DeleteConnector(rctx, "csrf"); err != nil {
		t.Fatal(err)
	}
}
