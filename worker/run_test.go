package worker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

// On stop, a running handler may finish within ShutdownGrace: its result is
// published, its trigger acked, and nothing of the worker keeps running.
//
// Not parallel: it proves a stopped worker left no goroutine behind by
// listing every goroutine of the process running worker code
// (workerGoroutines), which would see the workers of tests beside it.
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

	stopped := r.beginStop()
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

// A handler still running at the end of ShutdownGrace is cancelled, and
// its run ends LOST, naming the stopping worker: its attempt has started,
// so it must not start again (the job's retry policy decides what
// follows). The trigger is acknowledged: no other worker runs it.
func TestStopEndsUnfinishedRunLost(t *testing.T) {
	t.Parallel()
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
	fin := ev.waitFinished(1)
	if f := fin[1]; f.Status != wire.StatusLost || f.WorkerID != "first" ||
		!strings.Contains(f.Message, "its worker first stopped while it ran") {
		t.Errorf("finished %+v, want LOST on worker first, saying it stopped", f)
	}
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers in the stream after the stop, want 0", left)
	}

	ran := make(chan Job, 1)
	e.start(Config{ID: "second"}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			ran <- *job
			return nil
		})
	})
	ev.expectNone(2 * testFetchWait)
	select {
	case j := <-ran:
		t.Errorf("the run started again on the second worker: %+v", j)
	default:
	}
}

// While the result cannot be published, the trigger stays unacknowledged
// (a crash now would mean a redelivery, not a lost result); publishing is
// retried until it succeeds, and only then is the trigger acked.
func TestResultPublishRetriedBeforeAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	logger, observed := observedLogger(t, zap.WarnLevel)
	proceed := make(chan struct{})
	started := make(chan struct{})
	r := e.start(Config{Logger: logger}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			close(started)
			<-proceed
			return nil
		})
	})
	e.publish(trigger(1, "h", ""))
	recv(t, "the handler to start", started)
	// Take the events stream away (its started event goes with it).
	if err := e.js.DeleteStream(e.ctx(), stream.Events); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	testwait.Eventually(t, waitLimit, "two failed publish attempts", func() bool {
		return observed.FilterMessage("publishing run events failed; retrying").Len() >= 2
	})
	if left, pending := e.triggersLeft(), e.groupConsumer().NumAckPending; left != 1 || pending != 1 {
		t.Fatalf("result unpublished, yet %d triggers left and %d pending; want the trigger kept, unacked", left, pending)
	}
	if err := stream.Provision(e.ctx(), e.js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	// The result is stored, and only then the trigger acked.
	r.w.signals.events.Flushed.WaitFor(t, waitLimit, "run 1's result stored", func(evs []wire.Event) bool {
		return slices.ContainsFunc(evs, func(ev wire.Event) bool { return ev.RunID == 1 && ev.Kind == wire.EventFinished })
	})
	r.waitProcessed(1)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once the run was processed, want it acked", left)
	}
	ev := e.events()
	if f := ev.waitFinished(1)[1]; f.Status != wire.StatusSucceeded {
		t.Errorf("finished %+v", f)
	}
}

// A connection closed under the worker ends Run with an error instead of a
// worker that silently does nothing; its running handler is cancelled.
func TestClosedConnectionEndsRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan struct{})
	r := e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})
	})
	e.publish(trigger(1, "h", ""))
	recv(t, "the handler to start", started)
	r.w.cfg.NATS.Close()
	if err := r.wait(); err == nil || !strings.Contains(err.Error(), "connection closed") {
		t.Fatalf("Run: %v, want a connection closed error", err)
	}
	if left := e.triggersLeft(); left != 1 {
		t.Errorf("%d triggers left, want the unfinished one kept for redelivery", left)
	}
}
