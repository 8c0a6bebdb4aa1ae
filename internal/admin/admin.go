// Package admin is the operator's side of the proxy: the admin views
// (SHOW BACKENDS, SHOW SESSIONS, SHOW QUERY DIGESTS, ...) and actions
// (SET BACKEND, KILL SESSION, RELOAD CONFIG) of the admin SQL port
// (sql.go, answered through frontend's local-answer mode), and the HTTP
// endpoint: Prometheus /metrics, /debug/pprof, the /healthz and /readyz
// probes and the views as JSON under /api/. Both run on listeners of their
// own so neither they nor query traffic wait on the other.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the admin HTTP server.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// ReadyFunc reports whether the proxy can serve writes now and, when it
// cannot, why (plain text, one line per problem). It is called per /readyz
// request, so it must be cheap and safe to call concurrently.
type ReadyFunc func() (ready bool, why string)

// Listen opens the admin listener at addr. ready answers /readyz; nil means
// always ready. src serves the views under /api/ and the status page at /
// (status.go); nil: none.
func Listen(addr string, reg *prometheus.Registry, ready ReadyFunc, src Source, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listen on %s: %w", addr, err)
	}
	return ListenOn(ln, reg, ready, src, log), nil
}

// ListenOn is Listen on a listener opened already (one a live upgrade
// handed over).
func ListenOn(ln net.Listener, reg *prometheus.Registry, ready ReadyFunc, src Source, log *slog.Logger) *Server {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", readyz(ready))
	if src != nil {
		apiRoutes(mux, src)
		statusRoutes(mux, src)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	return &Server{ln: ln, srv: srv}
}

// healthz answers 200 while the process serves HTTP at all: a liveness
// probe, which says nothing about the backends (restarting the proxy would
// not bring a database back).
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

// readyz answers 200 "ready" when ready says so, else 503 with the reasons,
// so a load balancer or orchestrator sends clients elsewhere while no server
// takes writes.
func readyz(ready ReadyFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if ready == nil {
			fmt.Fprintln(w, "ready")
			return
		}
		ok, why := ready()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready")
			fmt.Fprint(w, why)
			return
		}
		fmt.Fprintln(w, "ready")
	}
}

// Listener is the server's listener.
func (s *Server) Listener() net.Listener { return s.ln }

// Addr returns the listening address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until Close.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin http: %w", err)
	}
	return nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}
