package worker

import (
	"context"
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// On stop, a running handler may finish within ShutdownGrace: its result is
// published, its trigger acked, and nothing of the worker keeps running.
func TestGracefulStopFinishesRunningHandler(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	started := make(chan struct{})
	proceed := make(chan struct{})
	ctxErr := make(chan error, 1)
	r := e.start(Config{ShutdownGrace: waitLimit}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			close(started)
			<-proceed
			ctxErr <- ctx.Err()
			return nil
		})
	})
	e.publish(trigger(1, "h", ""))
	recv(t, "the handler to start", started)

	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	// cancel() has run once stopCtx is done; wait for that, not for time.
	eventually(t, "the stop to begin", func() bool { return r.w.stopCtx.Err() != nil })
	close(proceed)
	if err := recv(t, "Run to return", stopped); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := <-ctxErr; err != nil {
		t.Errorf("handler context cancelled within the shutdown grace: %v", err)
	}
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left after a graceful stop, want 0", left)
	}
	if info := e.groupConsumer(); info.NumAckPending != 0 {
		t.Errorf("%d triggers unacknowledged after the stop", info.NumAckPending)
	}
	fin := ev.waitFinished(1)
	if fin[1].Status != wire.StatusSucceeded {
		t.Errorf("finished %+v", fin[1])
	}
	if g := workerGoroutines(); len(g) > 0 {
		t.Errorf("goroutines left after Run returned:\n%s", g)
	}
}

// A handler still running at the end of ShutdownGrace is cancelled and its
// trigger handed back; another worker then runs it.
func TestStopHandsBackUnfinishedRun(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	started := make(chan struct{})
	r := e.start(Config{ID: "first", ShutdownGrace: 200 * time.Millisecond}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			close(started)
			<-ctx.Done()
			return context.Cause(ctx)
		})
	})
	e.publish(trigger(1, "h", ""))
	recv(t, "the handler to start", started)
	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if left := e.triggersLeft(); left != 1 {
		t.Fatalf("%d triggers in the stream after the hand-back, want 1", left)
	}
	ev.waitFor("the started event", func() bool { return len(ev.run(1)) > 0 })
	ev.expectNone(2 * testFetchWait)
	if f := ev.finished(1); f != nil {
		t.Fatalf("a handed-back run was reported finished: %+v", f)
	}

	jobs := make(chan Job, 1)
	e.start(Config{ID: "second"}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			jobs <- *job
			return nil
		})
	})
	if job := recv(t, "the second worker to run the trigger", jobs); job.Delivery != 2 {
		t.Errorf("delivery %d, want 2", job.Delivery)
	}
	fin := ev.waitFinished(1)
	if fin[1].Status != wire.StatusSucceeded || fin[1].WorkerID != "second" {
		t.Errorf("finished %+v, want SUCCEEDED by the second worker", fin[1])
	}
	var starts []string
	for _, x := range ev.run(1) {
		if x.Kind == wire.EventStarted {
			starts = append(starts, x.WorkerID)
		}
	}
	if len(starts) != 2 || starts[0] != "first" || starts[1] != "second" {
		t.Errorf("started by %v, want a start per delivery: [first second]", starts)
	}
	eventually(t, "the trigger to be acked", func() bool { return e.triggersLeft() == 0 })
}
