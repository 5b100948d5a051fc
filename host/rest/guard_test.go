package rest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const createBody = `{"name": "csrf", "config": {"connector.class": "iceberg", "source": "datagen", "tasks.max": "1"}}`

func (f *fixture) raw(method, path, body string, header map[string]string, local net.Addr) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if local != nil {
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// A web page must not be able to drive the API from a user's browser:
// cross-origin writes, non-JSON bodies (an HTML form, a text/plain fetch)
// and foreign Host names on a loopback listener are refused before any
// handler runs; nothing is created or restarted.
func TestBrowserRequestsAreRefused(t *testing.T) {
	f := newFixture(t)
	f.create("orders", ordersConfig())
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8083}
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   string
		header map[string]string
		local  net.Addr
		code   int
		says   string
	}{
		{"text/plain create", "POST", "/connectors", createBody, map[string]string{"Content-Type": "text/plain"}, nil, http.StatusUnsupportedMediaType, "application/json"},
		{"form create", "POST", "/connectors", createBody, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, nil, http.StatusUnsupportedMediaType, "415"},
		{"no content type", "PUT", "/connectors/orders/config", `{"connector.class": "iceberg"}`, nil, nil, http.StatusUnsupportedMediaType, "Content-Type"},
		{"cross-origin create", "POST", "/connectors", createBody,
			map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example", "Host": "127.0.0.1:8083"}, nil, http.StatusForbidden, "evil.example"},
		{"cross-site restart", "POST", "/connectors/orders/restart", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, nil, http.StatusForbidden, "cross-origin"},
		{"cross-origin delete", "DELETE", "/connectors/orders", "", map[string]string{"Origin": "http://evil.example", "Host": "127.0.0.1:8083"}, nil, http.StatusForbidden, "cross-origin"},
		{"rebound name", "GET", "/connectors/orders/config", "", map[string]string{"Host": "evil.example:8083"}, loopback, http.StatusForbidden, "loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.raw(tc.method, tc.path, tc.body, tc.header, tc.local)
			f.wantError(rec, tc.code, tc.says)
		})
	}
	if names := f.w.Connectors(context.Background()); len(names) != 1 || names[0] != "orders" {
		t.Errorf("connectors after refused requests: %v", names)
	}
	for _, c := range f.w.calls {
		if strings.Contains(c, "restart") || strings.Contains(c, "delete") || strings.Contains(c, "csrf") {
			t.Errorf("a refused request reached the worker: %s", c)
		}
	}

	// What must keep working: same-origin and non-browser writes, JSON
	// with a charset, body-less writes, reads from anywhere (floe sends
	// no CORS headers, so a foreign page cannot read them), loopback
	// names on a loopback listener, any name on other listeners.
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   string
		header map[string]string
		local  net.Addr
		code   int
	}{
		{"curl", "POST", "/connectors", createBody, map[string]string{"Content-Type": "application/json; charset=utf-8"}, nil, http.StatusCreated},
		{"same origin", "PUT", "/connectors/orders/pause", "", map[string]string{"Origin": "http://127.0.0.1:8083", "Host": "127.0.0.1:8083"}, nil, http.StatusAccepted},
		{"restart without body", "POST", "/connectors/orders/restart", "", nil, nil, http.StatusNoContent},
		{"localhost", "GET", "/connectors", "", map[string]string{"Host": "localhost:8083"}, loopback, http.StatusOK},
		{"ipv6 loopback", "GET", "/connectors", "", map[string]string{"Host": "[::1]:8083"}, loopback, http.StatusOK},
		{"public listener", "GET", "/connectors", "", map[string]string{"Host": "floe.example:8083"}, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8083}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.raw(tc.method, tc.path, tc.body, tc.header, tc.local)
			if rec.Code != tc.code {
				t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.code)
			}
			if v := rec.Header().Get("Access-Control-Allow-Origin"); v != "" {
				t.Errorf("CORS header Access-Control-Allow-Origin: %q", v)
			}
		})
	}
}

// scope=cluster sets the level and answers 204, as Connect's KIP-976
// does; an unknown scope is taken as worker.
func TestLoggerScopes(t *testing.T) {
	f := newFixture(t)
	rec := f.do("PUT", "/admin/loggers/floe.worker?scope=cluster", `{"level": "DEBUG"}`)
	if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
		t.Fatalf("scope=cluster: %d %s, want 204 and no body", rec.Code, rec.Body)
	}
	var lvl map[string]any
	f.want(f.do("GET", "/admin/loggers/floe.worker", nil), http.StatusOK, &lvl)
	if lvl["level"] != "DEBUG" {
		t.Errorf("after scope=cluster the level is %v, want DEBUG", lvl["level"])
	}
	var affected []string
	f.want(f.do("PUT", "/admin/loggers/floe.worker?scope=galaxy", `{"level": "INFO"}`), http.StatusOK, &affected)
	if len(affected) == 0 || !strings.Contains(f.logs.String(), "invalid log level scope") {
		t.Errorf("unknown scope: affected %v, log %s", affected, f.logs)
	}
}
