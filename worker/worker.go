package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/joblock"
	"github.com/jetjob/jetjob/worker/internal/kills"
	"github.com/jetjob/jetjob/worker/internal/questions"
	"github.com/jetjob/jetjob/worker/internal/runevents"
)

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
	reduce  ReduceFunc // WithReduce; nil: the handler's map has no reduce
}

// Worker runs the handlers of one group. Create it with New, register
// handlers with Handle, then call Run once.
type Worker struct {
	// The Worker is the SDK's shell: it fetches triggers, runs handlers
	// and settles deliveries. The protocols it takes part in live in
	// internal packages with their own state: the job lock (joblock), run
	// events (runevents), questions to the schedulers (questions), kill
	// requests (kills) and control requests (control). They learn about
	// this worker's runs only through the run table (runtable.go).

	cfg     Config
	streams stream.Config // cfg.Streams as package stream takes it
	log     *zap.Logger

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
		streams:    c.Streams.config(),
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
	if c.Metrics != nil {
		if err := c.Metrics.Register(w.metrics); err != nil {
			return nil, fmt.Errorf("worker: register metrics: %w", err)
		}
	}
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
