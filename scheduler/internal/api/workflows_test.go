package api_test

import (
	"context"
	"fmt"

	"github.com/jetjob/jetjob/scheduler/apiv1"
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
