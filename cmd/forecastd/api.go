package main

import (
	"net/http"

	"github.com/forecastd/forecastd/internal/readapi" // registers [output.api]
)

// routes is a sink that serves HTTP endpoints of its own beside /metrics
// (readapi.Store: /api/v1/series).
type routes interface{ Routes(mux *http.ServeMux) }

var _ routes = (*readapi.Store)(nil)

// httpHandler is the daemon's HTTP handler: the metrics' endpoints, and
// those of the sinks that serve some.
func (d *daemon) httpHandler() http.Handler {
	h := d.metrics.Handler()
	mux := http.NewServeMux()
	n := 0
	for _, s := range d.sinks {
		if r, ok := s.Sink.(routes); ok {
			r.Routes(mux)
			n++
		}
	}
	if n == 0 {
		return h
	}
	mux.Handle("/", h)
	return mux
}
