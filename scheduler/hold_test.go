package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/results"
	"github.com/jetjob/jetjob/worker"
)

// A run's start is written together with its end: its started event waits
// in the applier (results.Config.HoldStarted) for its finished event, so a
// short run costs job_runs one write, not two. While it waits, job_runs
// does not show the run RUNNING even after later events (another run's
// whole life) were applied; once the run ends it is written once, with its
// start time, and its start lag is observed (StartApplied).
func TestStartWrittenWithItsEnd(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("held", func(ctx context.Context, _ *worker.Job) error {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
		w.Handle("quick", func(context.Context, *worker.Job) error { return nil })
	}, func(c *systemConfig) {
		// Far beyond the test's own steps, so that the start cannot be
		// applied alone however slow the machine.
		c.Results = results.Config{HoldStarted: 30 * time.Second, AckWait: 5 * time.Minute}
	})
	ctx := context.Background()
	trigger := func(name string) int64 {
		t.Helper()
		job, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: name, Handler: name, ScheduleType: "none"})
		if err != nil {
			t.Fatal(err)
		}
		run, err := sys.api.TriggerJob(ctx, job.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return run.ID
	}
	held := trigger("held")
	select {
	case <-started: // its started event is stored: handlers start only then
	case <-time.After(30 * time.Second):
		t.Fatal("the handler did not start within 30s")
	}
	var writes []results.Change
	watch := func(until int64) func([]results.Change) bool {
		return func(cs []results.Change) bool {
			done := false
			for _, c := range cs {
				if c.RunID == held {
					writes = append(writes, c)
				}
				done = done || (c.RunID == until && c.Status.Terminal())
			}
			return done
		}
	}
	// Another run's events come after the held run's start in
	// JETJOB_EVENTS: once they are applied, that start has been read.
	quick := trigger("quick")
	sys.signals.Results.Applied.WaitFor(t, 30*time.Second, "a later run's end to be applied", watch(quick))
	if len(writes) != 0 {
		t.Fatalf("the running run was written before its end: %+v", writes)
	}
	close(release)
	sys.signals.Results.Applied.WaitFor(t, 30*time.Second, "the held run's end to be applied", watch(held))
	if len(writes) != 1 {
		t.Fatalf("the run was written %d times (%+v), want once", len(writes), writes)
	}
	if c := writes[0]; c.Status != "SUCCEEDED" || !c.StartApplied || c.StartedAt.IsZero() {
		t.Errorf("the run's one write: %+v, want SUCCEEDED with its start", c)
	}
}
