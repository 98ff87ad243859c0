package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/shared/wire"
)

// loopFaults fails the starts of the loops a test names until it clears
// them; a fault may panic.
type loopFaults struct {
	mu  sync.Mutex
	set map[string]func() error
}

func (f *loopFaults) fail(loop string, fault func() error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set == nil {
		f.set = map[string]func() error{}
	}
	f.set[loop] = fault
}

func (f *loopFaults) clear(loop string) {
	f.mu.Lock()
	delete(f.set, loop)
	f.mu.Unlock()
}

func (f *loopFaults) check(loop string) error {
	f.mu.Lock()
	fault := f.set[loop]
	f.mu.Unlock()
	if fault == nil {
		return nil
	}
	return fault()
}

// supervisedWorker makes w restart its loops within milliseconds, signal
// into ts and fail the loop starts f says. Call it from start's setup.
func supervisedWorker(t *testing.T, w *Worker, ts *supervise.TestSignals, f *loopFaults) {
	t.Helper()
	sv, err := newSupervision(w, supervise.Config{Backoff: backoff.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}}, *ts)
	if err != nil {
		t.Fatal(err)
	}
	w.sup.super, w.sup.fault = sv, f.check
	w.metrics = newMetrics(w) // with the new restarts counter
}

// The kill-request watch fails at its starts: Ready names it while it is
// down, and once it starts again the worker is ready and runs triggers.
func TestSupervisedKillWatchRestarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ts supervise.TestSignals
	ts.Init(t)
	f := &loopFaults{}
	f.fail("kill requests", func() error { return errors.New("open kill requests: injected") })
	ran := make(chan int64, 1)
	r := e.start(Config{}, func(w *Worker) {
		supervisedWorker(t, w, &ts, f)
		w.Handle("h", func(_ context.Context, j *Job) error { ran <- j.RunID; return nil })
	})
	ts.Failed.WaitUntil(t, waitLimit, "Ready to name the kill-request watch", func() bool {
		err := r.w.Ready()
		return err != nil && strings.Contains(err.Error(), "kill requests")
	})
	f.clear("kill requests")
	ts.Restarted.WaitUntil(t, waitLimit, "the worker ready again", func() bool { return r.w.Ready() == nil })
	e.publish(trigger(7, "h", ""))
	if got := recv(t, "the run", ran); got != 7 {
		t.Fatalf("ran %d", got)
	}
	if f := e.events().waitFinished(7)[7]; f.Status != wire.StatusSucceeded {
		t.Fatalf("finished %+v", f)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A fetch lane panics: the panic is recovered, the worker stops cleanly
// and Run returns an error naming the lane. Before supervision the panic
// took the whole process down with no stop.
func TestSupervisedFetchPanicStopsWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ts supervise.TestSignals
	ts.Init(t)
	f := &loopFaults{}
	f.fail("fetch shared", func() error { panic("injected") })
	r := e.start(Config{}, func(w *Worker) {
		supervisedWorker(t, w, &ts, f)
		w.Handle("h", func(context.Context, *Job) error { return nil })
	})
	want := "component fetch shared failed and is not restarted in this process: panic: injected"
	if err := r.wait(); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run: %v, want %q", err, want)
	}
	if err := r.w.Ready(); err == nil || !strings.Contains(err.Error(), "fetch shared") {
		t.Fatalf("Ready after the failure: %v", err)
	}
	ts.Restarted.RequireEmpty(t)
}
