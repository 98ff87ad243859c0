package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// The workflow run page, /workflow-runs/{id}: the graph with each node's
// status, the nodes with their runs (each linking to its run page and
// log), and the operations the API has on a run — cancel, retry from
// failed, mark a node succeeded, skip a node — each shown to operators of
// the run's group and posted to the API, which decides. While the run can
// change, console.js reads the page's summary again every second and
// swaps it in (the run page's own way of showing the stored state).

// workflowRunPage is the page's data.
type workflowRunPage struct {
	Run apiv1.WorkflowRun
	// Workflow is the run's workflow; nil when it was deleted.
	Workflow *apiv1.Workflow
	Graph    wfGraph
	Nodes    []wfRunNode
	// Starting says the run was triggered but the engine has not started
	// it yet (no workflow run stored): nodes show as pending.
	Starting bool
	Active   bool
	// CanOperate shows the operations (the API decides); CanRetry when a
	// node failed or was cancelled.
	CanOperate, CanRetry bool
}

// wfRunNode is a node of the run with its latest run.
type wfRunNode struct {
	apiv1.WorkflowRunNode
	// Latest is the node's latest run (nil: none yet).
	Latest *apiv1.WorkflowNodeRun
	// Settleable: an operator may mark it succeeded or skip it (not
	// running, not already succeeded or skipped passing through).
	Settleable bool
	OutputText string
}

// RefreshURL is where console.js reads the summary again.
func (p *workflowRunPage) RefreshURL() string { return workflowRunURL(p.Run.ID) }

func workflowRunURL(id int64) string  { return "/workflow-runs/" + strconv.FormatInt(id, 10) }
func workflowRunPath(id int64) string { return "/api/v1/workflow-runs/" + strconv.FormatInt(id, 10) }

func (c *Console) workflowRun(w http.ResponseWriter, r *http.Request) error {
	return c.renderWorkflowRun(w, r, http.StatusOK, "")
}

// renderWorkflowRun renders the page of the path's run with status code
// and an error above it (a refused operation).
func (c *Console) renderWorkflowRun(w http.ResponseWriter, r *http.Request, code int, pageErr string) error {
	u, id, err := c.userAndID(r, runID)
	if err != nil {
		return err
	}
	data, err := c.workflowRunData(r, id, c.lang(r, u))
	if err != nil {
		return err
	}
	data.CanOperate = u.CanOperate(data.Run.Group)
	return c.render(w, r, code, "workflow_run", page{Title: c.lang(r, u).T("Workflow run %d", id), User: u, Data: data, Error: pageErr})
}

// workflowRunData reads the run, its workflow and its nodes. A run just
// triggered has no workflow run until the engine starts it (the API's
// 404): its own run (GET /runs/{id}) stands in, its nodes pending.
func (c *Console) workflowRunData(r *http.Request, id int64, l i18n.Lang) (*workflowRunPage, error) {
	data := &workflowRunPage{}
	_, err := c.call(r, http.MethodGet, workflowRunPath(id), nil, nil, &data.Run)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		var own apiv1.Run
		if _, rerr := c.call(r, http.MethodGet, runPath(id), nil, nil, &own); rerr != nil {
			return nil, err // the workflow run's 404 says it best
		}
		data.Starting = true
		data.Run = apiv1.WorkflowRun{ID: own.ID, WorkflowID: own.JobID, Group: own.Group, Status: own.Status,
			ScheduledAt: own.ScheduledAt, Params: own.Params, Message: own.Message}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	var wf apiv1.Workflow
	_, err = c.call(r, http.MethodGet, workflowPath(data.Run.WorkflowID), nil, nil, &wf)
	switch {
	case err == nil:
		data.Workflow = &wf
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
	default:
		return nil, err
	}
	if data.Starting && data.Workflow != nil {
		if !wfRunActive(data.Run.Status) {
			// Ended before it started (discarded, cancelled): no nodes ran.
			data.Starting = false
		}
		for _, n := range wf.Nodes {
			data.Run.Nodes = append(data.Run.Nodes, apiv1.WorkflowRunNode{Name: n.Name, JobID: n.JobID, Status: "PENDING"})
		}
	}
	data.Active = wfRunActive(data.Run.Status)
	for _, n := range data.Run.Nodes {
		rn := wfRunNode{WorkflowRunNode: n}
		for i := range n.Runs {
			if rn.Latest == nil || n.Runs[i].RunID > rn.Latest.RunID {
				rn.Latest = &n.Runs[i]
			}
		}
		rn.Settleable = !data.Starting && n.Status != "RUNNING" && n.Status != "SUCCEEDED" && !(n.Status == "SKIPPED" && n.Bypass)
		if n.Status == "FAILED" || n.Status == "CANCELLED" {
			data.CanRetry = !data.Starting
		}
		if len(n.Output) > 0 {
			rn.OutputText = string(n.Output)
		} else if rn.Latest != nil && len(rn.Latest.Output) > 0 {
			rn.OutputText = string(rn.Latest.Output)
		}
		data.Nodes = append(data.Nodes, rn)
	}
	// The graph: the workflow's edges as the run has them (the run keeps
	// its graph; the workflow may have changed since — then only edges
	// between the run's nodes are drawn).
	var nodes []apiv1.WorkflowNode
	for _, n := range data.Run.Nodes {
		nodes = append(nodes, apiv1.WorkflowNode{Name: n.Name, JobID: n.JobID})
	}
	var edges []apiv1.WorkflowEdge
	if data.Workflow != nil {
		edges = data.Workflow.Edges
		for i := range nodes {
			if wn := findNode(data.Workflow.Nodes, nodes[i].Name); wn != nil {
				nodes[i].Job, nodes[i].Inline, nodes[i].ForEach, nodes[i].Disabled = wn.Job, wn.Inline, wn.ForEach, wn.Disabled
			}
		}
	}
	byName := nodesByName(data.Run.Nodes)
	data.Graph = workflowGraph(nodes, edges, byName, l, func(name string) string {
		for _, rn := range data.Nodes {
			if rn.Name == name && rn.Latest != nil {
				return "/runs/" + strconv.FormatInt(rn.Latest.RunID, 10)
			}
		}
		return ""
	})
	return data, nil
}

func findNode(ns []apiv1.WorkflowNode, name string) *apiv1.WorkflowNode {
	for i := range ns {
		if ns[i].Name == name {
			return &ns[i]
		}
	}
	return nil
}

// wfRunActive reports whether a workflow run can still change by itself.
func wfRunActive(status string) bool {
	switch status {
	case "SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT", "DISCARDED", "SKIPPED", "EXPIRED", "LOST":
		return false
	}
	return true
}

// workflowRunOp is one of the run's buttons: POST
// /api/v1/workflow-runs/{id}/<op> with the form's node (and output), then
// back to the run's page. A refusal the run's state explains (the API's
// 400 or 409: nothing failed, the node is running) shows the page with
// the API's words.
func (c *Console) workflowRunOp(op string, done notice) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := postedForm(r, runID)
		if err != nil {
			return err
		}
		act := apiv1.NodeAction{Node: r.PostForm.Get("node")}
		if out := strings.TrimSpace(r.PostForm.Get("output")); out != "" {
			if !json.Valid([]byte(out)) {
				return c.renderWorkflowRun(w, r, http.StatusBadRequest, "Not done: the output of node "+act.Node+" must be one JSON value")
			}
			act.Output = json.RawMessage(out)
		}
		var run apiv1.WorkflowRun
		if shown, err := c.postWorkflowRun(w, r, id, op, act, &run); shown || err != nil {
			return err
		}
		redirect(w, r, workflowRunURL(id), done)
		return nil
	}
}

// postWorkflowRun posts op (with body) to workflow run id and decodes the
// answer into out. A refusal the run's state explains (the API's 400 or
// 409) shows the run's page with the API's words: then shown is true and
// the request is answered (err is the page's).
func (c *Console) postWorkflowRun(w http.ResponseWriter, r *http.Request, id int64, op string, body, out any) (shown bool, err error) {
	_, err = c.call(r, http.MethodPost, workflowRunPath(id)+"/"+op, nil, body, out)
	if ae := formRefusal(err); ae != nil {
		return true, c.renderWorkflowRun(w, r, ae.Status, "Not done: "+ae.Error())
	}
	return false, err
}

// rerunWorkflowRun is the run's Re-run button: POST
// /api/v1/workflow-runs/{id}/rerun, then to the new run's page. A refusal
// the run's state explains (its workflow was deleted) shows this page with
// the API's words.
func (c *Console) rerunWorkflowRun(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	var run apiv1.Run
	if shown, err := c.postWorkflowRun(w, r, id, "rerun", nil, &run); shown || err != nil {
		return err
	}
	redirect(w, r, workflowRunURL(run.ID), noticeWorkflowRerun)
	return nil
}
