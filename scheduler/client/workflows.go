package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// CreateWorkflow stores a new workflow (docs/workflows.md).
func (c *Client) CreateWorkflow(ctx context.Context, spec apiv1.WorkflowSpec) (*apiv1.Workflow, error) {
	return call[apiv1.Workflow](ctx, c, http.MethodPost, "/workflows", nil, spec)
}

// GetWorkflow reads one workflow.
func (c *Client) GetWorkflow(ctx context.Context, id int64) (*apiv1.Workflow, error) {
	return call[apiv1.Workflow](ctx, c, http.MethodGet, workflowPath(id), nil, nil)
}

// ListWorkflows reads up to limit workflows (0: the server's page size)
// with an id above after, of group ("" for every group the caller reads).
func (c *Client) ListWorkflows(ctx context.Context, group string, after int64, limit int) (*apiv1.WorkflowList, error) {
	return c.ListWorkflowsSelected(ctx, group, "", after, limit)
}

// ListWorkflowsSelected is ListWorkflows keeping only the workflows a
// label selector picks ("env=prod,team=billing"; "" for all).
func (c *Client) ListWorkflowsSelected(ctx context.Context, group, selector string, after int64, limit int) (*apiv1.WorkflowList, error) {
	q := pageQuery("after", after, limit)
	if group != "" {
		q.Set("group", group)
	}
	if selector != "" {
		q.Set("labels", selector)
	}
	return call[apiv1.WorkflowList](ctx, c, http.MethodGet, "/workflows", q, nil)
}

// UpdateWorkflow replaces a workflow's definition; spec.Version, when set,
// must be the workflow's current version (else 409).
func (c *Client) UpdateWorkflow(ctx context.Context, id int64, spec apiv1.WorkflowSpec) (*apiv1.Workflow, error) {
	return call[apiv1.Workflow](ctx, c, http.MethodPut, workflowPath(id), nil, spec)
}

// DeleteWorkflow deletes a workflow; its runs stay.
func (c *Client) DeleteWorkflow(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, workflowPath(id), nil, nil, nil)
}

// TriggerWorkflow starts a run of a workflow now, with params (a JSON
// object; nil: the workflow's). The answer is the workflow's run as
// written; its id is the workflow run's (GetWorkflowRun).
func (c *Client) TriggerWorkflow(ctx context.Context, id int64, params *string) (*apiv1.Run, error) {
	return c.TriggerWorkflowWith(ctx, id, apiv1.TriggerRequest{Params: params})
}

// TriggerWorkflowWith triggers a workflow as req says, as TriggerJobWith
// does a job.
func (c *Client) TriggerWorkflowWith(ctx context.Context, id int64, req apiv1.TriggerRequest) (*apiv1.Run, error) {
	return call[apiv1.Run](ctx, c, http.MethodPost, workflowPath(id)+"/trigger", nil, req)
}

// ListWorkflowRuns reads up to limit runs of a workflow (0: the server's
// page size), newest first, with an id below before (0: from the newest).
func (c *Client) ListWorkflowRuns(ctx context.Context, id, before int64, limit int) (*apiv1.WorkflowRunList, error) {
	return call[apiv1.WorkflowRunList](ctx, c, http.MethodGet, workflowPath(id)+"/runs", pageQuery("before", before, limit), nil)
}

// GetWorkflowRun reads a workflow run with its nodes, their runs and
// outputs.
func (c *Client) GetWorkflowRun(ctx context.Context, id int64) (*apiv1.WorkflowRun, error) {
	return call[apiv1.WorkflowRun](ctx, c, http.MethodGet, workflowRunPath(id), nil, nil)
}

// CancelWorkflowRun cancels a workflow run: its running nodes are killed.
func (c *Client) CancelWorkflowRun(ctx context.Context, id int64, reason string) (*apiv1.WorkflowRun, error) {
	return c.workflowRunOp(ctx, id, "cancel", apiv1.NodeAction{Reason: reason})
}

// RetryWorkflowRun re-runs an ended workflow run from its failed nodes.
func (c *Client) RetryWorkflowRun(ctx context.Context, id int64) (*apiv1.WorkflowRun, error) {
	return c.workflowRunOp(ctx, id, "retry", apiv1.NodeAction{})
}

// MarkNodeSucceeded settles a node of a workflow run as succeeded, with
// output (nil: none) for the nodes after it.
func (c *Client) MarkNodeSucceeded(ctx context.Context, id int64, node string, output json.RawMessage) (*apiv1.WorkflowRun, error) {
	return c.workflowRunOp(ctx, id, "mark-succeeded", apiv1.NodeAction{Node: node, Output: output})
}

// SkipNode settles a node of a workflow run skipped, passing through.
func (c *Client) SkipNode(ctx context.Context, id int64, node string) (*apiv1.WorkflowRun, error) {
	return c.workflowRunOp(ctx, id, "skip", apiv1.NodeAction{Node: node})
}

func (c *Client) workflowRunOp(ctx context.Context, id int64, op string, body apiv1.NodeAction) (*apiv1.WorkflowRun, error) {
	return call[apiv1.WorkflowRun](ctx, c, http.MethodPost, workflowRunPath(id)+"/"+op, nil, body)
}

func workflowPath(id int64) string { return "/workflows/" + strconv.FormatInt(id, 10) }

func workflowRunPath(id int64) string { return "/workflow-runs/" + strconv.FormatInt(id, 10) }

// RerunWorkflowRun starts a new run of the workflow of workflow run id,
// with that run's params; the old run is left as it is. The answer is the
// new run as written; its id is the new workflow run's (GetWorkflowRun).
func (c *Client) RerunWorkflowRun(ctx context.Context, id int64) (*apiv1.Run, error) {
	return call[apiv1.Run](ctx, c, http.MethodPost, workflowRunPath(id)+"/rerun", nil, nil)
}

// PauseWorkflow disables a workflow's schedule with a note saying why;
// runs already started or queued go on.
func (c *Client) PauseWorkflow(ctx context.Context, id int64, req apiv1.DisableRequest) (*apiv1.Workflow, error) {
	return call[apiv1.Workflow](ctx, c, http.MethodPost, workflowPath(id)+"/pause", nil, req)
}

// ResumeWorkflow enables a workflow's schedule again, saying what happens
// to the fires it missed while paused (req.CatchUp: policy or none).
func (c *Client) ResumeWorkflow(ctx context.Context, id int64, req apiv1.EnableRequest) (*apiv1.Workflow, error) {
	return call[apiv1.Workflow](ctx, c, http.MethodPost, workflowPath(id)+"/resume", nil, req)
}

// BackfillWorkflow starts running a workflow's past fires in [req.From,
// req.To), each a workflow run (trigger type backfill); GetBackfill and
// CancelBackfill follow and stop it, as for a job's.
func (c *Client) BackfillWorkflow(ctx context.Context, id int64, req apiv1.BackfillRequest) (*apiv1.Backfill, error) {
	return call[apiv1.Backfill](ctx, c, http.MethodPost, workflowPath(id)+"/backfill", nil, req)
}
