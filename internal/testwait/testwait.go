// Package testwait holds the waiting helpers the tests of every package
// share. It is for tests only: no non-test file imports it.
//
// Prefer, in this order: a test signal (package internal/testsignal) when a
// component reports the moment the test waits for; Eventually when the
// test can only observe a state from outside (a row, an HTTP answer);
// SleepUntil only when the scenario is about the wall clock itself. A test
// never sleeps to let something happen.
package testwait

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/backoff"
)

// first and most are the bounds of Eventually's polling interval: it polls
// every first at the start, so a condition that holds soon is seen soon,
// and backs off to every most, so a long wait does not load a shared
// machine with checks (which often query PostgreSQL or NATS).
const (
	first = 5 * time.Millisecond
	most  = 50 * time.Millisecond
)

// Eventually polls cond until it holds, failing the test with "timed out
// after <timeout> waiting for <what>" if it still does not once timeout
// has passed.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Poll polls cond as Eventually does and reports whether it held before
// timeout passed: for helpers that explain a timeout themselves (with the
// rows still wrong, say) or return an error instead of failing a test.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	every := backoff.Backoff{Initial: first, Max: most}
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every.Next())
	}
	return true
}

// SleepUntil blocks until the wall clock reaches instant. It is not a way
// to wait for something to happen (use a test signal or Eventually): it is
// for scenarios that are about time passing — an outage of a given length
// while jobs fire every second, a fault injected between two fires — where
// the instant itself is what the test sets up.
func SleepUntil(instant time.Time) { time.Sleep(time.Until(instant)) }

// SecondsBetween lists the whole seconds in [from, to]: the fires of an
// every-second job during a span such a scenario waited through, which
// the scenarios check one by one afterwards.
func SecondsBetween(from, to time.Time) []time.Time {
	var out []time.Time
	for s := from.Truncate(time.Second); !s.After(to); s = s.Add(time.Second) {
		if !s.Before(from) {
			out = append(out, s)
		}
	}
	return out
}

// Recv waits up to limit for a value on ch and returns it; it fails the
// test, naming what it waited for, when none comes.
func Recv[T any](t testing.TB, limit time.Duration, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("timed out after %s waiting for %s", limit, what)
		panic("unreachable")
	}
}

// Fails runs f with a testing.TB whose Fatalf ends f, not the test, and
// returns the message f failed with; t fails if f does not fail. It is for
// testing the helpers that fail tests, such as Eventually.
func Fails(t testing.TB, f func(tb testing.TB)) string {
	t.Helper()
	fl := &failer{TB: t}
	func() {
		defer func() {
			if r := recover(); r != fl {
				t.Fatalf("recovered %v, want a failure", r)
			}
		}()
		f(fl)
	}()
	return fl.msg
}

// failer records Fatalf instead of ending the test.
type failer struct {
	testing.TB
	msg string
}

func (f *failer) Helper() {}
func (f *failer) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}
