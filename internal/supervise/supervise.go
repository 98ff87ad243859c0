// Package supervise keeps a process's long-running components running. A
// component is a loop, Run(ctx) error, meant to return only when ctx ends;
// when it returns earlier (an error, or nil while ctx is live) it has
// failed, and the supervisor either restarts it after a backoff or, for a
// component that cannot safely run twice in one process, stops the process
// so that its orchestrator starts a fresh one. Either way the failure is
// logged, counted (jetjob_component_restarts_total) and visible: Down lists
// every component that is not running, which the scheduler's and the
// worker's /readyz report as 503.
//
// A panic in a component is recovered, logged with its stack and treated
// as a failure that stops the process, whatever the component's policy: a
// panic is a bug, and the component's in-memory state (a lock held, a map
// half updated) cannot be trusted by a restart in the same process, while
// a clean stop still releases what the process holds (leases, in-flight
// publishes) instead of leaving it to time out as a crash would. Only the
// component's own goroutine is covered: a goroutine it starts must recover
// its own panics.
//
// It is for scheduler/ and worker/ alike.
package supervise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/testsignal"
)

// Policy is what a failure of a component does.
type Policy int

const (
	// Restart runs the component again after a backoff: for components
	// whose state survives a return (in PostgreSQL, JetStream, or fields
	// their Run does not tear down).
	Restart Policy = iota
	// Stop stops the process (Deps.Stop): for components whose Run can run
	// only once (it closes channels, owns state that dies with it).
	Stop
)

func (p Policy) String() string {
	if p == Stop {
		return "stop"
	}
	return "restart"
}

// Component is one supervised loop.
type Component struct {
	// Name names it in logs, in /readyz and in the restarts metric.
	Name string
	// Run runs it until ctx ends.
	Run func(ctx context.Context) error
	// OnFailure says what a failure does (default Restart).
	OnFailure Policy
}

// Defaults of Config.
const (
	DefaultInitial = time.Second
	DefaultMax     = time.Minute
	DefaultHealthy = time.Minute
)

// Config tunes restarts. Zero values mean the defaults.
type Config struct {
	// Backoff is the wait before each restart of a component: Initial
	// (default 1 s) after its first failure, doubling up to Max (default
	// 1 min). Each component has its own.
	Backoff backoff.Backoff
	// Healthy is how long a component must have run before it failed for
	// its backoff to start again from Initial (default 1 min): a
	// component that fails once a day restarts at once, one that fails
	// at every start is not hammered.
	Healthy time.Duration
}

// Validate says which field is wrong.
func (c Config) Validate() error {
	switch {
	case c.Backoff.Initial < 0:
		return fmt.Errorf("supervise: Backoff.Initial must not be negative, got %s", c.Backoff.Initial)
	case c.Backoff.Max < 0:
		return fmt.Errorf("supervise: Backoff.Max must not be negative, got %s", c.Backoff.Max)
	case c.Healthy < 0:
		return fmt.Errorf("supervise: Healthy must not be negative, got %s", c.Healthy)
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Backoff.Initial = cmp.Or(c.Backoff.Initial, DefaultInitial)
	c.Backoff.Max = cmp.Or(c.Backoff.Max, max(DefaultMax, c.Backoff.Initial))
	c.Healthy = cmp.Or(c.Healthy, DefaultHealthy)
	return c
}

// Deps are what a supervisor reports to.
type Deps struct {
	// Log gets a line per failure and restart; nil logs nothing.
	Log *zap.Logger
	// Stop stops the process cleanly; it is called when a component with
	// policy Stop fails, or any component panics, with an error naming
	// the component. It must not block on the component's return. nil:
	// the failing component just stays down.
	Stop func(error)
	// Restarts counts restarts by component (one label, "component"):
	// nil is jetjob_component_restarts_total, the scheduler's. A process
	// whose registry may hold another supervisor's counter (jetjob-scheduler
	// dev runs a worker beside the scheduler) gives a counter of its own
	// name.
	Restarts *prometheus.CounterVec
	// TestSignals: see TestSignals.
	TestSignals TestSignals
}

// Failure is one failure of a component, as the Failed test signal
// reports it.
type Failure struct {
	Component string
	Err       error
	// Backoff is the wait before the restart; 0 when the failure stops
	// the process instead.
	Backoff time.Duration
	// Fatal is set when the failure stops the process.
	Fatal bool
}

// TestSignals are the supervisor's moments (package internal/testsignal).
// Down is updated before each fires.
type TestSignals struct {
	// Failed fires when a component failed (it is in Down from then).
	Failed testsignal.Signal[Failure]
	// Restarted fires, with the component's name, when a failed
	// component is started again (it has left Down).
	Restarted testsignal.Signal[string]
}

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testsignal.TB) {
	ts.Failed.Init(tb)
	ts.Restarted.Init(tb)
}

// Down is a component that is not running: failed and waiting for its
// restart, or failed for good (the process is stopping).
type Down struct {
	Component string    `json:"component"`
	Error     string    `json:"error"`
	Since     time.Time `json:"since"`
}

// DownError is the error of components being down, for readiness checks:
// its message names them, and a caller that wants the list takes it with
// errors.As.
type DownError struct{ Down []Down }

func (e *DownError) Error() string {
	names := make([]string, len(e.Down))
	for i, d := range e.Down {
		names[i] = d.Component
	}
	return "component down: " + strings.Join(names, ", ")
}

// ErrReturned is the failure of a component whose Run returned nil while
// its context was live: it stopped working without saying why.
var ErrReturned = errors.New("returned while its context was live")

// Supervisor runs components and keeps the list of those that are down.
// One serves a whole process; it is safe for concurrent use.
type Supervisor struct {
	cfg      Config
	log      *zap.Logger
	stop     func(error)
	signals  TestSignals
	restarts *prometheus.CounterVec
	now      func() time.Time

	mu   sync.Mutex
	down map[string]Down
}

// New returns a supervisor; Run supervises one component.
func New(cfg Config, deps Deps) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = zap.NewNop()
	}
	restarts := deps.Restarts
	if restarts == nil {
		restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_component_restarts_total",
			Help: "Restarts of a component of this process (a loop that failed: returned an error, or returned while it should run), by component.",
		}, []string{"component"})
	}
	return &Supervisor{cfg: cfg.withDefaults(), log: log, stop: deps.Stop, signals: deps.TestSignals, now: time.Now,
		down: map[string]Down{}, restarts: restarts}, nil
}

// Collector is the restarts counter, for the process's registry.
func (s *Supervisor) Collector() prometheus.Collector { return s.restarts }

// Down lists the components that are down now, by name.
func (s *Supervisor) Down() []Down {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Down, 0, len(s.down))
	for _, d := range s.down {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Down) int { return strings.Compare(a.Component, b.Component) })
	return out
}

// Err is a *DownError listing the components that are down, or nil.
func (s *Supervisor) Err() error {
	if down := s.Down(); len(down) > 0 {
		return &DownError{Down: down}
	}
	return nil
}

// Run runs c until ctx ends, restarting it after each failure (or, by its
// policy or after a panic, stopping the process: Run then returns the
// failure). A return of c after ctx ended is its normal end, whatever it
// returned: Run returns nil then.
func (s *Supervisor) Run(ctx context.Context, c Component) error {
	wait := s.cfg.Backoff
	log := s.log.With(zap.String("component", c.Name))
	for {
		started := s.now()
		err, panicked := s.call(ctx, c, log)
		if ctx.Err() != nil {
			s.up(c.Name)
			return nil
		}
		if err == nil {
			err = ErrReturned
		}
		if panicked || c.OnFailure == Stop {
			err = fmt.Errorf("component %s failed and is not restarted in this process: %w", c.Name, err)
			s.markDown(c.Name, err)
			log.Error("component failed; stopping the process so that it starts afresh", zap.Error(err))
			s.signals.Failed.Signal(Failure{Component: c.Name, Err: err, Fatal: true})
			if s.stop != nil {
				s.stop(err)
			}
			return err
		}
		if s.now().Sub(started) >= s.cfg.Healthy {
			wait.Reset()
		}
		d := wait.Next()
		s.markDown(c.Name, err)
		log.Error("component failed; restarting it", zap.Duration("backoff", d), zap.Error(err))
		s.signals.Failed.Signal(Failure{Component: c.Name, Err: err, Backoff: d})
		if backoff.Sleep(ctx, d) != nil {
			s.up(c.Name) // stopping: it is not down, it is over
			return nil
		}
		s.restarts.WithLabelValues(c.Name).Inc()
		s.up(c.Name)
		log.Info("component restarted")
		s.signals.Restarted.Signal(c.Name)
	}
}

// call runs c once, turning a panic into an error that carries its stack.
func (s *Supervisor) call(ctx context.Context, c Component, log *zap.Logger) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			log.Error("component panicked", zap.Any("panic", v), zap.ByteString("stack", stack))
			err, panicked = fmt.Errorf("panic: %v", v), true
		}
	}()
	return c.Run(ctx), false
}

func (s *Supervisor) markDown(name string, err error) {
	s.mu.Lock()
	s.down[name] = Down{Component: name, Error: err.Error(), Since: s.now()}
	s.mu.Unlock()
}

func (s *Supervisor) up(name string) {
	s.mu.Lock()
	delete(s.down, name)
	s.mu.Unlock()
}
