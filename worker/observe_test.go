package worker

// What the tests observe of a worker from outside: the events it publishes
// (read from JETJOB_EVENTS through a consumer of the test's own), and the
// handlers running at once (gauge).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// events reads JETJOB_EVENTS through the test's own consumer (the stream is
// a work queue: this is the only consumer on jetjob.event.>).
type events struct {
	t    *testing.T
	cons jetstream.Consumer
	all  []wire.Event
}

func (e *env) events() *events {
	e.t.Helper()
	c, err := e.js.CreateOrUpdateConsumer(e.ctx(), stream.Events, jetstream.ConsumerConfig{
		Durable: "test-events", FilterSubject: "jetjob.event.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return &events{t: e.t, cons: c}
}

// wantRanOnce checks that run executed once (its handler called execs
// times) and reported one started and one finished event.
func (ev *events) wantRanOnce(run int64, execs int32) {
	ev.t.Helper()
	if execs != 1 {
		ev.t.Errorf("run %d: %d executions, want 1", run, execs)
	}
	if got := ev.run(run); len(got) != 2 {
		ev.t.Errorf("run %d: events %+v, want one started and one finished", run, got)
	}
}

// read appends what arrives within wait.
func (ev *events) read(wait time.Duration) int {
	ev.t.Helper()
	m, err := ev.cons.Next(jetstream.FetchMaxWait(wait))
	if err != nil {
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
			return 0
		}
		ev.t.Fatalf("reading events: %v", err)
	}
	got, err := wire.DecodeEvents(m.Data())
	if err != nil {
		ev.t.Fatalf("worker published an invalid events message: %v", err)
	}
	if err := m.Ack(); err != nil {
		ev.t.Fatal(err)
	}
	ev.all = append(ev.all, got...)
	return len(got)
}

// run returns the events of one run seen so far, in arrival order.
func (ev *events) run(runID int64) []wire.Event {
	var out []wire.Event
	for _, e := range ev.all {
		if e.RunID == runID {
			out = append(out, e)
		}
	}
	return out
}

func (ev *events) finished(runID int64) *wire.Event {
	for _, e := range ev.run(runID) {
		if e.Kind == wire.EventFinished {
			return &e
		}
	}
	return nil
}

// waitFor reads until cond holds.
func (ev *events) waitFor(what string, cond func() bool) {
	ev.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			ev.t.Fatalf("timed out after %s waiting for %s; events: %+v", waitLimit, what, ev.all)
		}
		ev.read(200 * time.Millisecond)
	}
}

// waitFinished reads until every run has a finished event and returns them.
func (ev *events) waitFinished(runIDs ...int64) map[int64]wire.Event {
	ev.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		out := make(map[int64]wire.Event)
		for _, id := range runIDs {
			if f := ev.finished(id); f != nil {
				out[id] = *f
			}
		}
		if len(out) == len(runIDs) {
			return out
		}
		if time.Now().After(deadline) {
			ev.t.Fatalf("runs finished: %d of %d after %s; events: %+v", len(out), len(runIDs), waitLimit, ev.all)
		}
		ev.read(200 * time.Millisecond)
	}
}

// wantSucceeded fails the test for each run in got (a waitFinished
// answer) that did not succeed, naming its status and message.
func wantSucceeded(t *testing.T, got map[int64]wire.Event) {
	t.Helper()
	for id, f := range got {
		if f.Status != wire.StatusSucceeded {
			t.Errorf("run %d: %s %q, want SUCCEEDED", id, f.Status, f.Message)
		}
	}
}

// expectNone fails if any event arrives within wait. Proving an absence
// needs some bound; it is only used after everything expected has arrived.
func (ev *events) expectNone(wait time.Duration) {
	ev.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if n := ev.read(time.Until(deadline)); n > 0 {
			ev.t.Fatalf("unexpected events: %+v", ev.all[len(ev.all)-n:])
		}
	}
}

// gauge counts the handlers running at once, and the most seen at once;
// a test waits for a count with waitFor.
type gauge struct {
	cur, peak atomic.Int32

	mu      sync.Mutex
	changed chan struct{} // closed, and replaced, at each change of cur
}

func (g *gauge) enter() {
	c := g.cur.Add(1)
	for p := g.peak.Load(); c > p && !g.peak.CompareAndSwap(p, c); p = g.peak.Load() {
	}
	g.change()
}

func (g *gauge) leave() {
	g.cur.Add(-1)
	g.change()
}

func (g *gauge) change() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.changed != nil {
		close(g.changed)
	}
	g.changed = make(chan struct{})
}

// waitFor waits until want handlers run, checking at each change.
func (g *gauge) waitFor(t *testing.T, what string, want int32) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		changed := g.changed // taken before the check: no change is missed
		g.mu.Unlock()
		if g.cur.Load() == want {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s: %d handlers running, want %d", waitLimit, what, g.cur.Load(), want)
		}
	}
}

// blocking is a handler that counts itself in g while it waits for release.
func (g *gauge) blocking(release <-chan struct{}) HandlerFunc {
	return func(context.Context, *Job) error {
		g.enter()
		defer g.leave()
		<-release
		return nil
	}
}

// releaseOneByOne lets n handlers blocked on release finish one at a
// time, checking before each that as many run as the limit allows (all
// that are left, at most limit) and never more.
func (g *gauge) releaseOneByOne(t *testing.T, release chan<- struct{}, limit, n int) {
	t.Helper()
	for done := 0; done < n; done++ {
		want := int32(min(limit, n-done))
		g.waitFor(t, fmt.Sprintf("%d handlers running with %d done", want, done), want)
		if p := g.peak.Load(); p > int32(limit) {
			t.Fatalf("%d handlers ran at once, concurrency %d", p, limit)
		}
		release <- struct{}{}
	}
}
