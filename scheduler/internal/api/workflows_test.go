package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

func wfPath(id int64, rest string) string { return fmt.Sprintf("/api/v1/workflows/%d%s", id, rest) }

func wfRunPath(id int64, rest string) string {
	return fmt.Sprintf("/api/v1/workflow-runs/%d%s", id, rest)
}

// workflowSpec is a workflow a → b of group a, both nodes running job.
func (e *env) workflowSpec(name string, job int64) apiv1.WorkflowSpec {
	return apiv1.WorkflowSpec{Group: "a", Name: name, ScheduleType: "none",
		Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: job}, {Name: "b", JobID: job}},
		Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}}}
}

// workflow is a fresh workflow a → b of group a running the plain job.
func (e *env) workflow() store.Workflow { return e.workflowOf(e.plain.ID) }

// workflowOf is a fresh workflow a → b of group a running job.
func (e *env) workflowOf(job int64) store.Workflow {
	e.t.Helper()
	w, err := e.st.CreateWorkflow(context.Background(), store.System, store.Workflow{
		Job: store.Job{Group: "a", Name: fmt.Sprint("w", e.next()), ScheduleType: "none", Timezone: "UTC",
			MisfirePolicy: "skip", Enabled: true},
		Spec: wfengine.Spec{Nodes: []wfengine.NodeSpec{{Name: "a", JobID: job}, {Name: "b", JobID: job}},
			Edges: []wfengine.EdgeSpec{{From: "a", To: "b"}}},
		Policy: wfengine.Policy{Overlap: wfengine.OverlapConcurrent},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// cronWorkflow is a fresh hourly workflow of group a running the plain
// job, for backfills.
func (e *env) cronWorkflow() store.Workflow {
	e.t.Helper()
	w, err := e.st.CreateWorkflow(context.Background(), store.System, store.Workflow{
		Job: store.Job{Group: "a", Name: fmt.Sprint("w", e.next()), ScheduleType: "cron", ScheduleExpr: "@every 1h",
			Timezone: "UTC", MisfirePolicy: "skip", Enabled: true},
		Spec:   wfengine.Spec{Nodes: []wfengine.NodeSpec{{Name: "a", JobID: e.plain.ID}}},
		Policy: wfengine.Policy{Overlap: wfengine.OverlapConcurrent},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// workflowRun starts a run of a fresh workflow, node a's run not yet
// published; ended cancels it first (its a is cancelled at once).
func (e *env) workflowRun(ended bool) int64 { return e.workflowRunOf(e.plain.ID, ended) }

// workflowRunOf is workflowRun of a workflow running job.
func (e *env) workflowRunOf(job int64, ended bool) int64 {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.st.InsertManualRun(ctx, store.System, e.workflowOf(job).ID, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := wfengine.Start(ctx, e.pool, "test", &p, 0); err != nil {
		e.t.Fatal(err)
	}
	if ended {
		if _, err := e.st.OperateWorkflowRun(ctx, store.System, p.RunID, store.WorkflowOp{Op: "cancel", Reason: "test"}); err != nil {
			e.t.Fatal(err)
		}
	}
	return p.RunID
}

// A workflow's labels, owner and calendars are a job's: written and read
// back, checked by the same code (a bad label, an unknown calendar and an
// include calendar without an exclude one are refused), and the listing
// filters by the same selector as the jobs'.
func TestWorkflowLabelsOwnerCalendars(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := e.st.PutCalendar(ctx, store.System, store.Calendar{Name: "a-holidays", Group: "a",
		Days: calendar.Days{Dates: []string{"2026-10-01"}}}); err != nil {
		t.Fatal(err)
	}
	spec := e.workflowSpec("labelled", e.plain.ID)
	spec.Labels, spec.Owner, spec.ExcludeCalendars = map[string]string{"team": "a", "env": "prod"}, "ana@example.com", []string{"a-holidays"}
	code, body := e.do("operator", "POST", "/api/v1/workflows", spec)
	var wf apiv1.Workflow
	if err := json.Unmarshal(body, &wf); code != 201 || err != nil {
		t.Fatalf("create: %d %s", code, body)
	}
	if wf.Owner != "ana@example.com" || wf.Labels["env"] != "prod" || len(wf.ExcludeCalendars) != 1 {
		t.Errorf("created %+v, want its labels, owner and calendar back", wf.WorkflowSpec)
	}
	other := e.workflowSpec("other", e.plain.ID)
	other.Labels = map[string]string{"team": "a", "env": "dev"}
	if code, body := e.do("operator", "POST", "/api/v1/workflows", other); code != 201 {
		t.Fatalf("create other: %d %s", code, body)
	}
	code, body = e.do("viewerA", "GET", "/api/v1/workflows?labels=env=prod,team=a", nil)
	var list apiv1.WorkflowList
	if err := json.Unmarshal(body, &list); code != 200 || err != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Workflows) != 1 || list.Workflows[0].ID != wf.ID {
		t.Errorf("labels=env=prod,team=a listed %d workflows, want only %d", len(list.Workflows), wf.ID)
	}
	if code, body := e.do("viewerA", "GET", "/api/v1/workflows?labels=env", nil); code != 400 || !strings.Contains(string(body), "key=value") {
		t.Errorf("a selector without =: %d %s, want 400 naming the grammar", code, body)
	}
	// Bulk by selector, kind workflow: the workflow picked is disabled, a
	// job with the same labels is not (it is not a workflow).
	labelled := e.job("a", "echo")
	labelled.Labels = map[string]string{"team": "a", "env": "prod"}
	if _, err := e.st.UpdateJob(ctx, store.System, labelled); err != nil {
		t.Fatal(err)
	}
	code, body = e.do("operator", "POST", "/api/v1/jobs/bulk", apiv1.BulkRequest{Selector: "env=prod,team=a", Kind: "workflow", Action: "disable", Note: "freeze"})
	var res apiv1.BulkResult
	if err := json.Unmarshal(body, &res); code != 200 || err != nil || res.Matched != 1 || res.Done != 1 || res.Items[0].JobID != wf.ID {
		t.Errorf("bulk disable of workflows env=prod,team=a: %d %s, want workflow %d alone", code, body, wf.ID)
	}
	if got, _ := e.st.GetWorkflow(ctx, wf.ID); got.Enabled || got.PausedNote != "freeze" {
		t.Errorf("the workflow after a bulk disable: enabled %t note %q", got.Enabled, got.PausedNote)
	}
	if got, _ := e.st.GetJob(ctx, labelled.ID); !got.Enabled {
		t.Error("a job with the same labels was disabled by a bulk action on workflows")
	}
	if code, body := e.do("operator", "POST", "/api/v1/jobs/bulk", apiv1.BulkRequest{Selector: "env=prod", Kind: "node", Action: "disable"}); code != 400 || !strings.Contains(string(body), "kind") {
		t.Errorf("bulk of kind node: %d %s, want 400 naming kind", code, body)
	}

	// The schedule preview judges the calendars its caller may read: group
	// a's for a's viewer, as if unknown for b's.
	preview := "/api/v1/schedule/preview?type=cron&expr=0+9+*+*+*&timezone=UTC&n=3&exclude=a-holidays"
	if code, body := e.do("viewerA", "GET", preview, nil); code != 200 {
		t.Errorf("a's viewer previews with a's calendar: %d %s", code, body)
	}
	if code, body := e.do("viewerB", "GET", preview, nil); code != 400 || !strings.Contains(string(body), "no such calendar") {
		t.Errorf("b's viewer previews with a's calendar: %d %s, want 400 no such calendar", code, body)
	}
	for _, c := range []struct {
		edit func(*apiv1.WorkflowSpec)
		want string
	}{
		{func(s *apiv1.WorkflowSpec) { s.Labels = map[string]string{"bad key": "x"} }, "bad key"},
		{func(s *apiv1.WorkflowSpec) { s.ExcludeCalendars = []string{"nowhere"} }, "nowhere"},
		{func(s *apiv1.WorkflowSpec) { s.IncludeCalendars = []string{"a-holidays"} }, "include_calendars without exclude_calendars"},
		{func(s *apiv1.WorkflowSpec) { s.Owner = "a\nb" }, "owner"},
	} {
		s := e.workflowSpec(fmt.Sprint("bad", e.next()), e.plain.ID)
		c.edit(&s)
		if code, body := e.do("operator", "POST", "/api/v1/workflows", s); code != 400 || !strings.Contains(string(body), c.want) {
			t.Errorf("%+v: %d %s, want 400 naming %q", s, code, body, c.want)
		}
	}
}
