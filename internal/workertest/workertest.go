// Package workertest runs a worker (package worker) for the tests of
// what stands around it: the built-in handlers, NATS permissions, the
// scheduler's routing. It is for tests only: no non-test file imports it.
package workertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/worker"
)

// StopLimit bounds how long stop waits for Run to return: a stop that
// hangs becomes a failure, not a stuck test run.
const StopLimit = 30 * time.Second

// Start runs w until stop is called, or the test ends. stop cancels Run's
// context, waits for it to return and returns its error (the same on
// every call); a Run still going after StopLimit fails the test.
func Start(t testing.TB, w *worker.Worker) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var (
		once sync.Once
		err  error
	)
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(StopLimit):
				t.Errorf("worker Run did not return within %s of its stop", StopLimit)
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}
