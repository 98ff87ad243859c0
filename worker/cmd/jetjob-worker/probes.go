package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/scrape"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/worker"
)

// DefaultMetricsListen is --metrics-listen's default: on, so that a
// deployment gets probes and metrics without configuring them, but on the
// loopback interface, like the scheduler's metrics: they name the group's
// handlers. A pod sets ":9091" (the Kubernetes manifest and the Helm chart
// do) for its probes, and a scrape token (--metrics-token-file) fences
// /metrics there. An empty value turns the server off (e.g. two workers on
// one host without containers).
const DefaultMetricsListen = "127.0.0.1:9091"

// readyCheckTimeout bounds /readyz's consumer lookup: a probe must answer
// within its own timeout (1 s by default on Kubernetes) however NATS is.
const readyCheckTimeout = 800 * time.Millisecond

// probes is the worker's HTTP server: /metrics (its registry), /healthz
// (alive, and its build) and /readyz (able to take triggers). It listens
// before NATS is reached, so a liveness probe passes while the worker
// waits for NATS, and readiness says what it waits for.
type probes struct {
	reg   *prometheus.Registry
	nc    *nats.Conn
	group string
	// js is set once JetStream answered (the worker is being started);
	// stopping once the stop began.
	js       atomic.Pointer[jetstream.JetStream]
	stopping atomic.Bool
	srv      *http.Server
	done     chan error
	// addr is where it listens: a target the http handler never reaches.
	addr netip.AddrPort
	// worker is set once the worker is built: its loops that are down
	// make it not ready.
	worker atomic.Pointer[worker.Worker]
}

// startProbes listens on addr and serves until stop; /metrics needs token
// when one is given (package internal/scrape), the probes never do (the
// kubelet sends none). A bad or taken address is an error: an operator who
// asked for metrics must not run without them unnoticed.
func startProbes(addr, token string, nc *nats.Conn, group string, log *zap.Logger) (*probes, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen on %s: %w", addr, err)
	}
	p := &probes{reg: prometheus.NewRegistry(), nc: nc, group: group, done: make(chan error, 1),
		addr: ln.Addr().(*net.TCPAddr).AddrPort()}
	p.reg.MustRegister(version.Collector(), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", scrape.Handler(p.reg, token))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, version.OK()) })
	mux.HandleFunc("GET /readyz", p.readyz)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { p.done <- p.srv.Serve(ln) }()
	log.Info("metrics and probes listening", zap.String("addr", ln.Addr().String()), zap.Bool("token", token != ""))
	if w := scrape.Warning(addr, token); w != "" {
		log.Warn(w)
	}
	return p, nil
}

// stop shuts the server down gracefully: scrapes and probes in progress
// are answered, for at most 5 s.
func (p *probes) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if serr := <-p.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	return nil
}

func (p *probes) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyCheckTimeout)
	defer cancel()
	if err := p.notReady(ctx); err != nil {
		out := readiness{Status: "not ready", Reason: err.Error()}
		if de := (*supervise.DownError)(nil); errors.As(err, &de) {
			out.Down = de.Down
		}
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	}
	writeJSON(w, http.StatusOK, readiness{Status: "ready"})
}

// readiness is /readyz's answer: the status, why it is not ready, and
// which of the worker's loops are down when that is why (the scheduler's
// /readyz has the same shape).
type readiness struct {
	Status string           `json:"status"`
	Reason string           `json:"reason,omitempty"`
	Down   []supervise.Down `json:"down,omitempty"`
}

// notReady says why the worker cannot take triggers now: stopping, NATS
// not connected, JetStream not reached yet, the group's shared consumer
// missing (deleted, or never created: the worker has not started), or a
// loop of the worker down (worker.Ready).
func (p *probes) notReady(ctx context.Context) error {
	if p.stopping.Load() {
		return errors.New("stopping")
	}
	if w := p.worker.Load(); w != nil {
		if err := w.Ready(); err != nil {
			return err
		}
	}
	if !p.nc.IsConnected() {
		return fmt.Errorf("NATS not connected (%s)", p.nc.Status())
	}
	js := p.js.Load()
	if js == nil {
		return errors.New("waiting for NATS JetStream")
	}
	name := stream.AnyConsumer(p.group)
	if _, err := (*js).Consumer(ctx, stream.Triggers, name); err != nil {
		return fmt.Errorf("consumer %s of %s: %w", name, stream.Triggers, err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
