// Package scheduler composes jetjob's scheduling center: the planner plans
// due fires into PostgreSQL, the wheel holds them to the millisecond,
// dispatch publishes them on JetStream, results applies what workers report,
// and the API serves users. One Scheduler is one `jetjob-scheduler serve`.
package scheduler

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/scrape"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/backfill"
	"github.com/jetjob/jetjob/scheduler/internal/backlog"
	"github.com/jetjob/jetjob/scheduler/internal/dispatch"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/scheduler/internal/httplimit"
	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/results"
	"github.com/jetjob/jetjob/scheduler/internal/retention"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wheel"
	"github.com/jetjob/jetjob/shared/trigsign"
)

// Config is what an operator tunes: durations, sizes, flags, one section
// per component. Zero values mean the defaults. What the scheduler runs on
// (PostgreSQL, NATS, a listener, a logger) is in Deps instead, and the
// components' callbacks to each other are wired by the scheduler itself.
type Config struct {
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
	// Alerts tunes the alert engine (rules, channels, deliveries; sent
	// with Alarm's SMTP server, console URL and timeout).
	Alerts    alerts.Config
	Retention retention.Config
	Streams   stream.Config
	// Secrets is the keyring jobs' secrets are encrypted with; empty: the
	// secrets endpoints answer 503 and runs of jobs that reference
	// secrets fail, both saying how to configure it.
	Secrets secrets.Keyring
	// Backlog samples each group's waiting triggers (metrics, the API's
	// /workers, a warning per episode). Its WarnAfter defaults to the
	// misfire threshold: triggers older than that reach workers as misfires.
	Backlog backlog.Config
	// Backfill bounds how fast backfill operations write their runs.
	Backfill backfill.Config
	// MaxChainRuns caps the runs one fire may cause through child jobs
	// (default refs.DefaultMaxRuns, 100): the API refuses a link that
	// would let any job reach further, and the results applier triggers
	// no children past it (Results.MaxChainRuns takes this value). Give
	// every scheduler of a cluster the same.
	MaxChainRuns int
	// ScriptVersions is how many versions of each script job's script are
	// kept (default store.DefaultScriptVersions, 30, as xxl-job keeps of a
	// GLUE script); saving one prunes the older.
	ScriptVersions int
	// Egress is what connections to targets users choose (alarm webhooks)
	// may reach beyond public addresses (--egress-allow); the scheduler's
	// own API listener is added to its Self.
	Egress egress.Config
	// HTTP bounds the API listener's clients: header, body and idle
	// timeouts and the budget of requests without credentials (package
	// httplimit). The metrics listener gets the same timeouts.
	HTTP httplimit.Config
	// MetricsToken is the scrape token: when set, /metrics answers only
	// requests with "Authorization: Bearer <token>", on the metrics
	// listener and on the API's (which serves no /metrics without it).
	MetricsToken string
}

// Validate checks every component's settings in one place, so that a
// scheduler refuses to start on a wrong value, naming each wrong field,
// rather than failing (or retrying forever) when the component first
// uses it.
func (c *Config) Validate() error {
	var shards error
	if c.ShardCount < 0 || c.ShardCount > store.MaxShardCount {
		shards = fmt.Errorf("scheduler: ShardCount must be 1 to %d (0: %d), got %d",
			store.MaxShardCount, store.DefaultShardCount, c.ShardCount)
	}
	var versions error
	if c.ScriptVersions < 0 || c.ScriptVersions > 10000 {
		versions = fmt.Errorf("scheduler: ScriptVersions must be 1 to 10000 (0: %d), got %d", store.DefaultScriptVersions, c.ScriptVersions)
	}
	return errors.Join(shards, versions,
		refs.ValidateMaxRuns(c.MaxChainRuns),
		c.Lease.Validate(),
		c.Planner.Validate(),
		c.Dispatch.Validate(),
		c.Results.Validate(),
		c.Alarm.Validate(),
		c.Alerts.Validate(),
		c.Retention.Validate(),
		c.Backlog.Validate(),
		c.Backfill.Validate(),
		c.Streams.Validate(),
		c.Egress.Validate(),
		c.HTTP.Validate(),
	)
}

// Deps are what a scheduler runs on. The caller owns the pool and the NATS
// connection (the scheduler never closes them); the listener is closed when
// Run returns.
type Deps struct {
	// Pool is the PostgreSQL pool (required); its schema must be migrated.
	Pool *pgxpool.Pool
	// NATS is the connection to NATS (required). Create it with
	// nats.RetryOnFailedConnect and unlimited reconnects so that a NATS
	// outage is waited out.
	NATS *nats.Conn
	// Listener serves the HTTP API; nil serves no HTTP.
	Listener net.Listener
	// MetricsListener serves /metrics alone (behind Config.MetricsToken
	// when set); nil serves no metrics listener. Listen on the loopback
	// interface, or give a token: metrics name every group and handler.
	MetricsListener net.Listener
	// Logger is the scheduler's logger; nil logs nothing.
	Logger *zap.Logger
	// TracerProvider records the runs' traces (package spans); nil: the
	// global provider as New finds it. Tracing is off while neither is a
	// real provider (runtrace.Enabled).
	TracerProvider trace.TracerProvider
	// TriggerSigner signs every trigger this scheduler publishes (package
	// trigsign); workers verify it with its public key. nil publishes
	// unsigned triggers, which only workers told to accept unsigned
	// triggers run.
	TriggerSigner *trigsign.Signer
	// TriggerPublicKeys are more keys whose triggers this scheduler
	// believes when they come back spent (package lost): the previous
	// signing key while it is rotated. Ignored without TriggerSigner.
	TriggerPublicKeys []ed25519.PublicKey
	// SSO are the identity providers users may sign in through (package
	// sso; nil: local passwords only).
	SSO *sso.Providers
}

// validate says which required dependency is missing.
func (d Deps) validate() error {
	switch {
	case d.Pool == nil:
		return errors.New("scheduler: Pool is required")
	case d.NATS == nil:
		return errors.New("scheduler: NATS is required")
	}
	return nil
}

// Scheduler is one scheduling-center process.
type Scheduler struct {
	cfg     Config
	deps    Deps
	log     *zap.Logger
	tracer  *spans.Tracer // nil: tracing off
	reg     *prometheus.Registry
	metrics *metrics
	handler atomic.Pointer[http.Handler]
	wheel   *wheel.Wheel
	ready   atomic.Bool
	// paused is the groups that are paused or draining, as last read
	// (jobwatch.go): dispatch holds back their runs that wait for the
	// resume.
	paused atomic.Pointer[runs.Paused]

	// crashed makes Run stop as if the process died: no lease release,
	// no draining (see export_test.go).
	crashed atomic.Bool
	mu      sync.Mutex
	leases  *lease.Manager
	cancel  context.CancelFunc

	// super runs the stages' components: restarts a failed one, or
	// stops the Run (fail) where a restart is not safe; /readyz reports
	// those that are down.
	super *supervise.Supervisor
	// superviseCfg is super's config: the defaults but in tests.
	superviseCfg supervise.Config
	// failure is why a component stopped the Run (fail), returned by it.
	failure error

	// testSignals are the components' test signals: see export_test.go.
	testSignals testSignals
	// testFault, set by tests, fails a component's start when it returns
	// an error: a fault injected where every component sets up (its
	// subscription, consumer, first query).
	testFault func(component string) error
}

// testSignals gathers the test signals (package internal/testsignal) of
// the components wire builds. Zero, as in production, they do nothing. A
// test initialises them before Run (export_test.go) and wire gives each
// component its part in its Deps: a copy of an initialised signal shares
// its queue, so the test waits on what the components signal.
type testSignals struct {
	Lease    lease.TestSignals
	Planner  planner.TestSignals
	Dispatch dispatch.TestSignals
	Results  results.TestSignals
	// Supervise is given to the supervisor when it is built (New, and
	// again by SetTestSignals).
	Supervise supervise.TestSignals
}

// New validates cfg and deps and returns a scheduler; Run starts it.
func New(cfg Config, deps Deps) (*Scheduler, error) {
	if deps.Logger == nil {
		deps.Logger = zap.NewNop()
	}
	if err := deps.validate(); err != nil {
		return nil, err
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
	if cfg.Results.MaxChainRuns == 0 {
		cfg.Results.MaxChainRuns = cfg.MaxChainRuns
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		version.Collector())
	reg.MustRegister(errcount.Collectors()...)
	reg.MustRegister(foreign.Collector())
	log := deps.Logger.Named("scheduler")
	if deps.TriggerSigner == nil {
		log.Warn("triggers are published unsigned: only workers that accept unsigned triggers run them")
	} else {
		log.Info("triggers are signed", zap.String("trigger_key_id", deps.TriggerSigner.KeyID()))
	}
	s := &Scheduler{cfg: cfg, deps: deps, log: log, tracer: spans.New(deps.TracerProvider),
		reg: reg, metrics: newMetrics(reg)}
	if err := s.supervise(supervise.Config{}); err != nil {
		return nil, err
	}
	return s, nil
}

// supervise builds the supervisor of the components and registers its
// restarts counter, in place of any built before (tests rebuild it with
// their signals and shorter backoffs).
func (s *Scheduler) supervise(cfg supervise.Config) error {
	sv, err := supervise.New(cfg, supervise.Deps{Log: s.log, Stop: s.fail, TestSignals: s.testSignals.Supervise})
	if err != nil {
		return err
	}
	if s.super != nil {
		s.reg.Unregister(s.super.Collector())
	}
	s.super = sv
	s.reg.MustRegister(sv.Collector())
	return nil
}

// fail stops the Run because a component failed where a restart is not
// safe: the stages stop in order as on any stop, and Run returns err, so
// that the process exits non-zero and its orchestrator starts it afresh.
func (s *Scheduler) fail(err error) {
	s.mu.Lock()
	if s.failure == nil {
		s.failure = err
	}
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Registry is the scheduler's Prometheus registry (served on /metrics).
func (s *Scheduler) Registry() *prometheus.Registry { return s.reg }

// Run runs the scheduler until ctx ends, then stops it stage by stage (see
// stages), then the HTTP server. It waits for PostgreSQL and NATS at start
// rather than failing, so processes can start in any order.
func (s *Scheduler) Run(ctx context.Context) error {
	type server struct {
		name string
		srv  *http.Server
		done chan error
	}
	var servers []server
	serve := func(name string, ln net.Listener, h http.Handler) {
		sv := server{name, httplimit.Server(s.cfg.HTTP, h), make(chan error, 1)}
		go func() { sv.done <- sv.srv.Serve(ln) }()
		servers = append(servers, sv)
	}
	if s.deps.Listener != nil {
		serve("http", s.deps.Listener, http.HandlerFunc(s.serveHTTP))
	}
	if s.deps.MetricsListener != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", scrape.Handler(s.reg, s.cfg.MetricsToken))
		// Its own limiter: no request here has credentials the API knows.
		serve("metrics", s.deps.MetricsListener, httplimit.New(s.cfg.HTTP, mux, nil))
	}
	err := s.run(ctx)
	for _, sv := range servers {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = sv.srv.Shutdown(sctx)
		cancel()
		if herr := <-sv.done; herr != nil && !errors.Is(herr, http.ErrServerClosed) && err == nil {
			err = fmt.Errorf("%s: %w", sv.name, herr)
		}
	}
	return err
}

// run waits for PostgreSQL and NATS, builds the components (wire) and runs
// their stages until ctx ends.
func (s *Scheduler) run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st, js, err := s.connect(ctx)
	if err != nil || st == nil {
		return err // st nil: ctx ended while waiting
	}
	w, err := s.wire(ctx, st, js, cancel)
	if err != nil {
		return err
	}
	stages := w.stages()
	for i := len(stages) - 1; i >= 0; i-- {
		s.start(ctx, stages[i])
	}
	s.ready.Store(true)
	s.log.Info("scheduler running", zap.String("scheduler_id", w.leases.ID()), zap.Int("shards", st.ShardCount()))
	<-ctx.Done()
	s.ready.Store(false)
	for _, sg := range stages {
		s.stop(sg)
	}
	s.mu.Lock()
	failure := s.failure
	s.mu.Unlock()
	if failure != nil {
		s.log.Error("scheduler stopped: a component failed", zap.Error(failure))
		return fmt.Errorf("scheduler: %w", failure)
	}
	s.log.Info("scheduler stopped", zap.Bool("crashed", s.crashed.Load()))
	return nil
}

// stage is a step of the scheduler's stop order: components that run under
// one context, cancelled once every stage listed before it has stopped.
type stage struct {
	name       string
	components []component
	// beforeStop, if set, runs when the stage is about to stop, with the
	// stage's context still live.
	beforeStop func(ctx context.Context)

	ctx    context.Context // set by start
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// component is one goroutine of a stage: run returns when its context
// ends. If it returns earlier it has failed, and it is restarted, or the
// scheduler stops if onFailure says so (package internal/supervise).
type component struct {
	name      string
	run       func(context.Context) error
	onFailure supervise.Policy
}

// stages lists the components of one Run in the order they stop.
//
// Firing stops first: the planner, the wheel, recovery and everything
// else that creates, finds or applies runs, so that nothing new reaches
// dispatch (results stops here too, handing back the events it has not
// applied; what it already told dispatch, Recorded, still reaches it).
// Then publishing: dispatch gets up to 2 s to have every trigger the wheel
// handed it acknowledged and recorded, so that a clean stop leaves no
// published run SCHEDULED (after Crash it abandons them instead, as a dead
// process would). The leases stop last: every write dispatch makes is
// fenced by them, so they are released only once nothing more will be
// written (after Crash they are left to expire).
//
// Start goes the other way round, so that whatever a component hands work
// to is already running: leases, then dispatch, then firing.
//
// A component that fails is restarted after a backoff: each keeps its
// state in PostgreSQL, in JetStream or in fields its Run only reads, and
// its writes are fenced, so running it again is what a restarted process
// would do. Dispatch is the exception: its Run closes the channel its
// marks go through and cannot run twice, so its failure stops the
// scheduler (docs/architecture.md, "Supervised components").
func (w *wiring) stages() []*stage {
	return []*stage{{
		name: "firing",
		components: []component{
			{"wheel", w.s.wheel.Run, supervise.Restart},
			{"results", w.results.Run, supervise.Restart},
			{"alerts", w.alerts.Run, supervise.Restart},
			{"lost runs", w.lost.Run, supervise.Restart},
			{"worker registry", w.registry.Run, supervise.Restart},
			{"reroute", w.reroute.Run, supervise.Restart},
			{"supersede", w.serveSupersede, supervise.Restart},
			{"start checks", w.serveStarted, supervise.Restart},
			{"secrets", w.serveSecrets, supervise.Restart},
			{"map outputs", w.serveMapOutputs, supervise.Restart},
			{"recorded notices", w.hearRecorded, supervise.Restart},
			{"recovery", w.recoverShards, supervise.Restart},
			{"planner", w.planner.Run, supervise.Restart},
			{"job changes", w.watchJobs, supervise.Restart},
			{"retention", w.retention.Run, supervise.Restart},
			{"backlog", w.backlog.Run, supervise.Restart},
			{"backfill", w.backfill.Run, supervise.Restart},
			{"workflow timeouts", w.timeOutWorkflows, supervise.Restart},
		},
	}, {
		name:       "publishing",
		components: []component{{"dispatch", w.dispatch.Run, supervise.Stop}},
		beforeStop: w.settlePublishes,
	}, {
		name:       "leases",
		components: []component{{"leases", w.leases.Run, supervise.Restart}},
	}}
}

// start runs sg's components, each in its own goroutine under the
// supervisor, under a context of sg's own: apart from parent's, so that a
// stage stops only when stop says.
func (s *Scheduler) start(parent context.Context, sg *stage) {
	sg.ctx, sg.cancel = context.WithCancel(context.WithoutCancel(parent))
	for _, c := range sg.components {
		run := c.run
		if fault := s.testFault; fault != nil {
			run = func(ctx context.Context) error {
				if err := fault(c.name); err != nil {
					return err
				}
				return c.run(ctx)
			}
		}
		sg.wg.Add(1)
		go func() {
			defer sg.wg.Done()
			// Its failure is logged, and acted on, by the supervisor.
			_ = s.super.Run(sg.ctx, supervise.Component{Name: c.name, Run: run, OnFailure: c.onFailure})
		}()
	}
}

// stop ends sg and waits until all its components returned.
func (s *Scheduler) stop(sg *stage) {
	if sg.beforeStop != nil {
		sg.beforeStop(sg.ctx)
	}
	sg.cancel()
	sg.wg.Wait()
}

// recoverShards hands each newly acquired shard's planned, unpublished
// runs to the wheel. It runs apart from the lease loop so that a slow
// recovery never delays lease renewals. Whether a queued shard is still
// ours is asked of the lease manager (held at that epoch, its deadline
// renewed), not of the queued copy: that copy's deadline is the one it
// was acquired with, and on a loaded machine recovery reached shards past
// it, skipped them though they were still held, and left their runs to
// the orphan sweep, 30 s later (TestFailoverFiresEachTimeExactlyOnce).
func (s *Scheduler) recoverShards(ctx context.Context, pl *planner.Planner, q <-chan lease.Lease, held func(shard int, epoch int64) bool) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case l := <-q:
			runs, err := retry(ctx, s.log, "recover planned runs", func() { errcount.Postgres(errcount.Recover) }, func() ([]runs.Planned, error) {
				if !held(l.Shard, l.Epoch) {
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

// readyErr says why the scheduler cannot do its work right now: starting,
// a dependency unreachable, or components down (a *supervise.DownError,
// which /readyz lists).
func (s *Scheduler) readyErr(ctx context.Context) error {
	if !s.ready.Load() {
		return errors.New("starting")
	}
	for _, d := range s.dependencies(ctx) {
		if !d.OK {
			return errors.New(d.Error)
		}
	}
	return s.super.Err()
}

// dependencies checks PostgreSQL and NATS one by one: what readyErr
// requires, and what the cluster view lists.
func (s *Scheduler) dependencies(ctx context.Context) []apiv1.Dependency {
	pg := apiv1.Dependency{Name: "postgresql", OK: true}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.deps.Pool.Ping(pctx); err != nil {
		pg.OK, pg.Error = false, fmt.Sprintf("PostgreSQL unreachable: %v", err)
	}
	nc := apiv1.Dependency{Name: "nats", OK: s.deps.NATS.IsConnected()}
	if !nc.OK {
		nc.Error = fmt.Sprintf("NATS not connected (%s)", s.deps.NATS.Status())
	}
	return []apiv1.Dependency{pg, nc}
}

// retry calls f until it succeeds or ctx ends, backing off from 100 ms to
// 5 s and logging and counting (failed) each failure.
func retry[T any](ctx context.Context, log *zap.Logger, what string, failed func(), f func() (T, error)) (T, error) {
	var v T
	err := backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		OnRetry: func(_ int, d time.Duration, err error) {
			failed()
			log.Warn(what+" failed; retrying", zap.Duration("backoff", d), zap.Error(err))
		},
	}, func(context.Context) (err error) {
		v, err = f()
		return err
	})
	return v, err
}
