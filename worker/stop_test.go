package worker

import (
	"context"
	"testing"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/joblock"
)

// A run of another worker waits for a job's lock held by a run of a worker
// that is stopping. The stopping worker still answers whether its run is
// active, and once that run ends (within the shutdown grace) the lock goes
// to the waiter at once: not after stream.LockTTL, the time it takes a
// lock whose holder's worker is gone to be taken over. A rolling restart
// of workers must not make fires wait for locks.
func TestStoppingWorkerHandsItsLockOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	// Run 2 may reach a first and be handed back: the start check that
	// follows finds it never started.
	e.answerStartChecks(func(wire.StartQuery) wire.RunStart { return wire.RunStart{Status: wire.StatusTriggered} })
	release := make(chan struct{})
	// One set of lock signals for both workers: run 2 waits on either.
	var locks joblock.TestSignals
	locks.Init(t)
	a := e.start(Config{ID: "a", ShutdownGrace: waitLimit}, func(w *Worker) {
		w.signals.locks = locks
		w.Handle("h", func(ctx context.Context, job *Job) error {
			if job.Params == "block" {
				<-release
			}
			return nil
		})
	})
	first := trigger(1, "h", "block")
	first.JobID = 7
	e.publish(first)
	ev.waitFor("run 1 to start on a", func() bool { return len(ev.run(1)) > 0 })

	e.start(Config{ID: "b"}, func(w *Worker) {
		w.signals.locks = locks
		w.Handle("h", func(ctx context.Context, job *Job) error { return nil })
	})
	second := trigger(2, "h", "")
	second.JobID = 7
	e.publish(second)
	// Wherever run 2 was delivered, it now waits for run 1's lock.
	locks.Waiting.WaitFor(t, waitLimit, "run 2 to queue for the job's lock", func(run int64) bool { return run == 2 })

	stopped := a.beginStop()
	close(release)
	if err := recv(t, "a to stop", stopped); err != nil {
		t.Fatal(err)
	}
	fin := ev.waitFinished(1, 2)
	if fin[1].Status != wire.StatusSucceeded || fin[1].WorkerID != "a" {
		t.Errorf("run 1: %+v, want SUCCEEDED on a", fin[1])
	}
	if fin[2].Status != wire.StatusSucceeded || fin[2].WorkerID != "b" {
		t.Errorf("run 2: %+v, want SUCCEEDED on b", fin[2])
	}
	// Handed on, not left to go stale: well under the LockTTL a dead
	// holder's lock takes.
	if wait := fin[2].At.Sub(fin[1].At); wait >= stream.LockTTL/2 {
		t.Errorf("run 2 finished %s after run 1, want well within %s (the lock went stale instead of being handed on)",
			wait, stream.LockTTL/2)
	}
}
