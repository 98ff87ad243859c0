// Package scheduler composes jetjob's scheduling center: the planner plans
// due fires into PostgreSQL, the wheel holds them to the millisecond,
// dispatch publishes them on JetStream, results applies what workers report,
// and the API serves users. One Scheduler is one `jetjob-scheduler serve`.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/alarm"
	"github.com/jetjob/jetjob/scheduler/api"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/backfill"
	"github.com/jetjob/jetjob/scheduler/backlog"
	"github.com/jetjob/jetjob/scheduler/console"
	"github.com/jetjob/jetjob/scheduler/dispatch"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/lease"
	"github.com/jetjob/jetjob/scheduler/lost"
	"github.com/jetjob/jetjob/scheduler/planner"
	"github.com/jetjob/jetjob/scheduler/registry"
	"github.com/jetjob/jetjob/scheduler/reroute"
	"github.com/jetjob/jetjob/scheduler/results"
	"github.com/jetjob/jetjob/scheduler/retention"
	"github.com/jetjob/jetjob/scheduler/route"
	"github.com/jetjob/jetjob/scheduler/runlog"
	"github.com/jetjob/jetjob/scheduler/runs"
	"github.com/jetjob/jetjob/scheduler/spans"
	"github.com/jetjob/jetjob/scheduler/store"
	"github.com/jetjob/jetjob/scheduler/supersede"
	"github.com/jetjob/jetjob/scheduler/wheel"
	"github.com/jetjob/jetjob/shared/logging"
	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/version"
)

// Config configures a scheduler. Zero values mean the defaults.
type Config struct {
	// Pool is the PostgreSQL pool (required); its schema must be migrated.
	Pool *pgxpool.Pool
	// NATS is the connection to NATS (required). Create it with
	// nats.RetryOnFailedConnect and unlimited reconnects so that a NATS
	// outage is waited out.
	NATS *nats.Conn
	// Listener serves the HTTP API; nil serves no HTTP.
	Listener net.Listener
	// APIToken (the bootstrap admin key), InsecureNoAuth and
	// InsecureCookies: see api.Config.
	APIToken        string
	InsecureNoAuth  bool
	InsecureCookies bool
	// ShardCount is used only when the cluster is created (default 64).
	ShardCount int
	Lease      lease.Config
	Planner    planner.Config
	Dispatch   dispatch.Config
	Results    results.Config
	Alarm      alarm.Config
	Retention  retention.Config
	Streams    stream.Config
	// Backlog samples each group's waiting triggers (metrics, the API's
	// /workers, a warning per episode). Its WarnAfter defaults to the
	// misfire threshold: triggers older than that reach workers as misfires.
	Backlog backlog.Config
	// Backfill bounds how fast backfill operations write their runs.
	Backfill backfill.Config
	Logger   *zap.Logger
	// TracerProvider records the runs' traces (package spans); nil: the
	// global provider as New finds it. Tracing is off while neither is a
	// real provider (runtrace.Enabled).
	TracerProvider trace.TracerProvider
}

// Validate says which field is wrong.
func (c *Config) Validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("scheduler: Pool is required")
	case c.NATS == nil:
		return errors.New("scheduler: NATS is required")
	}
	if err := c.Planner.Validate(); err != nil {
		return err
	}
	if err := c.Lease.Validate(); err != nil {
		return err
	}
	if err := c.Retention.Validate(); err != nil {
		return err
	}
	if err := c.Backlog.Validate(); err != nil {
		return err
	}
	return c.Streams.Validate()
}

// Scheduler is one scheduling-center process.
type Scheduler struct {
	cfg     Config
	log     *zap.Logger
	reg     *prometheus.Registry
	metrics *metrics
	handler atomic.Pointer[http.Handler]
	wheel   *wheel.Wheel
	ready   atomic.Bool

	// crashed makes Run stop as if the process died: no lease release,
	// no draining (see export_test.go).
	crashed atomic.Bool
	mu      sync.Mutex
	leases  *lease.Manager
	cancel  context.CancelFunc
}

// New validates cfg and returns a scheduler; Run starts it.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Planner.IdleTxTimeout == 0 {
		ttl := cfg.Lease.TTL
		if ttl == 0 {
			ttl = lease.DefaultTTL
		}
		cfg.Planner.IdleTxTimeout = ttl / 2
	}
	if cfg.Dispatch.MisfireThreshold == 0 {
		cfg.Dispatch.MisfireThreshold = cfg.Planner.MisfireThreshold
		if cfg.Dispatch.MisfireThreshold == 0 {
			cfg.Dispatch.MisfireThreshold = planner.DefaultMisfireThreshold
		}
	}
	if cfg.Backlog.WarnAfter == 0 {
		cfg.Backlog.WarnAfter = cfg.Dispatch.MisfireThreshold
	}
	if t := spans.New(cfg.TracerProvider); t != nil {
		cfg.Planner.Trace, cfg.Dispatch.Trace, cfg.Results.Trace = t, t, t
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		version.Collector())
	reg.MustRegister(errcount.Collectors()...)
	return &Scheduler{cfg: cfg, log: cfg.Logger.Named("scheduler"), reg: reg, metrics: newMetrics(reg)}, nil
}

// Registry is the scheduler's Prometheus registry (served on /metrics).
func (s *Scheduler) Registry() *prometheus.Registry { return s.reg }

// Run runs the scheduler until ctx ends, then stops in order: planning and
// firing first, then publishing (so acknowledged triggers are recorded),
// then the API. It waits for PostgreSQL and NATS at start rather than
// failing, so processes can start in any order.
func (s *Scheduler) Run(ctx context.Context) error {
	var httpDone chan error
	var srv *http.Server
	if s.cfg.Listener != nil {
		srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
		httpDone = make(chan error, 1)
		go func() { httpDone <- srv.Serve(s.cfg.Listener) }()
	}
	err := s.run(ctx)
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		if herr := <-httpDone; herr != nil && !errors.Is(herr, http.ErrServerClosed) && err == nil {
			err = fmt.Errorf("http: %w", herr)
		}
	}
	return err
}

func (s *Scheduler) run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st, err := retry(ctx, s.log, "open store", func() { errcount.Postgres(errcount.OpenStore) }, func() (*store.Store, error) {
		return store.Open(ctx, s.cfg.Pool, s.cfg.ShardCount)
	})
	if err != nil {
		return nil // ctx ended while waiting
	}
	if s.cfg.ShardCount != 0 && s.cfg.ShardCount != st.ShardCount() {
		s.log.Warn("shard count is fixed at cluster creation; ignoring the requested one",
			zap.Int("cluster", st.ShardCount()), zap.Int("requested", s.cfg.ShardCount))
	}
	js, err := jetstream.New(s.cfg.NATS, jetstream.WithPublishAsyncTimeout(5*time.Second),
		jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := retry(ctx, s.log, "provision streams", func() { errcount.NATS(errcount.Provision) }, func() (struct{}, error) {
		return struct{}{}, stream.Provision(ctx, js, s.cfg.Streams)
	}); err != nil {
		return nil
	}

	// The parts, wired: leases decide which shards this instance plans;
	// the planner feeds the wheel; the wheel feeds dispatch; dispatch
	// publishes only under a valid lease.
	//
	// Stopping goes in stages, each with its own context: firing (planner,
	// wheel and the rest) stops first; then publishing (dispatch), so what
	// was handed over is published and recorded; then the leases, which
	// fence those records and so are released last.
	fireCtx, stopFiring := context.WithCancel(ctx)
	defer stopFiring()
	pubCtx, stopPublishing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPublishing()
	leaseCtx, stopLeases := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLeases()
	recoverq := make(chan lease.Lease, st.ShardCount())
	lm, err := lease.New(s.cfg.Lease, s.cfg.Pool, lease.Handler{
		Acquired: func(ls []lease.Lease) {
			s.metrics.leaseChanges.WithLabelValues("acquired").Add(float64(len(ls)))
			for _, l := range ls {
				select {
				case recoverq <- l:
				case <-fireCtx.Done(): // stopping: released with the rest
				}
			}
		},
		Lost: func(shards []int, _ string) {
			s.metrics.leaseChanges.WithLabelValues("lost").Add(float64(len(shards)))
			lost := make(map[int]bool, len(shards))
			for _, sh := range shards {
				lost[sh] = true
			}
			s.wheel.Remove(func(r *runs.Planned) bool { return r.Epoch != 0 && lost[r.Shard] })
		},
	}, s.log)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.leases, s.cancel = lm, cancel
	s.mu.Unlock()
	reg := registry.New(js, s.cfg.Streams, s.log)
	dcfg := s.cfg.Dispatch
	dcfg.Owner, dcfg.Valid = lm.ID(), lm.Valid
	dcfg.Route = route.New(reg.Live, s.cfg.NATS, s.log)
	disp := dispatch.New(dcfg, js, s.cfg.Pool, s.log)
	disp.Observe = s.metrics.observeFire
	s.wheel = wheel.New(disp.Fire, disp.Connected)
	pl, err := planner.New(s.cfg.Planner, s.cfg.Pool, lm.ID(), lm.Held, func(runs []runs.Planned) {
		s.metrics.planned.Add(float64(len(runs)))
		s.wheel.Add(runs...)
	}, s.log)
	if err != nil {
		return err
	}
	pl.Planned = s.metrics.lag.planned
	s.metrics.register(s.reg, s.wheel.Len, lm.Held)
	rr := reroute.New(js, dcfg.Route.Live, reg.Synced, s.log)
	rr.Moved = func(n int) { s.metrics.rerouted.Add(float64(n)) }
	app := results.New(s.cfg.Results, js, s.cfg.Pool, s.log)
	app.Applied = func(cs []results.Change) {
		s.metrics.observeApplied(cs)
		var ids []int64
		for _, c := range cs {
			if c.Triggered {
				ids = append(ids, c.RunID)
			}
		}
		disp.Recorded(ids)
	}
	app.Spawned = func(ids []int64) {
		// Retries and child runs: this scheduler fires them at their time
		// (if it dies first, the shard owner's sweep does).
		runs, err := pl.Load(ctx, ids)
		if err != nil {
			s.log.Warn("loading new retry/child runs failed; the shard owners' sweep fires them", zap.Error(err))
			return
		}
		s.metrics.planned.Add(float64(len(runs)))
		s.wheel.Add(runs...)
	}

	// Partitions, the daily rollup and retention: every scheduler runs
	// the loop, one at a time does a round (see package retention).
	maint, err := retention.New(s.cfg.Retention, s.cfg.Pool, s.log)
	if err != nil {
		return err
	}
	s.reg.MustRegister(maint.Collectors()...)
	// Every scheduler samples the backlog: it only reads consumer state.
	bl, err := backlog.New(s.cfg.Backlog, js, s.log)
	if err != nil {
		return err
	}
	s.reg.MustRegister(bl.Collector())
	alarms, lostRuns := alarm.New(s.cfg.Alarm, s.cfg.Pool, s.log), lost.New(js, s.log)
	s.reg.MustRegister(alarms.Collector(), lostRuns.Collector())

	a, err := api.New(api.Config{
		Token: s.cfg.APIToken, InsecureNoAuth: s.cfg.InsecureNoAuth, InsecureCookies: s.cfg.InsecureCookies, Gatherer: s.reg,
		Ready: s.readyErr, Dependencies: s.dependencies, SchedulerID: lm.ID(), Fire: func(r runs.Planned) { s.wheel.Add(r) }, Logs: runlog.New(js),
		Workers: reg.Live, Backlog: bl.Latest,
		Kill: func(ctx context.Context, runID int64, reason string) error {
			kv, err := stream.Kills(ctx, js, s.cfg.Streams)
			if err != nil {
				return err
			}
			_, err = kv.Put(ctx, stream.KillKey(runID), []byte(reason))
			return err
		},
	}, st, s.log)
	if err != nil {
		return err
	}
	s.reg.MustRegister(a.Collector())
	con, err := console.New(console.Config{API: a, Log: s.log})
	if err != nil {
		return err
	}
	h := console.Split(a, con)
	s.handler.Store(&h)

	var wg, pubWG, leaseWG sync.WaitGroup
	goRun := func(wg *sync.WaitGroup, name string, f func(context.Context) error, c context.Context) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(c); err != nil && c.Err() == nil {
				s.log.Error("component stopped", zap.String("component", name), zap.Error(err))
			}
		}()
	}
	goRun(&pubWG, "dispatch", disp.Run, pubCtx)
	goRun(&wg, "wheel", s.wheel.Run, fireCtx)
	goRun(&wg, "results", app.Run, fireCtx)
	goRun(&wg, "alarms", alarms.Run, fireCtx)
	goRun(&wg, "lost runs", lostRuns.Run, fireCtx)
	goRun(&wg, "worker registry", reg.Run, fireCtx)
	goRun(&wg, "reroute", rr.Run, fireCtx)
	goRun(&wg, "supersede", func(c context.Context) error { return supersede.Serve(c, s.cfg.NATS, s.cfg.Pool, s.log) }, fireCtx)
	goRun(&wg, "start checks", func(c context.Context) error {
		return supersede.ServeStarted(c, s.cfg.NATS, js, s.cfg.Pool, s.log)
	}, fireCtx)
	goRun(&leaseWG, "leases", lm.Run, leaseCtx)
	goRun(&wg, "recovery", func(c context.Context) error { return s.recoverShards(c, pl, recoverq) }, fireCtx)
	goRun(&wg, "planner", pl.Run, fireCtx)
	goRun(&wg, "job changes", func(c context.Context) error { return s.watchJobs(c) }, fireCtx)
	goRun(&wg, "retention", maint.Run, fireCtx)
	goRun(&wg, "backlog", bl.Run, fireCtx)
	bf := backfill.New(s.cfg.Backfill, st, func(runs []runs.Planned) { s.wheel.Add(runs...) }, s.log)
	goRun(&wg, "backfill", bf.Run, fireCtx)
	s.ready.Store(true)

	s.log.Info("scheduler running", zap.String("scheduler_id", lm.ID()), zap.Int("shards", st.ShardCount()))
	<-ctx.Done()
	s.ready.Store(false)
	stopFiring()
	wg.Wait()
	if !s.crashed.Load() {
		// Let in-flight publishes be acknowledged and recorded; what is
		// not acknowledged in time stays SCHEDULED and is recovered.
		drain, cancelDrain := context.WithTimeout(pubCtx, 2*time.Second)
		disp.Drain(drain)
		cancelDrain()
	} else {
		disp.Abandon() // as if the process died: nothing more is written
	}
	stopPublishing()
	pubWG.Wait()
	stopLeases()
	leaseWG.Wait()
	s.log.Info("scheduler stopped", zap.Bool("crashed", s.crashed.Load()))
	return nil
}

// recoverShards hands each newly acquired shard's planned, unpublished
// runs to the wheel. It runs apart from the lease loop so that a slow
// recovery never delays lease renewals.
func (s *Scheduler) recoverShards(ctx context.Context, pl *planner.Planner, q <-chan lease.Lease) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case l := <-q:
			runs, err := retry(ctx, s.log, "recover planned runs", func() { errcount.Postgres(errcount.Recover) }, func() ([]runs.Planned, error) {
				if !l.Valid(time.Now()) {
					return nil, nil
				}
				return pl.Recover(ctx, l)
			})
			if err != nil {
				return nil
			}
			if len(runs) > 0 {
				s.log.Info("recovered planned runs", logging.Shard(l.Shard), zap.Int("runs", len(runs)))
				s.wheel.Add(runs...)
			}
		}
	}
}

func (s *Scheduler) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.handler.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	switch r.URL.Path {
	case "/healthz":
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	default:
		http.Error(w, `{"error":"starting: waiting for PostgreSQL and NATS"}`, http.StatusServiceUnavailable)
	}
}

// readyErr says why the scheduler cannot do its work right now.
func (s *Scheduler) readyErr(ctx context.Context) error {
	if !s.ready.Load() {
		return errors.New("starting")
	}
	for _, d := range s.dependencies(ctx) {
		if !d.OK {
			return errors.New(d.Error)
		}
	}
	return nil
}

// dependencies checks PostgreSQL and NATS one by one: what readyErr
// requires, and what the cluster view lists.
func (s *Scheduler) dependencies(ctx context.Context) []apiv1.Dependency {
	pg := apiv1.Dependency{Name: "postgresql", OK: true}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.cfg.Pool.Ping(pctx); err != nil {
		pg.OK, pg.Error = false, fmt.Sprintf("PostgreSQL unreachable: %v", err)
	}
	nc := apiv1.Dependency{Name: "nats", OK: s.cfg.NATS.IsConnected()}
	if !nc.OK {
		nc.Error = fmt.Sprintf("NATS not connected (%s)", s.cfg.NATS.Status())
	}
	return []apiv1.Dependency{pg, nc}
}

// retry calls f until it succeeds or ctx ends, backing off from 100 ms to
// 5 s and logging and counting (failed) each failure.
func retry[T any](ctx context.Context, log *zap.Logger, what string, failed func(), f func() (T, error)) (T, error) {
	backoff := 100 * time.Millisecond
	for {
		v, err := f()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return v, ctx.Err()
		}
		failed()
		log.Warn(what+" failed; retrying", zap.Duration("backoff", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
