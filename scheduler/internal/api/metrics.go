package api

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newRequestCounter is jetjob_api_requests_total{method,route,code}. The
// route is the pattern the request matched ("/api/v1/jobs/{id}"), never the
// raw path: ids and probes of unknown paths must not grow the label set
// (unknown API paths all count as "/api/").
func newRequestCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jetjob_api_requests_total",
		Help: "HTTP requests served by the API, by method, route pattern and status code.",
	}, []string{"method", "route", "code"})
}

// Collector is the API's request counter, for the scheduler's registry.
func (s *Server) Collector() prometheus.Collector { return s.requests }

// instrument counts h's requests under pattern's path ("GET /healthz" →
// "/healthz"). Every route of the table is mounted through it, so a new
// endpoint is counted without further work.
func (s *Server) instrument(pattern string, h http.Handler) http.Handler {
	route := pattern
	if _, path, ok := strings.Cut(pattern, " "); ok {
		route = path
	}
	return promhttp.InstrumentHandlerCounter(s.requests.MustCurryWith(prometheus.Labels{"route": route}), h)
}
