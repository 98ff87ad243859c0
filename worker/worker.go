package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/joblock"
	"github.com/jetjob/jetjob/worker/internal/kills"
	"github.com/jetjob/jetjob/worker/internal/questions"
	"github.com/jetjob/jetjob/worker/internal/runevents"
)

// Defaults for the zero values of Config.
const (
	DefaultConcurrency   = 10
	DefaultAckWait       = stream.DefaultAckWait
	DefaultMaxDeliver    = stream.DefaultMaxDeliver
	DefaultAbandonGrace  = 5 * time.Second
	DefaultShutdownGrace = 30 * time.Second
)

// Config configures a Worker. Zero values mean the defaults above.
//
// Every worker of a group writes AckWait and MaxDeliver into the group's
// shared consumer at Run, so all of them should be given the same values.
type Config struct {
	// NATS is the connection to use; required. The caller owns it: the
	// worker never closes it.
	NATS *nats.Conn
	// Group is the job group (xxl-job's executor appname) this worker serves.
	Group string
	// ID identifies this worker in events and logs; default
	// <hostname>-<pid>-<random>.
	ID string
	// Concurrency is how many runs execute at once in this process.
	Concurrency int
	// AckWait is the consumer's ack wait: a trigger not acknowledged (or
	// marked in progress) for this long is redelivered. In-progress acks are
	// sent every AckWait/3 while a run lasts.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one trigger; after the last one the
	// scheduler records the run LOST.
	MaxDeliver int
	// AbandonGrace is how long a handler is waited for after its timeout or
	// the shutdown cancelled its context, before it is abandoned.
	AbandonGrace time.Duration
	// ShutdownGrace is how long running handlers may continue after Run's
	// context is cancelled before their own contexts are cancelled.
	ShutdownGrace time.Duration
	// HeartbeatInterval is how often the worker puts its heartbeat into the
	// workers bucket (heartbeat.go); default 5s, and shorter than the
	// bucket's TTL (Streams.WorkerTTL, default 15s = three beats).
	HeartbeatInterval time.Duration
	// Logger receives the worker's logs; default none.
	Logger *zap.Logger
	// TracerProvider records the runs' spans (trace.go); nil: the global
	// provider as New finds it. Tracing is off while neither is a real
	// provider: no span is started and no trace header is written.
	TracerProvider trace.TracerProvider
	// LockTTL is how long a job lock holder (or a run waiting for a lock
	// or slot) may go without refreshing its beat before the other runs
	// take it for dead and take its place over: holders and waiters beat
	// every LockTTL/3. Default stream.LockTTL (6s), the locks bucket's key
	// TTL. Between 1s and stream.LockTTL: a longer one would let the
	// bucket expire held keys between beats. Every worker of a group must
	// use the same value, or a shorter one takes over the locks of the
	// others while they still run; it exists so that tests of a dead
	// holder need not wait out the default.
	LockTTL time.Duration
	// Streams is passed to stream.Provision when Run starts: streams
	// missing then are created with these settings, existing ones are left
	// as the schedulers set them up (stream.LeaveExisting).
	Streams stream.Config
	// TriggerKeys verifies the schedulers' signatures on triggers
	// (package trigsign; the public half of their --trigger-signing-key,
	// two keys while it is rotated). A trigger without a valid signature
	// is terminated unrun, logged and counted (verify.go). Required unless
	// AcceptUnsignedTriggers.
	TriggerKeys *trigsign.Verifier
	// AcceptUnsignedTriggers runs triggers that carry no signature: anyone
	// who may publish on the group's trigger subjects can then run its
	// handlers with the params of their choice. Only where the NATS
	// account lets nobody but the schedulers publish triggers, or to roll
	// signing out (keys on the workers first, then signing schedulers,
	// then this off). A trigger that is signed is verified all the same
	// when TriggerKeys is set.
	AcceptUnsignedTriggers bool
}

// withDefaults fills zero values and validates, naming each bad field.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.NATS == nil {
		errs = append(errs, errors.New("NATS connection is required"))
	}
	if err := wire.CheckName("group", c.Group); err != nil {
		errs = append(errs, err)
	}
	if c.ID == "" {
		c.ID = defaultID()
	} else if err := wire.CheckName("worker id", c.ID); err != nil {
		errs = append(errs, err)
	}
	pos := func(name string, v *int, def int) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			errs = append(errs, fmt.Errorf("%s %d: must be positive", name, *v))
		}
	}
	dur := func(name string, v *time.Duration, def time.Duration) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			errs = append(errs, fmt.Errorf("%s %s: must be positive", name, *v))
		}
	}
	pos("concurrency", &c.Concurrency, DefaultConcurrency)
	pos("max deliver", &c.MaxDeliver, DefaultMaxDeliver)
	dur("ack wait", &c.AckWait, DefaultAckWait)
	dur("abandon grace", &c.AbandonGrace, DefaultAbandonGrace)
	dur("shutdown grace", &c.ShutdownGrace, DefaultShutdownGrace)
	if c.AckWait > 0 && c.AckWait < 100*time.Millisecond {
		// In-progress acks go out every AckWait/3; below this they would
		// be a busy loop and any hiccup would cause redeliveries.
		errs = append(errs, fmt.Errorf("ack wait %s: want at least 100ms", c.AckWait))
	}
	dur("lock ttl", &c.LockTTL, stream.LockTTL)
	if c.LockTTL > 0 && (c.LockTTL < time.Second || c.LockTTL > stream.LockTTL) {
		errs = append(errs, fmt.Errorf("lock ttl %s: want between 1s and %s", c.LockTTL, stream.LockTTL))
	}
	if err := c.Streams.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.TriggerKeys == nil && !c.AcceptUnsignedTriggers {
		errs = append(errs, errors.New("trigger keys: set TriggerKeys (the schedulers' trigger public keys), "+
			"or AcceptUnsignedTriggers to run triggers anyone allowed to publish them could forge"))
	}
	if err := c.heartbeatDefaults(); err != nil {
		errs = append(errs, err)
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("worker config: %w", err)
	}
	return c, nil
}

// defaultID is <hostname>-<pid>-<6 hex>, the hostname reduced to the
// characters a NATS subject token allows so that the id is always valid.
func defaultID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	if host == "" {
		host = "worker"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// HandlerFunc runs one run of a job. Its context is cancelled at the run's
// timeout and at shutdown; a handler should return soon after.
type HandlerFunc func(ctx context.Context, job *Job) error

// HandleOption configures a handler.
type HandleOption func(*handler)

// WithInit runs fn once when Run starts, before any run of the handler; an
// error makes Run fail.
func WithInit(fn func(ctx context.Context) error) HandleOption {
	return func(h *handler) { h.init = fn }
}

// WithDestroy runs fn once when Run ends, after the last run of the handler.
func WithDestroy(fn func(ctx context.Context) error) HandleOption {
	return func(h *handler) { h.destroy = fn }
}

type handler struct {
	name    string
	fn      HandlerFunc
	init    func(context.Context) error
	destroy func(context.Context) error
}

// Worker runs the handlers of one group. Create it with New, register
// handlers with Handle, then call Run once.
//
// The Worker is the SDK's shell: it fetches triggers, runs handlers and
// settles deliveries. The protocols it takes part in live in internal
// packages with their own state: the job lock (joblock), run events
// (events), questions to the schedulers (questions), kill requests (kills)
// and control requests (control). They learn about this worker's runs only
// through the run table (runtable.go).
type Worker struct {
	cfg Config
	log *zap.Logger

	mu       sync.Mutex // guards handlers, order and started
	handlers map[string]*handler
	order    []*handler // registration order, for init and destroy
	started  bool
	runs     *runTable // runs executing here or finished lately

	// signals are the moments tests wait for (nothing in production).
	signals testSignals

	// Tuning that tests shorten; see fetch.go.
	fetchWait  time.Duration
	maxFetches int
	lanes      []*lane    // set by Run before fetching starts
	trace      *runTracer // nil: tracing off

	// Set once by setup, before any goroutine starts.
	js     jetstream.JetStream
	events *runevents.Publisher // publishes run events
	ask    *questions.Asker     // asks the schedulers (started.go, misfire.go)
	locks  *joblock.Locks       // job locks for block strategies (exec.go)
	kills  *kills.Set           // kill requests seen

	// The steps of a stop that runs obey once started (lifecycle.go).
	handlersEnd stopStep // the shutdown grace is over: handlers are cancelled
	resultsEnd  stopStep // results are given up: acks and publishing end

	judges chan struct{} // semaphore of late triggers judged off their slots (judge.go)
	// supersedeWait, when set (by tests), replaces the Asker's bound on a
	// supersede question.
	supersedeWait time.Duration
	procs         sync.WaitGroup // process goroutines (receive.go)
	fetchers      sync.WaitGroup // batch drain goroutines (fetch.go)
	metrics       *metrics       // Prometheus series (metrics.go)
	counts        counters       // for Stats and the metrics
	refusals      refusalLog     // rate limit of the logs of refused triggers (verify.go)
	sup           supervision    // the loops' supervisor (supervise.go)
}

// counters are the worker's running totals.
type counters struct {
	abandonedTotal atomic.Int64
	abandonedLive  atomic.Int64
	expiredTotal   atomic.Int64
	logDropped     atomic.Int64
}

// New validates cfg and returns a worker with no handlers.
func New(cfg Config) (*Worker, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:        c,
		log:        c.Logger.With(logging.Group(c.Group), logging.Worker(c.ID)),
		handlers:   make(map[string]*handler),
		runs:       newRunTable(),
		fetchWait:  defaultFetchWait,
		maxFetches: defaultMaxFetches,
		trace:      newRunTracer(c.TracerProvider),
		judges:     make(chan struct{}, judgePool(c.Concurrency)),
	}
	if w.sup.super, err = newSupervision(w, supervise.Config{}, supervise.TestSignals{}); err != nil {
		return nil, err
	}
	w.metrics = newMetrics(w)
	return w, nil
}

// ID returns the worker id used in events and logs.
func (w *Worker) ID() string { return w.cfg.ID }

// Handle registers h under name. Like net/http's ServeMux it panics on a
// programming error: a name that is not a valid handler name
// (wire.ValidHandler: the one pattern the API also checks jobs against, so
// that a registered handler can be named by a job), a nil handler, a
// duplicate name, or a call after Run started.
func (w *Worker) Handle(name string, h HandlerFunc, opts ...HandleOption) {
	if err := wire.CheckHandler(name); err != nil {
		panic(fmt.Sprintf("worker: invalid handler: %v", err))
	}
	if h == nil {
		panic(fmt.Sprintf("worker: nil handler for %q", name))
	}
	hd := &handler{name: name, fn: h}
	for _, o := range opts {
		o(hd)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic(fmt.Sprintf("worker: Handle(%q) called after Run", name))
	}
	if _, dup := w.handlers[name]; dup {
		panic(fmt.Sprintf("worker: handler %q registered twice", name))
	}
	w.handlers[name] = hd
	w.order = append(w.order, hd)
}

// lookup returns the handler registered under name, nil if none. The map is
// not written after Run starts, so no lock is needed.
func (w *Worker) lookup(name string) *handler { return w.handlers[name] }

// Stats is a snapshot of a worker's state, for metrics and heartbeats.
type Stats struct {
	// Running is how many runs are executing (handler running or its
	// result being published).
	Running int
	// AbandonedTotal counts handlers abandoned because they ignored their
	// cancelled context.
	AbandonedTotal int64
	// Abandoned is how many abandoned handler goroutines have not returned yet.
	Abandoned int64
	// LogLinesDropped counts job log lines that could not be published.
	LogLinesDropped int64
	// ExpiredTotal counts triggers reported EXPIRED instead of run because
	// they reached this worker later than their misfire threshold under
	// policy skip, or were superseded by a newer fire under fire_once.
	ExpiredTotal int64
}

// Stats returns a snapshot of the worker's counters.
func (w *Worker) Stats() Stats {
	return Stats{
		Running:         w.runs.count(),
		AbandonedTotal:  w.counts.abandonedTotal.Load(),
		Abandoned:       w.counts.abandonedLive.Load(),
		LogLinesDropped: w.counts.logDropped.Load(),
		ExpiredTotal:    w.counts.expiredTotal.Load(),
	}
}
