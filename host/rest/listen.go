package rest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/floehq/floe/host/worker"
)

// shutdownGrace is how long in-flight requests get once ctx ends.
const shutdownGrace = 5 * time.Second

// Listen opens one listener per entry of Connect's listeners setting
// ("http://127.0.0.1:8083", "https://:8443"). An empty host listens on
// every interface; port 0 picks a free port. https listeners serve TLS
// with tlsConfig ([LoadTLS]); without one they are refused.
func Listen(listeners []string, tlsConfig *tls.Config) ([]net.Listener, error) {
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
		secure := strings.EqualFold(u.Scheme, "https")
		if !secure && !strings.EqualFold(u.Scheme, "http") {
			return fail(fmt.Errorf("rest: listener %q: scheme %q is not supported: use http:// or https://", raw, u.Scheme))
		}
		if secure && tlsConfig == nil {
			return fail(fmt.Errorf("rest: listener %q is https but no certificate is set: set %s and %s in the worker config", raw, worker.KeyTLSCert, worker.KeyTLSKey))
		}
		l, err := net.Listen("tcp", u.Host)
		if err != nil {
			return fail(fmt.Errorf("rest: listener %s: %w (is another worker or Kafka Connect using the port? change \"listeners\" in the worker config)", raw, err))
		}
		if secure {
			l = &tlsListener{Listener: tls.NewListener(l, tlsConfig)}
		}
		out = append(out, l)
	}
	return out, nil
}

// LoadTLS reads the PEM certificate (chain) and private key of the https
// listeners. TLS 1.2 is the least version served.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("rest: https needs both %s and %s", worker.KeyTLSCert, worker.KeyTLSKey)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("rest: %s %s and %s %s: %w", worker.KeyTLSCert, certFile, worker.KeyTLSKey, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// tlsListener marks a listener that serves TLS, for [URL].
type tlsListener struct{ net.Listener }

// URL is the URL a listener answers on, for messages.
func URL(l net.Listener) string {
	addr := l.Addr().String()
	if host, port, err := net.SplitHostPort(addr); err == nil && (host == "::" || host == "0.0.0.0") {
		addr = net.JoinHostPort("localhost", port)
	}
	if _, ok := l.(*tlsListener); ok {
		return "https://" + addr
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
