package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler returns forecastd's HTTP endpoints:
//
//	GET /metrics    the registry in the Prometheus exposition formats
//	                (text, OpenMetrics, protobuf, as the scraper asks)
//	GET /-/healthy  200 "forecastd is healthy." while the process serves
//	GET /-/ready    200 "forecastd is ready." when Config.Ready says so,
//	                else 503 "forecastd is not ready: <reason>"
//
// HEAD is served as GET; other methods get 405.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// A failing collector leaves its metrics out; the rest is served.
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}))
	mux.HandleFunc("GET /-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "forecastd is healthy.\n")
	})
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if m.ready != nil {
			if ok, reason := m.ready(); !ok {
				if reason == "" {
					reason = "not ready"
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "forecastd is not ready: %s\n", reason)
				return
			}
		}
		io.WriteString(w, "forecastd is ready.\n")
	})
	return mux
}

// ErrServerStarted is returned by Start on a Server already started.
var ErrServerStarted = errors.New("telemetry: server already started")

// Server serves a handler over HTTP from one goroutine, started by Start
// and stopped by Close.
type Server struct {
	h   http.Handler
	log *slog.Logger

	mu       sync.Mutex
	srv      *http.Server
	addr     net.Addr
	done     chan struct{} // closed when Serve has returned
	serveErr error         // Serve's error, other than ErrServerClosed; read after done
	closing  bool          // no handler may start: Close waits for handlers
	handlers sync.WaitGroup
}

// NewServer returns a Server of h (usually Metrics.Handler). The net/http
// server's own errors (a failed TLS handshake, a panicking handler) go to
// logger at Warn, with component=http; nil discards them.
func NewServer(h http.Handler, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{h: h, log: logger.With("component", "http")}
}

// Start listens on listen (host:port; port 0 picks a free one, see Addr)
// and serves in a new goroutine. It returns the listen error, or
// ErrServerStarted if called twice.
func (s *Server) Start(listen string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return ErrServerStarted
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("telemetry: listen: %w", err)
	}
	s.addr = ln.Addr()
	s.done = make(chan struct{})
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	go func(srv *http.Server) {
		defer close(s.done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}(s.srv)
	return nil
}

// serveHTTP counts the handlers running, for Close.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closing { // a request read as Close cut its connection
		s.mu.Unlock()
		http.Error(w, "forecastd is shutting down", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	s.h.ServeHTTP(w, r)
}

// Addr returns the address listened on, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Close stops the server: it stops listening, lets the requests in
// progress finish until ctx is done, then closes every connection. It
// returns after the serving goroutine and every handler have returned:
// nil, ctx's error if requests were cut short, or the error that stopped
// serving. Closing a Server never started, or closed, does nothing.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		srv.Close() // cut the connections still active
		err = fmt.Errorf("telemetry: close: %w", err)
	}
	<-done
	// Handlers running end once their (non-blocking) getters return, or
	// their connection fails; none starts from now on.
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.handlers.Wait()
	return errors.Join(err, s.serveErr)
}
