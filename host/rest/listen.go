package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// shutdownGrace is how long in-flight requests get once ctx ends.
const shutdownGrace = 5 * time.Second

// Listen opens one listener per entry of Connect's listeners setting
// ("http://127.0.0.1:8083", "HTTP://:8083"). An empty host listens on
// every interface; port 0 picks a free port. https is refused: floe's REST
// API has no TLS yet (put a proxy in front).
func Listen(listeners []string) ([]net.Listener, error) {
	if len(listeners) == 0 {
		return nil, fmt.Errorf("rest: no listeners: set \"listeners\" in the worker config, for example \"http://127.0.0.1:8083\"")
	}
	var out []net.Listener
	fail := func(err error) ([]net.Listener, error) {
		for _, l := range out {
			_ = l.Close()
		}
		return nil, err
	}
	for _, raw := range listeners {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Host == "" {
			return fail(fmt.Errorf("rest: listener %q is not a URL like http://127.0.0.1:8083", raw))
		}
		if !strings.EqualFold(u.Scheme, "http") {
			return fail(fmt.Errorf("rest: listener %q: scheme %q is not supported: use http:// (put a TLS proxy in front for https)", raw, u.Scheme))
		}
		l, err := net.Listen("tcp", u.Host)
		if err != nil {
			return fail(fmt.Errorf("rest: listener %s: %w (is another worker or Kafka Connect using the port? change \"listeners\" in the worker config)", raw, err))
		}
		out = append(out, l)
	}
	return out, nil
}

// URL is the http URL a listener answers on, for messages.
func URL(l net.Listener) string {
	addr := l.Addr().String()
	if host, port, err := net.SplitHostPort(addr); err == nil && (host == "::" || host == "0.0.0.0") {
		addr = net.JoinHostPort("localhost", port)
	}
	return "http://" + addr
}

// Serve serves h on every listener until ctx ends, then lets in-flight
// requests finish (at most 5 s) and returns nil. A listener that fails
// stops them all and returns its error. Serve closes the listeners.
func Serve(ctx context.Context, h http.Handler, listeners []net.Listener, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, len(listeners))
	for _, l := range listeners {
		go func() { errc <- srv.Serve(l) }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		logger.Warn("REST API: requests still running at shutdown were cut off", "error", serr)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("rest: serve: %w", err)
	}
	return nil
}
