package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// The workflow endpoints (docs/workflows.md): CRUD like jobs (audit,
// history, permissions), triggers and the operations on runs.

// workflowHandler stands in for a workflow's handler while its schedule
// fields are checked as a job's; the row is written without one.
const workflowHandler = "workflow"

// workflowFromSpec checks spec whole and returns the workflow to store,
// with every problem named: the schedule as a job's, the policy, node
// jobs (by id or "group/name") and the graph (cycles, unknown nodes,
// joins that can never be met, templates naming nodes not upstream).
func (s *Server) workflowFromSpec(ctx context.Context, spec apiv1.WorkflowSpec) (store.Workflow, error) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	j, err := s.jobFromSpec(ctx, apiv1.JobSpec{Group: spec.Group, Name: spec.Name, Description: spec.Description,
		Handler: workflowHandler, Params: spec.Params, ScheduleType: spec.ScheduleType, ScheduleExpr: spec.ScheduleExpr,
		Timezone: spec.Timezone, MisfirePolicy: spec.MisfirePolicy, Enabled: spec.Enabled,
		MisfireThreshold: spec.MisfireThreshold, MaxCatchup: spec.MaxCatchup, Jitter: spec.Jitter,
		StartAt: spec.StartAt, EndAt: spec.EndAt, ExcludeCalendars: spec.ExcludeCalendars, IncludeCalendars: spec.IncludeCalendars,
		Labels: spec.Labels, Owner: spec.Owner}, s.now())
	if err != nil {
		add("%s", strings.TrimPrefix(err.Error(), errInvalid.Error()+": "))
	}
	if p := strings.TrimSpace(spec.Params); p != "" && !jsonObject(p) {
		add("%s", errParamsObject)
	}
	pol := wfengine.Policy{Overlap: spec.Overlap, MaxConcurrent: spec.MaxConcurrent, Timeout: time.Duration(spec.Timeout)}
	if pol.Overlap == "" {
		pol.Overlap = wfengine.OverlapSerial
	}
	if err := pol.Validate(); err != nil {
		add("%v", err)
	}
	var sp wfengine.Spec
	for _, n := range spec.Nodes {
		id := n.JobID
		named := n.JobID != 0 || n.Job != ""
		switch {
		case named && n.Inline != nil:
			add("node %q: give job (or job_id), naming a job, or inline, a job of its own; not both", n.Name)
			continue
		case !named && n.Inline == nil:
			add("node %q: names no job: give job: group/name, or inline: {handler: ...}", n.Name)
			continue
		}
		var inline *wfengine.InlineJob
		if n.Inline != nil {
			var err error
			if inline, err = s.inlineJob(ctx, spec.Group, n.Inline); err != nil {
				add("node %q: inline job: %s", n.Name, strings.TrimPrefix(err.Error(), errInvalid.Error()+": "))
				continue
			}
		}
		if n.Job != "" {
			group, name, ok := strings.Cut(n.Job, "/")
			if !ok || group == "" || name == "" {
				add("node %q: job %q: want group/name", n.Name, n.Job)
				continue
			}
			found, err := s.store.JobIDByName(ctx, group, name)
			switch {
			case err == nil && (n.JobID == 0 || n.JobID == found):
				id = found
			case err == nil:
				add("node %q: job %q is job %d, not job_id %d", n.Name, n.Job, found, n.JobID)
			default:
				// Answered as refs.Check answers an id: a job that does
				// not exist and one the writer may not name alike.
				add("node %q: job %q: no such job, or not one you may trigger", n.Name, n.Job)
				continue
			}
		}
		ns := wfengine.NodeSpec{Name: n.Name, JobID: id, Inline: inline, Params: n.Params, Join: n.Join, Disabled: n.Disabled,
			ForEach: n.ForEach, MaxRetries: n.MaxRetries}
		if n.Timeout != nil {
			ms := time.Duration(*n.Timeout).Milliseconds()
			ns.TimeoutMS = &ms
		}
		sp.Nodes = append(sp.Nodes, ns)
	}
	for _, e := range spec.Edges {
		sp.Edges = append(sp.Edges, wfengine.EdgeSpec(e))
	}
	if len(problems) == 0 {
		if err := sp.Validate(); err != nil {
			add("%v", err)
		}
	}
	if len(problems) > 0 {
		return store.Workflow{}, invalidf("%s", strings.Join(problems, "; "))
	}
	return store.Workflow{Job: j, Spec: sp, Policy: pol}, nil
}

// inlineJob checks an inline node's job as a job's spec is checked (the
// same function, jobFromSpec, with its defaults) and returns it as a node
// stores it. Its group is the workflow's (group) when it names none; one
// naming the workflow's group is stored without it, so that it follows
// the workflow to another group. Who may write it is the store's check
// (store.writeInlineJobs, refs.Check).
func (s *Server) inlineJob(ctx context.Context, group string, in *apiv1.InlineJob) (*wfengine.InlineJob, error) {
	spec := in.JobSpec()
	spec.Name = "inline"
	if spec.Group == "" {
		spec.Group = group
	}
	j, err := s.jobFromSpec(ctx, spec, s.now())
	if err != nil {
		return nil, err
	}
	out := store.InlineOf(j)
	if out.Group == group {
		out.Group = ""
	}
	return &out, nil
}

// inlineDoc is an inline node's job as the API answers it.
func inlineDoc(in *wfengine.InlineJob) *apiv1.InlineJob {
	var sharding *apiv1.Sharding
	if in.Shards > 0 {
		sharding = &apiv1.Sharding{Total: in.Shards}
	}
	return &apiv1.InlineJob{Sharding: sharding, Group: in.Group, Handler: in.Handler, Description: in.Description, Params: in.Params,
		MisfirePolicy: in.MisfirePolicy, RouteStrategy: in.RouteStrategy, BlockStrategy: in.BlockStrategy,
		MaxConcurrency: in.MaxConcurrency, Timeout: apiv1.Duration(time.Duration(in.TimeoutMS) * time.Millisecond),
		MaxRetries: in.MaxRetries, RetryBackoff: in.RetryBackoff,
		RetryInitial: apiv1.Duration(time.Duration(in.RetryInitialMS) * time.Millisecond),
		RetryMax:     apiv1.Duration(time.Duration(in.RetryMaxMS) * time.Millisecond),
		AlarmWebhook: in.AlarmWebhook, AlarmEmails: in.AlarmEmails,
		Priority: in.Priority, ConcurrencyKey: in.ConcurrencyKey, KeyCap: in.KeyCap, RateLimit: in.RateLimit, KeyRateLimit: in.KeyRateLimit}
}

func (s *Server) workflowDoc(ctx context.Context, w store.Workflow) apiv1.Workflow {
	d := apiv1.Workflow{ID: w.ID, Enabled: w.Enabled, Shard: w.Shard, NextFireAt: w.NextFireAt, LastFireAt: w.LastFireAt,
		Version: w.Version, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
		PausedNote: w.PausedNote, PausedAt: utcPtr(w.PausedAt), PausedBy: w.PausedBy,
		WorkflowSpec: apiv1.WorkflowSpec{Group: w.Group, Name: w.Name, Description: w.Description, Params: w.Params,
			ScheduleType: w.ScheduleType, ScheduleExpr: w.ScheduleExpr, Timezone: w.Timezone, MisfirePolicy: w.MisfirePolicy,
			MisfireThreshold: apiv1.Duration(w.MisfireThreshold), MaxCatchup: w.MaxCatchup, Jitter: apiv1.Duration(w.Jitter),
			StartAt: utcPtr(w.StartAt), EndAt: utcPtr(w.EndAt), Overlap: w.Policy.Overlap,
			ExcludeCalendars: w.ExcludeCalendars, IncludeCalendars: w.IncludeCalendars, Labels: w.Labels, Owner: w.Owner,
			MaxConcurrent: w.Policy.MaxConcurrent, Timeout: apiv1.Duration(w.Policy.Timeout), Version: w.Version}}
	for _, n := range w.Spec.Nodes {
		node := apiv1.WorkflowNode{Name: n.Name, JobID: n.JobID, Params: n.Params, Join: n.Join, Disabled: n.Disabled, ForEach: n.ForEach,
			MaxRetries: n.MaxRetries}
		if n.TimeoutMS != nil {
			d := apiv1.Duration(time.Duration(*n.TimeoutMS) * time.Millisecond)
			node.Timeout = &d
		}
		switch {
		case n.Inline != nil:
			// The job is the node's own: its row's id is no reference a
			// client may send back.
			node.JobID, node.Inline = 0, inlineDoc(n.Inline)
		default:
			if j, err := s.store.GetJob(ctx, n.JobID); err == nil {
				node.Job = j.Group + "/" + j.Name
			}
		}
		d.Nodes = append(d.Nodes, node)
	}
	for _, e := range w.Spec.Edges {
		d.Edges = append(d.Edges, apiv1.WorkflowEdge(e))
	}
	return d
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "group", "after", "limit", "labels"); err != nil {
		return err
	}
	after, limit, err := pageParams(r, "after", 100, 1000)
	if err != nil {
		return err
	}
	sel, err := labelsParam(r)
	if err != nil {
		return err
	}
	ws, err := s.store.SearchWorkflows(r.Context(), store.JobFilter{Group: r.URL.Query().Get("group"), Groups: readable(r),
		After: &store.JobKey{ID: after}, Limit: limit, Labels: sel})
	if err != nil {
		return err
	}
	out := apiv1.WorkflowList{Workflows: []apiv1.Workflow{}}
	for _, wf := range ws {
		out.Workflows = append(out.Workflows, s.workflowDoc(r.Context(), wf))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// triggerWorkflow writes a manual run of the workflow, with the params
// given (a JSON object; none: the workflow's), and hands it to the firing
// path, which starts the workflow run. It answers 202 with the run as
// written: GET /api/v1/workflow-runs/{id} follows it (404 for the moment
// before it starts).
func (s *Server) triggerWorkflow(w http.ResponseWriter, r *http.Request) error {
	id, t, err := triggerRequest(w, r)
	if err != nil {
		return err
	}
	if t.Params != nil && !jsonObject(*t.Params) {
		return invalidf("%s", errParamsObject)
	}
	if t.Priority != nil {
		// A workflow run is no worker's run: its nodes' runs take their
		// jobs' priorities.
		return invalidf("priority: a job trigger's only; a workflow's nodes run at their jobs' priorities")
	}
	if _, err := s.store.GetWorkflow(r.Context(), id); err != nil {
		return err
	}
	return s.fireManual(w, r, id, t)
}

// errParamsObject refuses a workflow's params that are not a JSON object.
const errParamsObject = "params: want a JSON object (nodes read it as {{ .params.<key> }})"

// jsonObject reports whether p is a JSON object, as a workflow's params
// must be.
func jsonObject(p string) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(p), &obj) == nil
}

func (s *Server) listWorkflowRuns(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "workflow", "before", "limit"); err != nil {
		return err
	}
	id, err := s.workflowOfRequest(r)
	if err != nil {
		return err
	}
	before, limit, err := pageParams(r, "before", 50, 500)
	if err != nil {
		return err
	}
	rs, err := s.store.ListWorkflowRuns(r.Context(), id, before, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.WorkflowRunList{Runs: docs(rs, workflowRunDoc)})
	return nil
}

// workflowOfRequest is the workflow of /workflows/{id}/runs, or of
// /workflow-runs?workflow=ID.
func (s *Server) workflowOfRequest(r *http.Request) (int64, error) {
	if r.PathValue("id") != "" {
		return pathID(r)
	}
	id, err := strconv.ParseInt(r.URL.Query().Get("workflow"), 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("workflow: want ?workflow=<workflow id>")
	}
	return id, nil
}

// workflowRunOp runs an operation on a workflow run, then fires the node
// runs it created and asks workers to stop the ones it cancelled. It
// answers 202 with the run as it is then.
func (s *Server) workflowRunOp(op string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		var act apiv1.NodeAction
		if err := decodeOptional(w, r, &act); err != nil {
			return err
		}
		if (op == "mark_succeeded" || op == "skip") && act.Node == "" {
			return invalidf("node is required")
		}
		if len(act.Output) > 0 && op != "mark_succeeded" {
			return invalidf("output is only given to mark-succeeded")
		}
		reason := act.Reason
		if reason == "" {
			reason = fmt.Sprintf("%s by %s", strings.ReplaceAll(op, "_", " "), actor(r).Name)
		}
		done, err := s.store.OperateWorkflowRun(r.Context(), actor(r), id,
			store.WorkflowOp{Op: op, Node: act.Node, Output: act.Output, Reason: reason})
		if err != nil {
			return err
		}
		ps, err := s.store.LoadScheduled(r.Context(), done.Spawned)
		if err != nil {
			s.log.Warn("node runs created but not loaded; the sweep fires them")
		}
		for _, p := range ps {
			s.cfg.Fire(p)
		}
		for _, k := range done.Kill {
			if err := s.cfg.Kill(r.Context(), k, reason); err != nil {
				return fmt.Errorf("send kill request for run %d: %w", k, err)
			}
		}
		run, err := s.store.GetWorkflowRun(r.Context(), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusAccepted, workflowRunDoc(run))
		return nil
	}
}

func workflowRunDoc(r store.WorkflowRun) apiv1.WorkflowRun {
	d := apiv1.WorkflowRun{ID: r.ID, WorkflowID: r.WorkflowID, Group: r.Group, Status: r.Status, ScheduledAt: r.ScheduledAt,
		Message: r.Message, NodeRuns: r.NodeRuns, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		TimeoutAt: r.TimeoutAt}
	if r.Params != nil {
		d.Params = *r.Params
	}
	for _, n := range r.Nodes {
		dn := apiv1.WorkflowRunNode{Name: n.Name, JobID: n.JobID, Status: n.Status, Reason: n.Reason, Attempt: n.Attempt,
			Bypass: n.Bypass, Output: n.Output}
		for _, nr := range n.Runs {
			dn.Runs = append(dn.Runs, apiv1.WorkflowNodeRun{RunID: nr.RunID, Attempt: nr.Attempt, Item: nr.Item,
				Status: string(nr.Status), Message: nr.Message, Output: nr.Output, ScheduledAt: nr.ScheduledAt,
				StartedAt: nr.StartedAt, FinishedAt: nr.FinishedAt})
		}
		d.Nodes = append(d.Nodes, dn)
	}
	return d
}

// Permission rules of the workflow routes.

func (s *Server) pathWorkflowGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	return pathGroup(r, "workflow", s.store.WorkflowGroup)
}

func (s *Server) pathWorkflowRunGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	return pathGroup(r, "workflow run", s.store.WorkflowRunGroup)
}

// markSucceededGroups is the run's group, and scripts when the call gives
// an output and a node of the workflow runs commands: the output reaches
// the params templates of the nodes after it, as a trigger's params do.
func (s *Server) markSucceededGroups(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	needs, err := s.pathWorkflowRunGroup(r, p)
	if err != nil || p.Admin {
		return needs, err
	}
	var f struct {
		Output json.RawMessage `json:"output"`
	}
	if _, err := peekBody(r, &f); err != nil || len(f.Output) == 0 {
		return needs, err
	}
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	wf, err := s.store.WorkflowOfRun(r.Context(), id)
	if err != nil {
		return nil, err
	}
	cmds, err := s.store.WorkflowRunsCommands(r.Context(), wf)
	if errors.Is(err, store.ErrNotFound) {
		return needs, nil // the workflow was deleted: its runs' nodes go on
	}
	if err != nil {
		return nil, err
	}
	if cmds {
		needs[0].Scripts, needs[0].Why = true, "a node of the workflow runs commands, and the output given may reach it through a params template"
	}
	return needs, nil
}

// queryWorkflowGroup is the group of ?workflow=ID.
func (s *Server) queryWorkflowGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	id, err := s.workflowOfRequest(r)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("workflow %d", id)
	g, err := s.store.WorkflowGroup(r.Context(), id)
	if err != nil {
		return nil, hidden(err, what)
	}
	return []auth.Need{{Group: g, Hidden: true, What: what}}, nil
}

// workflowBodyGroup is the group a new workflow goes to. Its nodes' jobs
// are checked where the references are made (store.checkNodes).
func (s *Server) workflowBodyGroup(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	if p.Admin {
		return nil, nil
	}
	var f jobFields
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	return []auth.Need{{Group: f.Group}}, nil
}

// workflowUpdateGroups are the workflow's group as it is and as the body
// makes it.
func (s *Server) workflowUpdateGroups(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	cur, what, err := pathRecord(r, "workflow", s.store.GetWorkflow)
	if err != nil || p.Admin {
		return nil, err
	}
	var f jobFields
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	needs := []auth.Need{{Group: cur.Group, Hidden: true, What: what}}
	if f.Group != "" && f.Group != cur.Group {
		needs = append(needs, auth.Need{Group: f.Group})
	}
	return needs, nil
}

// workflowTriggerGroups is the workflow's group, and scripts when the
// trigger gives params and a node runs commands: its params template may
// put them in a command.
func (s *Server) workflowTriggerGroups(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	get := func(ctx context.Context, id int64) (store.Job, error) {
		wf, err := s.store.GetWorkflow(ctx, id)
		return wf.Job, err
	}
	return triggerNeeds(r, p, "workflow", get, func(ctx context.Context, j store.Job) (string, error) {
		cmds, err := s.store.WorkflowRunsCommands(ctx, j.ID)
		if err != nil || !cmds {
			return "", err
		}
		return "a node of the workflow runs commands, and the trigger gives params its template may pass on", nil
	})
}
