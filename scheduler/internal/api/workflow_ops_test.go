package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// statusOf is the HTTP status of a client error (0: not an API error).
func statusOf(err error) int {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

// A workflow is paused with a note and resumed, and backfilled, through
// its own endpoints, by the jobs' implementations: the note, who and when
// show on the workflow, the inputs are checked as a job's, and a plain
// job is not found there.
func TestWorkflowPauseResumeBackfill(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()
	job, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "step", Handler: "h", ScheduleType: "none"})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := c.CreateWorkflow(ctx, apiv1.WorkflowSpec{Group: "g", Name: "hourly", ScheduleType: "cron",
		ScheduleExpr: "0 0 * * * *", Timezone: "UTC", Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: job.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	if !wf.Enabled || wf.NextFireAt == nil {
		t.Fatalf("new workflow: enabled %v, next fire %v", wf.Enabled, wf.NextFireAt)
	}

	// Pause, with a note.
	paused, err := c.PauseWorkflow(ctx, wf.ID, apiv1.DisableRequest{Note: "warehouse migration"})
	if err != nil {
		t.Fatal(err)
	}
	if paused.Enabled || paused.PausedNote != "warehouse migration" || paused.PausedAt == nil || paused.PausedBy == "" {
		t.Errorf("paused workflow: %+v", paused)
	}
	if got, err := c.GetWorkflow(ctx, wf.ID); err != nil || got.PausedNote != "warehouse migration" || got.Enabled {
		t.Errorf("the workflow read after its pause: %+v %v", got, err)
	}
	if _, err := c.PauseWorkflow(ctx, wf.ID, apiv1.DisableRequest{Note: strings.Repeat("x", 1001)}); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "note") {
		t.Errorf("pause with a 1001-character note: %v, want 400 naming note", err)
	}

	// Resume.
	if _, err := c.ResumeWorkflow(ctx, wf.ID, apiv1.EnableRequest{CatchUp: "all"}); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "catch_up") {
		t.Errorf("resume with catch_up all: %v, want 400 naming catch_up", err)
	}
	resumed, err := c.ResumeWorkflow(ctx, wf.ID, apiv1.EnableRequest{CatchUp: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if !resumed.Enabled || resumed.NextFireAt == nil || resumed.PausedNote != "" || resumed.PausedAt != nil {
		t.Errorf("resumed workflow: %+v", resumed)
	}

	// Backfill: three hourly fires in the last three hours, each to be a
	// run of the workflow's row.
	now := time.Now().UTC()
	b, err := c.BackfillWorkflow(ctx, wf.ID, apiv1.BackfillRequest{From: now.Add(-3 * time.Hour), To: now})
	if err != nil {
		t.Fatal(err)
	}
	if b.JobID != wf.ID || b.Planned != 3 || b.Group != "g" {
		t.Errorf("backfill of the workflow: %+v, want 3 fires of job %d", b, wf.ID)
	}
	if list, err := c.ListBackfills(ctx, wf.ID); err != nil || len(list.Backfills) != 1 || list.Backfills[0].ID != b.ID {
		t.Errorf("the workflow's backfills: %+v %v", list, err)
	}
	if _, err := c.BackfillWorkflow(ctx, wf.ID, apiv1.BackfillRequest{From: now, To: now.Add(-time.Hour)}); statusOf(err) != http.StatusBadRequest {
		t.Errorf("a backfill from after to: %v, want 400", err)
	}

	// A plain job is not a workflow.
	if _, err := c.PauseWorkflow(ctx, job.ID, apiv1.DisableRequest{}); statusOf(err) != http.StatusNotFound {
		t.Errorf("pause of a plain job as a workflow: %v, want 404", err)
	}
	if _, err := c.ResumeWorkflow(ctx, job.ID, apiv1.EnableRequest{}); statusOf(err) != http.StatusNotFound {
		t.Errorf("resume of a plain job as a workflow: %v, want 404", err)
	}
	if _, err := c.BackfillWorkflow(ctx, job.ID, apiv1.BackfillRequest{From: now.Add(-time.Hour), To: now}); statusOf(err) != http.StatusNotFound {
		t.Errorf("backfill of a plain job as a workflow: %v, want 404", err)
	}
}
