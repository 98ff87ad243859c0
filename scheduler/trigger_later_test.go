package scheduler_test

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
)

// A run triggered for later than the API's own wheel takes (beyond
// planner.SweepInterval), by a delay or at a time, lives only in the
// table until a sweep of its shard's owner plants it: each runs once at
// its time, not before, though the scheduler that wrote them died in
// between; one cancelled meanwhile never runs.
func TestTriggerLaterThroughSchedulerCrash(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	c.startWorker("w1")
	job := c.createJobs(1, apiv1.JobSpec{Name: "later", ScheduleType: "none"})[0]
	delay := planner.SweepInterval + 5*time.Second
	later, err := c.api.TriggerJobWith(t.Context(), job, apiv1.TriggerRequest{Delay: delay.String()})
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := c.api.TriggerJobWith(t.Context(), job, apiv1.TriggerRequest{Delay: delay.String()})
	if err != nil {
		t.Fatal(err)
	}
	// One more at an absolute time, a little after the delayed one.
	atTime := time.Now().Add(delay + 2*time.Second).Truncate(time.Second)
	at, err := c.api.TriggerJobWith(t.Context(), job, apiv1.TriggerRequest{At: &atTime})
	if err != nil {
		t.Fatal(err)
	}
	if at.Status != "SCHEDULED" || !at.ScheduledAt.Equal(atTime) {
		t.Fatalf("run %d is %s at %s, want SCHEDULED at %s", at.ID, at.Status, at.ScheduledAt, atTime)
	}
	if later.Status != "SCHEDULED" || time.Until(later.ScheduledAt) < planner.SweepInterval {
		t.Fatalf("run %d is %s at %s, want SCHEDULED %s from now", later.ID, later.Status, later.ScheduledAt, delay)
	}
	if r, err := c.api.KillRun(t.Context(), dropped.ID); err != nil || r.Status != "CANCELLED" {
		t.Fatalf("cancel run %d before its time: %+v, %v", dropped.ID, r, err)
	}

	c.crash(0)
	n := c.startScheduler(4)
	api, err := client.New(c.nodes[n].url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	run := waitStatus(t, api, later.ID, "SUCCEEDED", delay+time.Minute)
	if run.StartedAt == nil || run.StartedAt.Before(run.ScheduledAt) {
		t.Errorf("run %d scheduled at %s started at %v: before its time", run.ID, run.ScheduledAt, run.StartedAt)
	}
	if got := c.fires.snapshot()[key(job, later.ScheduledAt)]; got != 1 {
		t.Errorf("the run for later reached a handler %d times, want once", got)
	}
	atRun := waitStatus(t, api, at.ID, "SUCCEEDED", delay+time.Minute)
	if atRun.StartedAt == nil || atRun.StartedAt.Before(atTime) {
		t.Errorf("run %d at %s started at %v: before its time", atRun.ID, atTime, atRun.StartedAt)
	}
	if got := c.fires.snapshot()[key(job, atTime)]; got != 1 {
		t.Errorf("the run at %s reached a handler %d times, want once", atTime, got)
	}
	if r, err := api.GetRun(t.Context(), dropped.ID); err != nil || r.Status != "CANCELLED" || r.StartedAt != nil {
		t.Errorf("the cancelled run: %+v, %v; want CANCELLED, never started", r, err)
	}
}
