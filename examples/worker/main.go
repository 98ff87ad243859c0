// Command worker is a jetjob worker to copy into your own service: it
// connects to NATS, registers two handlers, serves its Prometheus metrics
// on /metrics and stops gracefully on SIGTERM or SIGINT.
//
//	go run ./examples/worker -nats nats://127.0.0.1:4222 -group example -trigger-keys <the schedulers' public key>
//
// Then create jobs of group example with handler report or sleep (README.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/worker"
)

// config is what the flags (or their environment variables) set.
type config struct {
	natsURL     string
	group       string
	metricsAddr string
	// triggerKeys are the schedulers' trigger public keys, base64,
	// comma-separated (two while they rotate their key): the worker runs
	// only the triggers they signed.
	triggerKeys string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.natsURL, "nats", envOr("NATS_URL", nats.DefaultURL), "NATS server URL (env NATS_URL)")
	flag.StringVar(&cfg.group, "group", envOr("JETJOB_GROUP", "example"), "job group this worker serves (env JETJOB_GROUP)")
	flag.StringVar(&cfg.metricsAddr, "metrics", envOr("METRICS_ADDR", ":9091"), "address of the /metrics endpoint (env METRICS_ADDR)")
	flag.StringVar(&cfg.triggerKeys, "trigger-keys", os.Getenv("JETJOB_TRIGGER_PUBLIC_KEYS"),
		"the schedulers' trigger public keys, base64, comma-separated; triggers they did not sign are refused (env JETJOB_TRIGGER_PUBLIC_KEYS)")
	flag.Parse()

	log, err := zap.NewProduction()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() { _ = log.Sync() }()
	// SIGTERM (Kubernetes, systemd) or Ctrl-C: stop taking triggers, let
	// running handlers finish (worker.Config.ShutdownGrace), then return.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log, nil); err != nil {
		log.Fatal("worker failed", zap.Error(err))
	}
}

// run serves until ctx is cancelled; ready, if not nil, is told the
// address /metrics listens on.
func run(ctx context.Context, cfg config, log *zap.Logger, ready func(metricsAddr string)) error {
	// Reconnect forever: the worker waits out NATS outages.
	nc, err := nats.Connect(cfg.natsURL, nats.Name("jetjob example worker"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	defer nc.Close() // after Run: the worker never closes the connection itself

	// Only triggers the schedulers signed run: anyone else allowed to
	// publish on the group's trigger subjects could otherwise run these
	// handlers with params of their choice.
	pubs, err := trigsign.ParsePublicKeys(cfg.triggerKeys)
	if err != nil {
		return err
	}
	if len(pubs) == 0 {
		return errors.New("no trigger public keys: pass the schedulers' (-trigger-keys, JETJOB_TRIGGER_PUBLIC_KEYS)")
	}
	keys, err := trigsign.NewVerifier(pubs...)
	if err != nil {
		return err
	}
	// The worker's series (docs/metrics.md) go into the service's registry.
	reg := prometheus.NewRegistry()
	w, err := worker.New(worker.Config{NATS: nc, Group: cfg.group, Logger: log, TriggerKeys: keys, Metrics: reg})
	if err != nil {
		return err
	}
	w.Handle("report", report)
	w.Handle("sleep", sleep)

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", cfg.metricsAddr)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if ready != nil {
		ready(ln.Addr().String())
	}
	return w.Run(ctx) // until ctx is cancelled, then a graceful stop
}

// report pretends to build a report in steps (params: how many, default
// 3) and logs its progress through job.Logger: each line shows in the
// run's log (jetjob runs logs <id>, the console) as well as in this
// process's log.
func report(ctx context.Context, job *worker.Job) error {
	steps := 3
	if job.Params != "" {
		n, err := strconv.Atoi(job.Params)
		if err != nil || n < 1 {
			return fmt.Errorf("params %q: want a number of steps", job.Params) // the run ends FAILED with this text
		}
		steps = n
	}
	for i := 1; i <= steps; i++ {
		if err := ctx.Err(); err != nil {
			return err // timed out, killed or the worker stops
		}
		job.Logger.Info("report step done", zap.Int("step", i), zap.Int("of", steps), zap.Int("attempt", job.Attempt))
	}
	return nil
}

// sleep waits for the duration in params (default 10s) and honours its
// context: a timeout, a kill or the worker's stop cancels it, and it
// returns at once, so the run ends TIMED_OUT or CANCELLED without being
// abandoned.
func sleep(ctx context.Context, job *worker.Job) error {
	d := 10 * time.Second
	if job.Params != "" {
		var err error
		if d, err = time.ParseDuration(job.Params); err != nil {
			return fmt.Errorf("params %q: want a duration such as 30s", job.Params)
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err() // the worker reports why: timeout, kill or stop
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
