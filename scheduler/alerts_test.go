package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// alertRuleTo makes a webhook channel of group g to hook and a rule of g
// naming events on it.
func alertRuleTo(t *testing.T, sys *system, hook *hookServer, events ...string) {
	t.Helper()
	ch, err := sys.api.CreateChannel(t.Context(), apiv1.Channel{Name: "hook", Kind: "webhook", Group: "g", Target: hook.URL + "/jetjob"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sys.api.CreateAlertRule(t.Context(), apiv1.AlertRule{Name: "g-rule", Group: "g", Events: events,
		Channels: []int64{ch.ID}}); err != nil {
		t.Fatal(err)
	}
}

// A workflow run that ends FAILED is the event workflow_failed of the
// rules covering the workflow: one alert on the workflow, one notice.
// The node's own failure is the node job's failed, which this rule does
// not name.
func TestAlertOnWorkflowFailed(t *testing.T) {
	t.Parallel()
	hook := newHookServer(t)
	sys := startSystem(t, consoleHandlers, allowEgress(hook.Listener.Addr().String()))
	alertRuleTo(t, sys, hook, "workflow_failed")
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "broken", Handler: "broken", ScheduleType: "none"})
	wf, err := sys.api.CreateWorkflow(t.Context(), apiv1.WorkflowSpec{Group: "g", Name: "nightly", ScheduleType: "none",
		Nodes: []apiv1.WorkflowNode{{Name: "step", Job: "g/" + job.Name}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "the workflow_failed notice", func() bool {
		return slices.Contains(hook.got(), "workflow_failed")
	})
	as, err := sys.api.ListAlerts(t.Context(), "g", false, 0)
	if err != nil || len(as) != 1 || as[0].JobID != wf.ID || as[0].LastEvent != "workflow_failed" || as[0].State != "open" {
		t.Fatalf("alerts after the workflow failed: %+v, %v", as, err)
	}
	if got := hook.got(); fmt.Sprint(got) != "[workflow_failed]" {
		t.Fatalf("the receiver got %q, want one workflow_failed", got)
	}
}

// Missed fires the planner records SKIPPED by a job's misfire policy (here
// skip, after the job's next fire was set three days back) are the event
// missed, not only a trigger a worker finds EXPIRED.
func TestAlertOnSkippedFires(t *testing.T) {
	t.Parallel()
	hook := newHookServer(t)
	sys := startSystem(t, noopWorker, allowEgress(hook.Listener.Addr().String()))
	alertRuleTo(t, sys, hook, "missed")
	newest := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "daily", Handler: "noop", ScheduleType: "cron",
		ScheduleExpr: fmt.Sprintf("0 %d %d * * *", newest.Minute(), newest.Hour()), MisfirePolicy: "skip"})
	if _, err := sys.pool.Exec(t.Context(), `UPDATE jobs SET next_fire_at = $2 WHERE id = $1`, job.ID, newest.AddDate(0, 0, -3)); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "the missed notice", func() bool { return slices.Contains(hook.got(), "missed") })
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SKIPPED'`, job.ID); n < 1 {
		t.Fatalf("%d SKIPPED runs: the notice came from elsewhere", n)
	}
	as, err := sys.api.ListAlerts(t.Context(), "g", false, 0)
	if err != nil || len(as) != 1 || as[0].JobID != job.ID || as[0].LastEvent != "missed" || as[0].LastStatus != "SKIPPED" {
		t.Fatalf("alerts after the skipped fires: %+v, %v", as, err)
	}
}
