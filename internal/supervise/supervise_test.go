package supervise

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/fakeclock"
)

// wait bounds a test's waits for a signal: generous, since the moments
// come within milliseconds unless something is broken.
const wait = time.Minute

var errBoom = errors.New("boom")

// newTest returns a supervisor with millisecond backoffs, its signals
// initialised, and a channel that gets what Deps.Stop is called with.
func newTest(t *testing.T, cfg Config) (*Supervisor, *TestSignals, chan error) {
	t.Helper()
	if cfg.Backoff.Initial == 0 {
		cfg.Backoff = backoff.Backoff{Initial: time.Millisecond, Max: 8 * time.Millisecond}
	}
	var ts TestSignals
	ts.Init(t)
	stopped := make(chan error, 10)
	s, err := New(cfg, Deps{TestSignals: ts, Stop: func(err error) { stopped <- err }})
	if err != nil {
		t.Fatal(err)
	}
	return s, &ts, stopped
}

// fake is a component that fails its first fails runs with err (nil:
// returns nil) and then runs until its context ends.
type fake struct {
	fails int
	err   error
	runs  atomic.Int32
}

func (f *fake) Run(ctx context.Context) error {
	if int(f.runs.Add(1)) <= f.fails {
		return f.err
	}
	<-ctx.Done()
	return ctx.Err()
}

// run runs c under s in the background; the returned func stops it and
// returns what Run returned.
func run(s *Supervisor, c Component) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, c) }()
	return func() error { cancel(); return <-done }
}

// restarts is jetjob_component_restarts_total{component}.
func restarts(t *testing.T, s *Supervisor, component string) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.restarts.WithLabelValues(component).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestRestartsAfterError(t *testing.T) {
	s, ts, stopped := newTest(t, Config{})
	f := &fake{fails: 3, err: errBoom}
	end := run(s, Component{Name: "consumer", Run: f.Run})
	for i := range 3 {
		fl := ts.Failed.WaitOrTimeout(t, wait)
		if fl.Component != "consumer" || !errors.Is(fl.Err, errBoom) || fl.Fatal {
			t.Fatalf("failure %d: %+v", i+1, fl)
		}
		if got := ts.Restarted.WaitOrTimeout(t, wait); got != "consumer" {
			t.Fatalf("restarted %q", got)
		}
	}
	if got := restarts(t, s, "consumer"); got != 3 {
		t.Fatalf("jetjob_component_restarts_total = %v, want 3", got)
	}
	if d := s.Down(); len(d) != 0 {
		t.Fatalf("down after the restart: %+v", d)
	}
	if err := end(); err != nil {
		t.Fatalf("Run after the stop: %v", err)
	}
	if got := f.runs.Load(); got != 4 {
		t.Fatalf("runs: %d, want 4", got)
	}
	ts.Failed.RequireEmpty(t)
	if len(stopped) != 0 {
		t.Fatalf("a restartable failure stopped the process: %v", <-stopped)
	}
}

// Between the failure and the restart the component is down, with its
// error; a stop during the backoff ends it without a restart, and it is
// not down any more.
func TestDownUntilRestarted(t *testing.T) {
	s, ts, _ := newTest(t, Config{Backoff: backoff.Backoff{Initial: time.Hour}})
	f := &fake{fails: 1, err: errBoom}
	end := run(s, Component{Name: "subscriber", Run: f.Run})
	ts.Failed.WaitOrTimeout(t, wait)
	down := s.Down()
	if len(down) != 1 || down[0].Component != "subscriber" || down[0].Error != "boom" || down[0].Since.IsZero() {
		t.Fatalf("Down = %+v, want subscriber with boom", down)
	}
	var de *DownError
	if err := s.Err(); !errors.As(err, &de) || err.Error() != "component down: subscriber" || len(de.Down) != 1 {
		t.Fatalf("Err = %v", err)
	}
	if err := end(); err != nil {
		t.Fatalf("Run stopped during the backoff: %v", err)
	}
	if d := s.Down(); len(d) != 0 || s.Err() != nil {
		t.Fatalf("down after the stop: %+v", d)
	}
	if got := restarts(t, s, "subscriber"); got != 0 {
		t.Fatalf("restarts = %v, want 0", got)
	}
}

// A component that returns nil while it should run has failed as well.
func TestReturnWhileLiveIsFailure(t *testing.T) {
	s, ts, _ := newTest(t, Config{})
	f := &fake{fails: 1}
	end := run(s, Component{Name: "quiet", Run: f.Run})
	if fl := ts.Failed.WaitOrTimeout(t, wait); !errors.Is(fl.Err, ErrReturned) {
		t.Fatalf("failure %+v, want ErrReturned", fl)
	}
	ts.Restarted.WaitOrTimeout(t, wait)
	if err := end(); err != nil {
		t.Fatal(err)
	}
}

// What a component returns once its context ended is its normal end, not
// a failure.
func TestErrorAfterStopIsNoFailure(t *testing.T) {
	s, ts, stopped := newTest(t, Config{})
	end := run(s, Component{Name: "stopper", OnFailure: Stop, Run: func(ctx context.Context) error {
		<-ctx.Done()
		return errBoom
	}})
	if err := end(); err != nil {
		t.Fatal(err)
	}
	ts.Failed.RequireEmpty(t)
	if len(stopped) != 0 || len(s.Down()) != 0 {
		t.Fatalf("a normal end counted as a failure")
	}
}

func TestStopPolicyStopsTheProcess(t *testing.T) {
	s, ts, stopped := newTest(t, Config{})
	f := &fake{fails: 1, err: errBoom}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), Component{Name: "dispatch", OnFailure: Stop, Run: f.Run}) }()
	fl := ts.Failed.WaitOrTimeout(t, wait)
	if !fl.Fatal || fl.Backoff != 0 {
		t.Fatalf("failure %+v, want fatal", fl)
	}
	err := <-stopped
	if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "component dispatch failed") {
		t.Fatalf("Stop got %v", err)
	}
	if runErr := <-done; !errors.Is(runErr, errBoom) {
		t.Fatalf("Run returned %v", runErr)
	}
	if d := s.Down(); len(d) != 1 || d[0].Component != "dispatch" {
		t.Fatalf("Down = %+v: a component stopped for good stays down", d)
	}
	if f.runs.Load() != 1 {
		t.Fatalf("a Stop component ran %d times", f.runs.Load())
	}
}

// A panic is recovered and stops the process, even for a component that
// would be restarted after an error.
func TestPanicStopsTheProcess(t *testing.T) {
	s, ts, stopped := newTest(t, Config{})
	done := make(chan error, 1)
	go func() {
		done <- s.Run(context.Background(), Component{Name: "wheel", Run: func(context.Context) error { panic("nil map") }})
	}()
	if fl := ts.Failed.WaitOrTimeout(t, wait); !fl.Fatal {
		t.Fatalf("failure %+v, want fatal", fl)
	}
	if err := <-stopped; !strings.Contains(err.Error(), "panic: nil map") {
		t.Fatalf("Stop got %v", err)
	}
	if err := <-done; err == nil {
		t.Fatal("Run returned nil after a panic")
	}
	ts.Restarted.RequireEmpty(t)
}

// The backoff doubles up to its cap from one failure to the next, and
// starts again from Initial after a run that lasted Healthy.
func TestBackoffDoublesAndResetsWhenHealthy(t *testing.T) {
	s, ts, _ := newTest(t, Config{Backoff: backoff.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond},
		Healthy: time.Hour})
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s.now = clock.Now
	// Each run lasts (on the fake clock) what lasts says, then fails.
	lasts := []time.Duration{0, 0, 0, 0, time.Hour, 0}
	var n atomic.Int32
	end := run(s, Component{Name: "loop", Run: func(ctx context.Context) error {
		i := int(n.Add(1)) - 1
		if i >= len(lasts) {
			<-ctx.Done()
			return nil
		}
		clock.Advance(lasts[i])
		return errBoom
	}})
	want := []time.Duration{1, 2, 4, 4, 1, 2}
	for i, w := range want {
		if got := ts.Failed.WaitOrTimeout(t, wait).Backoff; got != w*time.Millisecond {
			t.Fatalf("backoff %d: %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Backoff: backoff.Backoff{Initial: -1}},
		{Backoff: backoff.Backoff{Max: -1}},
		{Healthy: -1},
	} {
		if _, err := New(c, Deps{}); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if got := (Config{Backoff: backoff.Backoff{Initial: 2 * time.Minute}}).withDefaults().Backoff.Max; got != 2*time.Minute {
		t.Errorf("Max below a large Initial: %s", got)
	}
}
