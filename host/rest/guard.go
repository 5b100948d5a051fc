package rest

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// guard refuses, before any handler runs, the requests a web page could
// send to the API from a user's browser, and write bodies that are not
// JSON:
//
//   - Cross-origin writes (CSRF): a POST, PUT, PATCH or DELETE whose
//     Sec-Fetch-Site or Origin header says another site sent it answers
//     403 (net/http's CrossOriginProtection). Clients that are not
//     browsers (curl, kcctl, Connect's RestClient) send neither header and
//     pass. floe sends no CORS headers, so no other origin may read an
//     answer either.
//   - DNS rebinding: on a loopback listener, a Host header that is not a
//     loopback name or address answers 403, so a page whose own name was
//     rebound to 127.0.0.1 reaches nothing.
//   - A write with a body that is not application/json answers 415, as
//     Connect's Jersey resources do (a cross-origin text/plain POST, an
//     HTML form).
//
// It returns false when it answered.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	if !loopbackHostAllowed(r) {
		writeError(w, errorf(http.StatusForbidden, "Host %q is not a loopback name, but this listener is on a loopback address: floe refuses the request (a web page whose name points at 127.0.0.1 must not reach the API); use http://localhost or http://127.0.0.1", r.Host))
		return false
	}
	if err := s.cop.Check(r); err != nil {
		writeError(w, errorf(http.StatusForbidden, "cross-origin %s refused: a web page of another site (Origin %q) may not change this worker; floe answers only same-origin and non-browser clients", r.Method, r.Header.Get("Origin")))
		return false
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		if r.ContentLength == 0 {
			return true
		}
		ct := r.Header.Get("Content-Type")
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			writeError(w, errorf(http.StatusUnsupportedMediaType, "HTTP 415 Unsupported Media Type: %s %s sends a body of Content-Type %q; send JSON with Content-Type: application/json", r.Method, r.URL.Path, ct))
			return false
		}
	}
	return true
}

// loopbackHostAllowed reports whether r may be served as far as its Host
// header goes: always, unless it came in on a loopback address and names
// a host that is not loopback.
func loopbackHostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	ta, ok := local.(*net.TCPAddr)
	if !ok || !ta.IP.IsLoopback() {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" || strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
