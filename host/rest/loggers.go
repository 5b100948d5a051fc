package rest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Levels below and above slog's four, with log4j's names, so that
// Connect's /admin/loggers clients can use TRACE, FATAL and OFF.
const (
	LevelTrace = slog.LevelDebug - 4
	LevelFatal = slog.LevelError + 4
	LevelOff   = slog.Level(1 << 30)
)

// RootLogger names the ancestor of every logger, as in log4j.
const RootLogger = "root"

// Loggers keeps floe's log levels: one [slog.LevelVar] per named logger.
// Names are dotted like log4j's ("floe.worker", "floe.rest"); a name's
// ancestors are its dotted prefixes, and "root" is everyone's ancestor.
// Setting a level sets it on the name and every descendant, as Connect's
// PUT /admin/loggers/{name} does. Safe for concurrent use.
type Loggers struct {
	out slog.Handler

	mu      sync.Mutex
	loggers map[string]*namedLevel
	now     func() time.Time
}

type namedLevel struct {
	level    slog.LevelVar
	modified time.Time // zero until set through SetLevel
}

// LoggerLevel is Connect's description of one logger's level.
type LoggerLevel struct {
	Level string `json:"level"`
	// LastModified is when the level was last set through the API, in
	// Unix milliseconds, or null.
	LastModified *int64 `json:"last_modified"`
}

// NewLoggers returns loggers writing to out, with root at level. out must
// accept every level (build it with HandlerOptions.Level = LevelTrace):
// the per-logger levels do the filtering.
func NewLoggers(out slog.Handler, root slog.Level) *Loggers {
	l := &Loggers{out: out, loggers: map[string]*namedLevel{}, now: time.Now}
	r := &namedLevel{}
	r.level.Set(root)
	l.loggers[RootLogger] = r
	return l
}

// Logger returns the logger called name; its records carry logger=name.
// A name seen for the first time starts at its nearest ancestor's level.
func (l *Loggers) Logger(name string) *slog.Logger {
	if name == "" {
		name = RootLogger
	}
	l.mu.Lock()
	e := l.entry(name)
	l.mu.Unlock()
	h := l.out
	if name != RootLogger {
		h = h.WithAttrs([]slog.Attr{slog.String("logger", name)})
	}
	return slog.New(&levelHandler{out: h, level: &e.level})
}

// entry returns name's level, creating it from its ancestor. l.mu is held.
func (l *Loggers) entry(name string) *namedLevel {
	if e, ok := l.loggers[name]; ok {
		return e
	}
	e := &namedLevel{}
	e.level.Set(l.ancestor(name).level.Level())
	l.loggers[name] = e
	return e
}

// ancestor returns the nearest existing ancestor of name. l.mu is held.
func (l *Loggers) ancestor(name string) *namedLevel {
	for {
		i := strings.LastIndexByte(name, '.')
		if i < 0 {
			return l.loggers[RootLogger]
		}
		name = name[:i]
		if e, ok := l.loggers[name]; ok {
			return e
		}
	}
}

// Levels returns every known logger's level.
func (l *Loggers) Levels() map[string]LoggerLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]LoggerLevel, len(l.loggers))
	for name, e := range l.loggers {
		out[name] = e.describe()
	}
	return out
}

// Level returns the level of a known logger.
func (l *Loggers) Level(name string) (LoggerLevel, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.loggers[name]
	if !ok {
		return LoggerLevel{}, false
	}
	return e.describe(), true
}

// SetLevel sets level on name and all its descendants (every logger, for
// "root") and returns the names it changed, sorted. An unknown name is
// created, so that loggers made later under it start at that level.
func (l *Loggers) SetLevel(name string, level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.EqualFold(name, RootLogger) {
		name = RootLogger
	}
	l.entry(name)
	now := l.now()
	var affected []string
	for n, e := range l.loggers {
		if name == RootLogger || n == name || strings.HasPrefix(n, name+".") {
			e.level.Set(level)
			e.modified = now
			affected = append(affected, n)
		}
	}
	slices.Sort(affected)
	return affected
}

func (e *namedLevel) describe() LoggerLevel {
	ll := LoggerLevel{Level: LevelName(e.level.Level())}
	if !e.modified.IsZero() {
		ms := e.modified.UnixMilli()
		ll.LastModified = &ms
	}
	return ll
}

var levelNames = map[string]slog.Level{
	"TRACE": LevelTrace, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo,
	"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": LevelFatal, "OFF": LevelOff,
}

// ParseLevel reads a log4j level name (TRACE, DEBUG, INFO, WARN, ERROR,
// FATAL, OFF), in any case; WARNING is taken for WARN.
func ParseLevel(s string) (slog.Level, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if u == "WARNING" {
		u = "WARN"
	}
	if lv, ok := levelNames[u]; ok {
		return lv, nil
	}
	return 0, fmt.Errorf("invalid log level '%s': use one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF", s)
}

// LevelName is the log4j name of level.
func LevelName(level slog.Level) string {
	best, name := slog.Level(-1<<31), "TRACE"
	for n, lv := range levelNames {
		if lv <= level && lv > best {
			best, name = lv, n
		}
	}
	return name
}

// levelHandler passes records at or above its logger's level to out.
type levelHandler struct {
	out   slog.Handler
	level *slog.LevelVar
}

func (h *levelHandler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= h.level.Level() && h.out.Enabled(ctx, lv)
}

func (h *levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.out.Handle(ctx, r)
}

func (h *levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &levelHandler{out: h.out.WithAttrs(attrs), level: h.level}
}

func (h *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{out: h.out.WithGroup(name), level: h.level}
}

// listLoggers answers GET /admin/loggers.
func (s *Server) listLoggers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.loggers.Levels())
}

// getLogger answers GET /admin/loggers/{name}.
func (s *Server) getLogger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	lv, ok := s.loggers.Level(name)
	if !ok {
		known := slices.Sorted(maps.Keys(s.loggers.Levels()))
		writeError(w, errorf(http.StatusNotFound, "Logger %s not found. Known loggers: %s", name, strings.Join(known, ", ")))
		return
	}
	writeJSON(w, http.StatusOK, lv)
}

// setLogger answers PUT /admin/loggers/{name} (and PUT /admin/loggers,
// for root): 200 with the affected logger names. As in Connect, a missing
// level is a 400 and an unknown level name a 404.
func (s *Server) setLogger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" {
		name = RootLogger
	}
	var body map[string]any
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	raw, ok := body["level"]
	if !ok || raw == nil {
		writeError(w, errorf(http.StatusBadRequest, `Desired 'level' parameter was not specified in request: send {"level": "DEBUG"}`))
		return
	}
	str, _ := raw.(string)
	level, err := ParseLevel(str)
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, "%v", err))
		return
	}
	// As Connect (KIP-976): scope=cluster applies the level on every
	// worker of the cluster and answers 204 (a standalone worker is the
	// whole cluster; in distributed mode every other worker is asked,
	// clusterLevel); scope=worker, or none, answers the affected
	// loggers; any other scope is logged and taken as worker.
	scope := r.URL.Query().Get("scope")
	cluster := strings.EqualFold(scope, "cluster")
	if scope != "" && !cluster && !strings.EqualFold(scope, "worker") {
		s.logger.Warn("invalid log level scope in a request; using worker (Connect's scopes are worker and cluster)", "scope", scope)
	}
	if cluster && s.router != nil && r.Header.Get(HeaderForwarded) == "" {
		if _, ok := s.router.(PeerRouter); !ok {
			writeError(w, errorf(http.StatusNotImplemented, "scope=cluster is not supported here: this worker cannot list the cluster's workers; set the level on each worker with scope=worker"))
			return
		}
	}
	affected := s.loggers.SetLevel(name, level)
	s.logger.Info("log level changed", "name", name, "level", LevelName(level), "scope", map[bool]string{true: "cluster", false: "worker"}[cluster])
	if cluster {
		if err := s.clusterLevel(r, name, LevelName(level)); err != nil {
			if statusOf(err) == http.StatusConflict {
				w.Header().Set("Retry-After", "1")
			}
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, affected)
}
