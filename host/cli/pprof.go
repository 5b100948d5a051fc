package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// envDebugPprof names the address (host:port) on which a worker serves
// Go's runtime profiles (/debug/pprof/), to find where its CPU or memory
// goes; unset, nothing listens. The profiles name the code and show the
// heap's contents: keep the address on 127.0.0.1.
const envDebugPprof = "FLOE_DEBUG_PPROF"

// serveProfiles starts the profile listener when FLOE_DEBUG_PPROF is set;
// it stops with ctx. A listener that cannot start is logged, not fatal.
func (a *App) serveProfiles(ctx context.Context, log *slog.Logger) {
	addr := a.Getenv(envDebugPprof)
	if addr == "" {
		return
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("cannot serve the runtime profiles", "env", envDebugPprof, "address", addr, "error", err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving the runtime profiles", "url", "http://"+l.Addr().String()+"/debug/pprof/", "env", envDebugPprof)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the runtime profiles' listener stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
}
