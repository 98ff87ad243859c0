// Package testsignal lets a component tell a test about its key moments (a
// batch written, events applied, a shard planned, leases changed), so that
// the test waits for the moment itself instead of polling the database for
// its traces or sleeping. It is River's testsignal idea.
//
// A component holds its signals in a TestSignals struct, one Signal per
// moment, and calls Signal at the moment. In production nothing initialises
// them and Signal does nothing but one nil check. A test calls Init on the
// component's TestSignals before the component starts, then waits with
// WaitFor, WaitUntil or WaitOrTimeout.
//
// A Signal never blocks the component and never fails it: values queue up
// (to a generous limit) until the test takes them, so a test that waits
// late still sees what happened before; one that waits for a condition
// skips the values that do not meet it.
package testsignal

import (
	"sync"
	"time"
)

// TB is the part of testing.TB a signal uses. Taking it as an interface
// keeps package testing out of the production binaries that hold signals.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// limit bounds the values queued and not yet taken: a signal that fires
// every planning round keeps a test that never waits on it from growing
// without end. A test that waits after the limit was reached fails, saying
// so, rather than miss values silently.
const limit = 100_000

// Signal is one key moment of a component, reported with a value of type T.
// The zero value is inert. A copy of an initialised Signal shares its queue
// with the original, so a composition root can hold initialised signals and
// hand them to the components it builds; several components may feed one
// Signal. Only one goroutine should wait on a Signal at a time.
type Signal[T any] struct {
	q *queue[T]
}

type queue[T any] struct {
	mu         sync.Mutex
	values     []T
	overflowed bool
	ended      bool
	// ready holds a token once a value is queued, so a waiter that found
	// the queue empty wakes when the next value comes.
	ready chan struct{}
}

// Init makes s record the values signalled from now on, until tb ends.
// Call it before the component that signals starts: Init is not
// synchronised with Signal.
func (s *Signal[T]) Init(tb TB) {
	q := &queue[T]{ready: make(chan struct{}, 1)}
	s.q = q
	// A component may outlive its test by a little (stopping): its
	// signals then go nowhere.
	tb.Cleanup(func() {
		q.mu.Lock()
		q.ended, q.values = true, nil
		q.mu.Unlock()
	})
}

// Signal reports the moment with v. It returns at once: it does nothing
// unless a test initialised s, and never waits for the test to take v.
func (s *Signal[T]) Signal(v T) {
	q := s.q
	if q == nil {
		return
	}
	q.mu.Lock()
	switch {
	case q.ended:
	case len(q.values) >= limit:
		q.overflowed = true
	default:
		q.values = append(q.values, v)
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default: // a token is there already
	}
}

// On reports whether a test initialised s: a component checks it before
// building a value only a test would read, so that production pays nothing.
func (s *Signal[T]) On() bool { return s.q != nil }

// WaitOrTimeout takes the next value, waiting up to timeout for it.
func (s *Signal[T]) WaitOrTimeout(tb TB, timeout time.Duration) T {
	tb.Helper()
	return s.WaitFor(tb, timeout, "the next test signal", func(T) bool { return true })
}

// WaitFor takes values until one satisfies match and returns it, failing
// the test with "timed out after <timeout> waiting for <what>" if none
// comes within timeout. The values before it are dropped.
func (s *Signal[T]) WaitFor(tb TB, timeout time.Duration, what string, match func(T) bool) T {
	tb.Helper()
	q := s.initialised(tb)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for late := false; ; {
		values, overflowed := q.take()
		for i, v := range values {
			if match(v) {
				q.putBack(values[i+1:])
				return v
			}
		}
		if overflowed {
			tb.Fatalf("waiting for %s: more than %d test signals were never taken; wait sooner or do not Init this signal", what, limit)
		}
		if late {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-q.ready:
		case <-deadline.C:
			late = true // one more look: a value may have come with the deadline
		}
	}
}

// WaitUntil waits until cond holds, checking it at once and again after
// each value signalled (which it takes), and fails the test if it does not
// within timeout. cond must read state whose every change s reports (the
// shards a scheduler holds, say, with the signal of its lease changes):
// then the wait is exact, with no polling.
func (s *Signal[T]) WaitUntil(tb TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	q := s.initialised(tb)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// A change after a check leaves a token in ready, so it is never
	// missed; the values themselves do not matter here.
	for late := false; !cond(); {
		if late {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		q.take()
		select {
		case <-q.ready:
		case <-deadline.C:
			late = true
		}
	}
}

// RequireEmpty fails the test if a value was signalled and not taken.
func (s *Signal[T]) RequireEmpty(tb TB) {
	tb.Helper()
	q := s.initialised(tb)
	values, overflowed := q.take()
	switch {
	case len(values) > 0:
		tb.Fatalf("test signal should be empty; got %d values, the first %+v", len(values), values[0])
	case overflowed:
		tb.Fatalf("test signal should be empty; more than %d values were signalled", limit)
	}
}

func (s *Signal[T]) initialised(tb TB) *queue[T] {
	tb.Helper()
	if s.q == nil {
		tb.Fatalf("test signal not initialised: call Init before the component starts")
	}
	return s.q
}

// take removes and returns every queued value.
func (q *queue[T]) take() ([]T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	values := q.values
	q.values = nil
	return values, q.overflowed
}

// putBack returns values a waiter took but did not need to the front of
// the queue, so the next wait sees them in order.
func (q *queue[T]) putBack(values []T) {
	if len(values) == 0 {
		return
	}
	q.mu.Lock()
	q.values = append(values[:len(values):len(values)], q.values...)
	q.mu.Unlock()
}
