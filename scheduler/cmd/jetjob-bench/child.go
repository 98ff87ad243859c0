package main

// The hidden subcommands: the orchestrator re-executes its own binary as
// `nats`, `scheduler` and `worker` so that each part is a process of its own
// whose CPU time and memory can be read from /proc. Each prints one line
// "READY <info>" on stdout when it is up and stops cleanly on SIGTERM.

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/gctune"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// beginChild parses a child's command line with the flags every child
// takes (--log-level, --cpuprofile, --cpuprofile-signal) and starts what
// every child runs in: a context that SIGTERM or SIGINT ends, a logger and
// the CPU profiler. stop ends them, the profile first; it may be called
// early (to leave a shutdown out of the profile) and again.
func beginChild(fs *pflag.FlagSet, args []string) (ctx context.Context, log *zap.Logger, stop func(), err error) {
	logLevel := fs.String("log-level", "warn", "zap level")
	var pf profileFlags
	pf.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	log = childLogger(*logLevel)
	prof := pf.begin(ctx, log)
	return ctx, log, func() {
		prof.stop()
		_ = log.Sync()
		cancel()
	}, nil
}

// profiler writes a CPU profile to a file: from start to exit, or, with
// onSignal, from SIGUSR1 to SIGUSR2 (the orchestrator profiles only the
// measured window that way).
type profiler struct {
	mu      sync.Mutex
	path    string
	running bool
	done    bool
	f       *os.File
	log     *zap.Logger
}

func (p *profiler) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" || p.running || p.done {
		return
	}
	f, err := os.Create(p.path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		p.log.Error("cpu profile", zap.Error(err))
		return
	}
	p.f, p.running = f, true
}

func (p *profiler) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	if p.running {
		pprof.StopCPUProfile()
		p.f.Close()
		p.running = false
	}
}

// goroutines writes where every goroutine is (pprof debug=1: grouped by
// stack) next to the CPU profile, CPU profiles do not show waiting, and
// the allocations since the process started (-allocs.pprof: what the GC's
// share of the CPU profile is made of).
func (p *profiler) goroutines() {
	base := strings.TrimSuffix(p.path, ".pprof")
	for _, prof := range []struct{ name, file string }{{"goroutine", "-goroutines.txt"}, {"allocs", "-allocs.pprof"}} {
		f, err := os.Create(base + prof.file)
		if err != nil {
			p.log.Error(prof.name+" profile", zap.Error(err))
			return
		}
		debug := 0
		if prof.name == "goroutine" {
			debug = 1
		}
		_ = pprof.Lookup(prof.name).WriteTo(f, debug)
		f.Close()
	}
}

type profileFlags struct {
	path     string
	onSignal bool
}

func (pf *profileFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&pf.path, "cpuprofile", "", "write a CPU profile to this file (from start to exit)")
	fs.BoolVar(&pf.onSignal, "cpuprofile-signal", false, "profile from SIGUSR1 to SIGUSR2 instead")
}

func (pf *profileFlags) begin(ctx context.Context, log *zap.Logger) *profiler {
	p := &profiler{path: pf.path, log: log}
	if pf.path == "" {
		return p
	}
	if !pf.onSignal {
		p.start()
		return p
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sig:
				if s == syscall.SIGUSR1 {
					p.start()
				} else {
					p.stop()
					p.goroutines()
				}
			}
		}
	}()
	return p
}

func childLogger(level string) *zap.Logger {
	log, err := logging.New("json", level)
	if err != nil {
		return zap.NewNop()
	}
	return log
}

// runNATS is `jetjob-bench nats --port P --dir D`: an embedded NATS server
// with JetStream file storage in D (default settings: fsync every 2 min),
// a node of a cluster with --cluster-port and --routes. It prints "READY
// <client URL> <server version> <monitoring URL>".
func runNATS(args []string) error {
	fs := pflag.NewFlagSet("nats", pflag.ContinueOnError)
	port := fs.Int("port", 0, "client port (0: a free one)")
	dir := fs.String("dir", "", "JetStream store directory")
	monitorPort := fs.Int("monitor-port", -1, "HTTP monitoring port (-1: a free one)")
	name := fs.String("name", "", "server name (a cluster node's own)")
	clusterPort := fs.Int("cluster-port", 0, "route port: a node of the cluster jetjob-bench (0: no cluster)")
	routes := fs.String("routes", "", "the cluster's nats-route:// URLs, comma separated")
	ctx, _, stop, err := beginChild(fs, args)
	if err != nil {
		return err
	}
	defer stop()
	o := natsembed.Options{StoreDir: *dir, Port: *port, Name: *name, MonitorPort: *monitorPort}
	if *clusterPort > 0 {
		o.Cluster = &natsembed.ClusterOptions{Name: "jetjob-bench", Port: *clusterPort, Routes: strings.Split(*routes, ",")}
	}
	s, err := natsembed.Start(o)
	if err != nil {
		return err
	}
	fmt.Printf("READY %s %s %s\n", s.ClientURL(), server.VERSION, s.MonitorURL())
	<-ctx.Done()
	stop()
	s.Shutdown()
	return nil
}

// runScheduler is `jetjob-bench scheduler`: scheduler.New/Run in its own
// process with default tuning, its API on --listen without authentication
// and /metrics on --metrics-listen (loopback, as the real scheduler's; the
// API's listener serves no /metrics without a scrape token). It prints
// "READY <API URL> <metrics URL>".
func runScheduler(args []string) error {
	fs := pflag.NewFlagSet("scheduler", pflag.ContinueOnError)
	dbURL := fs.String("database-url", "", "PostgreSQL URL")
	natsURL := fs.String("nats-url", "", "NATS URL")
	listen := fs.String("listen", "127.0.0.1:0", "HTTP address of the API")
	metricsListen := fs.String("metrics-listen", "127.0.0.1:0", "HTTP address for /metrics")
	id := fs.String("id", "", "scheduler id")
	triggerBatch := fs.Int("trigger-batch", 0, "runs per trigger message (0: the default)")
	window := fs.Duration("planning-window", 0, "how far ahead fires are planned (0: the default)")
	backlogInterval := fs.Duration("backlog-interval", time.Second, "how often the group backlog is sampled (the burst scenario records its peak)")
	keyFile := fs.String("trigger-signing-key", "", "file of the trigger signing key; required")
	replicas := fs.Int("stream-replicas", 1, "replicas of the streams and buckets it provisions")
	ctx, log, stop, err := beginChild(fs, args)
	if err != nil {
		return err
	}
	defer stop()
	defer gctune.Start(ctx, log)() // as jetjob-scheduler serve

	// The same pool shape as `jetjob-scheduler serve` (openPool there).
	pcfg, err := pgxpool.ParseConfig(*dbURL)
	if err != nil {
		return err
	}
	pcfg.MinConns = 4
	if pcfg.MaxConns < 16 {
		pcfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, err := nats.Connect(*natsURL, nats.Name("jetjob-bench scheduler"), nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1), nats.ReconnectWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	mln, err := net.Listen("tcp", *metricsListen)
	if err != nil {
		ln.Close()
		return err
	}
	cfg := scheduler.Config{InsecureNoAuth: true}
	cfg.Lease.ID = *id
	cfg.Backlog.Interval = *backlogInterval
	cfg.Planner.TriggerBatch = *triggerBatch
	cfg.Planner.Window = *window
	cfg.Streams.Replicas = *replicas
	priv, err := trigsign.LoadPrivateKeyFile(*keyFile)
	if err != nil {
		ln.Close()
		return err
	}
	signer, err := trigsign.NewSigner(priv)
	if err != nil {
		ln.Close()
		return err
	}
	s, err := scheduler.New(cfg, scheduler.Deps{Pool: pool, NATS: nc, Listener: ln, MetricsListener: mln, Logger: log, TriggerSigner: signer})
	if err != nil {
		ln.Close()
		mln.Close()
		return err
	}
	fmt.Printf("READY http://%s http://%s\n", ln.Addr(), mln.Addr())
	return s.Run(ctx)
}

// runWorker is `jetjob-bench worker`: the worker SDK with the handlers
// "noop", "sleep50" and "shell" (the drop-in worker's builtin), counting every handler invocation per (job, fire
// time). On exit it writes the counts to --out (gob, see seen.go).
func runWorker(args []string) error {
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	natsURL := fs.String("nats-url", "", "NATS URL")
	id := fs.String("id", "", "worker id")
	group := fs.String("group", benchGroup, "job group")
	concurrency := fs.Int("concurrency", 256, "runs at once")
	out := fs.String("out", "", "file for the invocation counts, written at exit")
	publicKeys := fs.String("trigger-public-keys", "", "the schedulers' trigger public keys, base64, comma-separated; required")
	replicas := fs.Int("stream-replicas", 1, "replicas of the streams and buckets it creates if missing")
	ctx, log, stop, err := beginChild(fs, args)
	if err != nil {
		return err
	}
	defer stop()
	if *out == "" {
		return errors.New("worker: --out is required")
	}
	pubs, err := trigsign.ParsePublicKeys(*publicKeys)
	if err != nil {
		return err
	}
	keys, err := trigsign.NewVerifier(pubs...)
	if err != nil {
		return err
	}
	defer gctune.Start(ctx, log)() // as jetjob-worker does (a program on the SDK may too)

	nc, err := nats.Connect(*natsURL, nats.Name("jetjob-bench worker"), nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1), nats.ReconnectWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer nc.Close()
	w, err := worker.New(worker.Config{NATS: nc, Group: *group, ID: *id, Concurrency: *concurrency,
		ShutdownGrace: 5 * time.Second, Logger: log, TriggerKeys: keys, Streams: worker.Streams{Replicas: *replicas}})
	if err != nil {
		return err
	}
	seen := newSeenSet(time.Now().Add(-time.Minute))
	w.Handle("noop", func(_ context.Context, job *worker.Job) error {
		seen.add(job.JobID, job.ScheduledAt, "noop")
		return nil
	})
	w.Handle("sleep50", func(ctx context.Context, job *worker.Job) error {
		seen.add(job.JobID, job.ScheduledAt, "sleep50")
		t := time.NewTimer(50 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	})
	shell := builtin.Shell(builtin.ShellConfig{})
	w.Handle("shell", func(ctx context.Context, job *worker.Job) error {
		seen.add(job.JobID, job.ScheduledAt, "shell")
		return shell(ctx, job)
	})
	fmt.Printf("READY %s\n", w.ID())
	runErr := w.Run(ctx)
	stop()
	f, err := os.Create(*out)
	if err != nil {
		return errors.Join(runErr, err)
	}
	err = gob.NewEncoder(f).Encode(seen.snapshot())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return errors.Join(runErr, err)
}
