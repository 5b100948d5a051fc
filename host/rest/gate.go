package rest

import (
	"net/http"
	"sync/atomic"
)

// Gate answers on the listeners while the worker starts, so that a
// client never waits on a bound port nobody serves: until [Gate.Open],
// GET /health answers 503 {"status": "starting"} and every other request
// 503 with Connect's JSON error and Retry-After, as Connect does until
// its herder has started (KIP-1017). Open hands every later request to
// the API. A Gate is safe for concurrent use.
type Gate struct {
	api atomic.Pointer[http.Handler]
}

// NewGate returns a closed gate: it answers 503 until Open.
func NewGate() *Gate { return &Gate{} }

// Open hands every request from now on to api (the [Server]). Call it
// once the worker has loaded its stored connectors.
func (g *Gate) Open(api http.Handler) { g.api.Store(&api) }

// ServeHTTP implements [http.Handler].
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if api := g.api.Load(); api != nil {
		(*api).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", "1")
	if r.Method == http.MethodGet && r.URL.Path == "/health" {
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "starting", Message: "Worker is still starting up: it is loading its stored connectors."})
		return
	}
	writeError(w, errorf(http.StatusServiceUnavailable,
		"Request cannot be completed because the worker is still starting up (loading its stored connectors); try again when GET /health answers 200"))
}
