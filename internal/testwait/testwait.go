// Package testwait holds the polling helper the tests of every package
// share. It is for tests only: no non-test file imports it.
package testwait

import (
	"testing"
	"time"
)

// First and most are the bounds of Eventually's polling interval: it polls
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
	deadline := time.Now().Add(timeout)
	for every := first; !cond(); every = min(2*every, most) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(every)
	}
}
