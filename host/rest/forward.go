package rest

import (
	"net/http"
	"net/http/httputil"
	"net/url"
)

// HeaderForwarded marks a request one worker forwarded to another. A
// worker that receives one answers it itself or with 409: a request
// makes at most one hop, so two workers that disagree on who leads never
// pass it back and forth.
const HeaderForwarded = "X-Floe-Forwarded-By"

// Router tells which worker must answer a request (distributed mode:
// writes go to the leader, restarts to the connector's worker).
type Router interface {
	// Route returns the base URL (scheme://host:port) of the worker that
	// must answer r, or "" when this worker answers it. An error wrapping
	// worker.ErrRebalancing answers 409: nobody can answer it now.
	Route(r *http.Request) (string, error)
	// WorkerID names this worker in the forwarded request's header.
	WorkerID() string
}

// forward sends r to the worker that must answer it and reports whether
// it answered r (forwarded it, or refused it).
func (s *Server) forward(w http.ResponseWriter, r *http.Request) bool {
	if s.router == nil {
		return false
	}
	target, err := s.router.Route(r)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, err)
		return true
	}
	if target == "" {
		return false
	}
	if by := r.Header.Get(HeaderForwarded); by != "" {
		w.Header().Set("Retry-After", "1")
		writeError(w, errorf(http.StatusConflict,
			"worker %s forwarded this request here, but this worker sees %s as the one to answer it: the cluster is rebalancing; try again", by, target))
		return true
	}
	u, err := url.Parse(target)
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "the worker to answer this request has no usable URL %q: %v", target, err))
		return true
	}
	s.logger.Debug("REST request forwarded", "method", r.Method, "path", r.URL.Path, "to", target)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Header.Set(HeaderForwarded, s.router.WorkerID())
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.Header().Set("Retry-After", "1")
			writeError(w, errorf(http.StatusConflict, "forwarding to the worker at %s failed: %v; the cluster may be rebalancing: try again", target, err))
		},
	}
	proxy.ServeHTTP(w, r)
	return true
}
