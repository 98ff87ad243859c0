package scheduler_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// Kill stops a run wherever it is: a running one is cancelled on its
// worker, a waiting one never starts, an ended one answers 409.
func TestKillRun(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("forever", func(ctx context.Context, j *worker.Job) error {
			<-ctx.Done()
			return ctx.Err()
		})
	})
	ctx := context.Background()

	// Running: cancelled on its worker.
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "forever", Handler: "forever", ScheduleType: "none"})
	run := trigger(t, sys.api, job.ID, nil)
	// The run becomes RUNNING, then CANCELLED, only when the results
	// applier applies its worker's events (a kill of a published run is
	// the worker's to report): each applied batch is the moment to look.
	applied := &sys.signals.Results.Applied
	applied.WaitUntil(t, 10*time.Second, "the run to be RUNNING", func() bool {
		r, err := sys.api.GetRun(ctx, run.ID)
		return err == nil && r.Status == "RUNNING"
	})
	if _, err := sys.api.KillRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	var r *apiv1.Run
	applied.WaitUntil(t, 10*time.Second, "the killed run to end CANCELLED", func() bool {
		var err error
		r, err = sys.api.GetRun(ctx, run.ID)
		return err == nil && r.Status == "CANCELLED"
	})
	if !strings.Contains(r.Message, "killed") {
		t.Errorf("message %q does not say it was killed", r.Message)
	}
	if _, err := sys.api.KillRun(ctx, run.ID); !isAPIError(err, http.StatusConflict) {
		t.Errorf("killing an ended run: %v, want 409", err)
	}

	// Waiting: a run of a group with no worker yet is killed, then a
	// worker of that group comes up and must not start it.
	if _, err := sys.api.CreateGroup(ctx, apiv1.Group{Name: "later"}); err != nil {
		t.Fatal(err)
	}
	lj := createJob(t, sys.api, apiv1.JobSpec{Group: "later", Name: "waits", Handler: "count", ScheduleType: "none"})
	waiting := trigger(t, sys.api, lj.ID, nil)
	// With no worker of its group, only dispatch's write records it.
	sys.signals.Dispatch.Flushed.WaitUntil(t, 10*time.Second, "the run to be TRIGGERED", func() bool {
		r, err := sys.api.GetRun(ctx, waiting.ID)
		return err == nil && r.Status == "TRIGGERED"
	})
	if _, err := sys.api.KillRun(ctx, waiting.ID); err != nil {
		t.Fatal(err)
	}
	nc := sys.connect(t)
	var ran atomic.Int64
	w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: nc, Group: "later"})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("count", func(context.Context, *worker.Job) error { ran.Add(1); return nil })
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	applied.WaitUntil(t, 15*time.Second, "the waiting run to end CANCELLED", func() bool {
		r, err = sys.api.GetRun(ctx, waiting.ID)
		return err == nil && r.Status == "CANCELLED"
	})
	if ran.Load() != 0 {
		t.Errorf("the killed run's handler ran %d times, want 0", ran.Load())
	}
}
