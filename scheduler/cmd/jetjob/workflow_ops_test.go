package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// workflows pause (with a note), resume and backfill go through the
// workflow's endpoints and say what they did; get shows the pause.
func TestWorkflowsPauseResumeBackfill(t *testing.T) {
	r := isolatedAPI(t, "billing")
	ctx := context.Background()
	c := r.apiClient(t)
	if _, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "billing", Name: "step", Handler: "h", ScheduleType: "none"}); err != nil {
		t.Fatal(err)
	}
	wf, err := c.CreateWorkflow(ctx, apiv1.WorkflowSpec{Group: "billing", Name: "hourly", ScheduleType: "cron",
		ScheduleExpr: "0 0 * * * *", Timezone: "UTC", Nodes: []apiv1.WorkflowNode{{Name: "a", Job: "billing/step"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(wf.ID)
	printed(t, "pause", r.admin(t, "", "workflows", "pause", id, "--note", "warehouse migration"), "workflow "+id+" (hourly) paused")
	printed(t, "get", r.admin(t, "", "workflows", "get", id), "warehouse migration", "Enabled")
	printed(t, "resume", r.admin(t, "", "workflows", "resume", id, "--catch-up", "none"), "workflow "+id+" (hourly) resumed")
	if got := r.admin(t, "", "workflows", "get", id); strings.Contains(got, "warehouse migration") {
		t.Errorf("get after resume still shows the note:\n%s", got)
	}
	if res := r.as(t, bootstrapToken, "", "workflows", "resume", id, "--catch-up", "all"); res.code == exitOK {
		t.Errorf("resume --catch-up all succeeded: %q", res.stdout)
	}
	now := time.Now().UTC()
	out := r.admin(t, "", "workflows", "backfill", id, "--from", now.Add(-3*time.Hour).Format(time.RFC3339), "--to", now.Format(time.RFC3339))
	printed(t, "backfill", out, "Job", id, "Planned")
	if list, err := c.ListBackfills(ctx, wf.ID); err != nil || len(list.Backfills) != 1 || list.Backfills[0].Planned != 3 {
		t.Errorf("the workflow's backfills: %+v %v, want one of 3 fires", list, err)
	}
}
