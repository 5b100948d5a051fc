package rest

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floehq/floe/host/worker"
)

// Options configures a [Server].
type Options struct {
	// Worker answers every connector and plugin request. Required.
	Worker worker.API
	// Metrics is served on GET /metrics; nil leaves /metrics out (404).
	Metrics prometheus.Gatherer
	// Loggers backs /admin/loggers; nil serves a set of its own that
	// writes nowhere.
	Loggers *Loggers
	// Logger receives request logs (at debug) and level changes.
	Logger *slog.Logger
	// Auth, when it holds credentials, makes every request but GET
	// /health present one (HTTP Basic or a bearer token); nil lets all
	// through.
	Auth *Auth
	// Router, in distributed mode, sends each write to the worker that
	// must apply it (the leader, or the connector's worker); nil answers
	// everything here.
	Router Router
}

// Server is floe's REST API, an [http.Handler]. It holds no state of its
// own: every request goes to the worker, so it is safe for concurrent use.
type Server struct {
	w       worker.API
	loggers *Loggers
	logger  *slog.Logger
	mux     *http.ServeMux
	// cop refuses cross-origin writes (see guard).
	cop    *http.CrossOriginProtection
	auth   *Auth
	router Router
}

// New returns the API over opts.Worker.
func New(opts Options) *Server {
	s := &Server{w: opts.Worker, loggers: opts.Loggers, logger: opts.Logger, mux: http.NewServeMux(), cop: http.NewCrossOriginProtection(), auth: opts.Auth, router: opts.Router}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.loggers == nil {
		s.loggers = NewLoggers(slog.DiscardHandler, slog.LevelInfo)
	}
	s.routes(opts.Metrics)
	return s
}

func (s *Server) routes(metrics prometheus.Gatherer) {
	m := s.mux
	m.HandleFunc("GET /{$}", s.serverInfo)
	m.HandleFunc("GET /health", s.health)

	for _, p := range []string{"/connectors", "/connectors/{$}"} {
		m.HandleFunc("GET "+p, s.listConnectors)
		m.HandleFunc("POST "+p, s.createConnector)
	}
	m.HandleFunc("GET /connectors/{c}", s.getConnector)
	m.HandleFunc("DELETE /connectors/{c}", s.deleteConnector)
	m.HandleFunc("GET /connectors/{c}/config", s.getConfig)
	m.HandleFunc("PUT /connectors/{c}/config", s.putConfig)
	m.HandleFunc("PATCH /connectors/{c}/config", s.patchConfig)
	m.HandleFunc("GET /connectors/{c}/status", s.getStatus)
	m.HandleFunc("POST /connectors/{c}/restart", s.restartConnector)
	m.HandleFunc("PUT /connectors/{c}/pause", s.pause)
	m.HandleFunc("PUT /connectors/{c}/resume", s.resume)
	m.HandleFunc("PUT /connectors/{c}/stop", s.stop)
	m.HandleFunc("GET /connectors/{c}/tasks", s.getTasks)
	m.HandleFunc("GET /connectors/{c}/tasks/{t}/status", s.getTaskStatus)
	m.HandleFunc("POST /connectors/{c}/tasks/{t}/restart", s.restartTask)
	m.HandleFunc("GET /connectors/{c}/offsets", s.getOffsets)
	m.HandleFunc("PATCH /connectors/{c}/offsets", s.alterOffsets)
	m.HandleFunc("DELETE /connectors/{c}/offsets", s.resetOffsets)
	m.HandleFunc("GET /connectors/{c}/topics", s.getTopics)
	m.HandleFunc("PUT /connectors/{c}/topics/reset", s.resetTopics)
	m.HandleFunc("GET /connectors/{c}/tables", s.getTables)

	for _, p := range []string{"/connector-plugins", "/connector-plugins/{$}"} {
		m.HandleFunc("GET "+p, s.listPlugins)
	}
	m.HandleFunc("GET /connector-plugins/{p}/config", s.pluginConfig)
	m.HandleFunc("PUT /connector-plugins/{p}/config/validate", s.validate)

	for _, p := range []string{"/admin/loggers", "/admin/loggers/{$}"} {
		m.HandleFunc("GET "+p, s.listLoggers)
		m.HandleFunc("PUT "+p, s.setLogger)
	}
	m.HandleFunc("GET /admin/loggers/{name}", s.getLogger)
	m.HandleFunc("PUT /admin/loggers/{name}", s.setLogger)

	if metrics != nil {
		m.Handle("GET /metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		}))
	}
}

// ServeHTTP routes a request. Unknown paths and wrong methods answer
// Connect's JSON error (404, 405 with Allow) instead of net/http's text;
// a handler panic answers 500 and is logged. Cross-origin writes, a
// foreign Host on a loopback listener and non-JSON write bodies are
// refused first (guard).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			s.logger.Error("REST handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
			if !rec.wrote {
				writeError(rec, errorf(http.StatusInternalServerError, "internal error: %v", p))
			}
		}
		s.logger.Debug("REST request", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery,
			"status", rec.status, "duration", time.Since(start), "remote", r.RemoteAddr)
	}()

	if !s.guard(rec, r) || !s.authenticate(rec, r) {
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.notRouted(rec, r)
		return
	}
	if s.forward(rec, r) {
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// notRouted answers a request no pattern matched: the mux's own answer
// (404, or 405 with an Allow header) rewritten as Connect's JSON error.
func (s *Server) notRouted(w http.ResponseWriter, r *http.Request) {
	h, _ := s.mux.Handler(r)
	probe := &probeWriter{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(probe, r)
	switch probe.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeError(w, errorf(http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed: %s %s accepts %s", r.Method, r.URL.Path, probe.header.Get("Allow")))
	case http.StatusNotFound:
		writeError(w, errorf(http.StatusNotFound, "HTTP 404 Not Found: no endpoint %s; see GET / and the Kafka Connect REST API paths", r.URL.Path))
	default: // a redirect or another answer of the mux: pass it on
		for k, v := range probe.header {
			w.Header()[k] = v
		}
		w.WriteHeader(probe.status)
		_, _ = w.Write(probe.body)
	}
}

// ConnectVersion is the Kafka Connect version whose REST API floe
// implements. GET / reports it as "version", where Connect reports its
// Kafka version, because Connect's clients parse that field as a Kafka
// X.Y.Z version and pick features by it (kcctl fails on anything else).
const ConnectVersion = "4.1.0"

// VersionHeader carries floe's own version on GET /: Connect's ServerInfo
// class refuses unknown fields, so it cannot go in the body.
const VersionHeader = "X-Floe-Version"

// serverInfo answers GET / as Connect does: version is [ConnectVersion],
// commit floe's commit, and floe's own version is in [VersionHeader].
func (s *Server) serverInfo(w http.ResponseWriter, r *http.Request) {
	info := s.w.ServerInfo(r.Context())
	w.Header().Set(VersionHeader, info.Version)
	info.Version = ConnectVersion
	writeJSON(w, http.StatusOK, info)
}

// Health is the body of GET /health (Connect's KIP-1017).
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// health answers GET /health: 200 once the worker finished starting, 503
// before.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if err := s.w.Ready(r.Context()); err != nil {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, Health{Status: "starting", Message: fmt.Sprintf("Worker is still starting up: %v", err)})
		return
	}
	writeJSON(w, http.StatusOK, Health{Status: "healthy", Message: "Worker has completed startup and is ready to handle requests."})
}

// statusWriter remembers the status a handler answered, for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (promhttp
// flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// probeWriter captures what the mux would answer.
type probeWriter struct {
	header http.Header
	status int
	body   []byte
}

func (p *probeWriter) Header() http.Header         { return p.header }
func (p *probeWriter) WriteHeader(code int)        { p.status = code }
func (p *probeWriter) Write(b []byte) (int, error) { p.body = append(p.body, b...); return len(b), nil }
