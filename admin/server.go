package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config is what the admin server serves.
type Config struct {
	// Stats is the RESP server's counters (protocol.Server.Stats, a stats.Snapshot).
	Stats StatsSource
	// Health is the backend's watched readiness.
	Health *Health
	// StoreMetrics is the store's own metrics (backend.Info.Metrics:
	// pebble's disk usage, Redis's reloads, expired records swept), or nil.
	StoreMetrics prometheus.Collector
	// MaxConns bounds the connections served at once (--admin-max-clients);
	// past it new ones wait to be accepted. 0: no bound.
	MaxConns int
	// Live, when set, is what /healthz asks: whether the RESP server's
	// event loops run (protocol.Server.Alive), within liveWithin. Without
	// it /healthz answers 200 while net/http does.
	Live   func(ctx context.Context) error
	Logger *slog.Logger
}

// liveWithin bounds /healthz's question to the event loops: under a
// kubelet probe's default timeout (1 s), and long enough for a loop's
// busiest round (a serve is bounded: maxServe, backlogAt).
const liveWithin = 800 * time.Millisecond

// Server is the HTTP server of --admin-listen.
type Server struct {
	http     *http.Server
	reg      *prometheus.Registry
	maxConns int
}

// New returns the admin server; Serve serves it.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	reg := NewRegistry(cfg.Stats, cfg.Health, cfg.StoreMetrics)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		MaxRequestsInFlight: 4,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if cfg.Live != nil {
			ctx, cancel := context.WithTimeout(r.Context(), liveWithin)
			defer cancel()
			if err := cfg.Live(ctx); err != nil {
				text(w, http.StatusServiceUnavailable, "not live: "+oneLine(err.Error()))
				return
			}
		}
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ok, why := cfg.Health.Ready(); !ok {
			text(w, http.StatusServiceUnavailable, why)
			return
		}
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics", "/healthz", "/readyz":
			w.Header().Set("Allow", "GET, HEAD")
			text(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		text(w, http.StatusNotFound, "not found: the admin port serves GET /metrics, /healthz and /readyz")
	})
	return &Server{reg: reg, maxConns: cfg.MaxConns, http: &http.Server{
		Handler: mux,
		// Probes and scrapes are small: bound what a client may hold. A
		// connection that sends nothing is closed after ReadHeaderTimeout,
		// an idle kept-alive one after IdleTimeout, either sooner when a
		// new connection needs its place (places).
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}}
}

func text(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// Serve serves HTTP on ln until Shutdown; it then returns nil.
func (s *Server) Serve(ln net.Listener) error {
	if s.maxConns > 0 {
		// Past the cap a new connection takes the place of one that is
		// not serving a request (places), or Accept waits for one to
		// close: those dialled meanwhile wait in the kernel's accept
		// queue, which takes no descriptor of the process. So idle
		// probes, however many, cannot take the descriptors the RESP
		// port's clients need (issue 23, N4), nor lock out a fresh probe
		// (issue 30).
		p := newPlaces(ln, s.maxConns)
		s.http.ConnState = p.track
		ln = p
	}
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the server, letting requests under way finish until ctx
// ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }
