package rest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestGate(t *testing.T) {
	g := NewGate()
	do := func(method, path string) (*httptest.ResponseRecorder, map[string]any) {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		var doc map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, path, rec.Body, err)
		}
		return rec, doc
	}
	rec, doc := do("GET", "/health")
	if rec.Code != http.StatusServiceUnavailable || doc["status"] != "starting" || rec.Header().Get("Retry-After") == "" {
		t.Errorf("closed gate: GET /health = %d %v %v", rec.Code, rec.Header(), doc)
	}
	for _, p := range []string{"/connectors", "/connectors/x/status", "/admin/loggers", "/"} {
		rec, doc := do("GET", p)
		if rec.Code != http.StatusServiceUnavailable || doc["error_code"] != float64(503) || rec.Header().Get("Retry-After") == "" ||
			rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("closed gate: GET %s = %d %v %v", p, rec.Code, rec.Header(), doc)
		}
	}
	g.Open(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"path": r.URL.Path})
	}))
	rec, doc = do("GET", "/connectors")
	if rec.Code != http.StatusOK || doc["path"] != "/connectors" {
		t.Errorf("open gate: GET /connectors = %d %v", rec.Code, doc)
	}
}
