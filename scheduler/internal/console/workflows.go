package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
	"github.com/jetjob/jetjob/scheduler/internal/labels"
)

// The workflow pages (docs/workflows.md): the list, a workflow with its
// graph, the YAML editor (workflows_edit.go) and a workflow run
// (workflow_runs.go). As every page, they read and write through the API,
// so a workflow of a group the user may not read is the API's 404 and an
// operation they may not do its 403.

const (
	// workflowsPageSize is how many workflows one page of the list shows.
	workflowsPageSize = 50
	// workflowPageRuns is how many recent runs a workflow's page lists.
	workflowPageRuns = 20
)

// workflowsPage is the workflow list's data.
type workflowsPage struct {
	Group  string
	Groups []string
	// Labels is the label selector the list is filtered by ("": none).
	Labels string
	Rows   []workflowRow
	// NextURL is the next page's link ("" on the last page).
	NextURL string
	Paged   bool
}

// workflowRow is a workflow with its last run (nil: none yet).
type workflowRow struct {
	apiv1.Workflow
	Last *apiv1.WorkflowRun
}

// Schedule is the workflow's schedule as the "jobSchedule" partial takes it.
func (w workflowRow) Schedule() apiv1.JobSpec { return scheduleOf(&w.Workflow) }

func scheduleOf(w *apiv1.Workflow) apiv1.JobSpec {
	return apiv1.JobSpec{ScheduleType: w.ScheduleType, ScheduleExpr: w.ScheduleExpr, Timezone: w.Timezone}
}

func workflowPath(id int64) string { return "/api/v1/workflows/" + strconv.FormatInt(id, 10) }
func workflowURL(id int64) string  { return "/workflows/" + strconv.FormatInt(id, 10) }

// workflows lists the workflows the user may read, of one group when
// ?group= says so, each with its last run's status.
func (c *Console) workflows(w http.ResponseWriter, r *http.Request) error {
	u, err := c.me(r)
	if err != nil {
		return err
	}
	in := r.URL.Query()
	data := &workflowsPage{Group: in.Get("group"), Labels: strings.TrimSpace(in.Get("labels"))}
	var gl apiv1.GroupList
	if _, err := c.call(r, http.MethodGet, "/api/v1/groups", nil, nil, &gl); err != nil {
		return err
	}
	for _, g := range gl.Groups {
		data.Groups = append(data.Groups, g.Name)
	}
	q := url.Values{"limit": {strconv.Itoa(workflowsPageSize)}}
	if data.Group != "" {
		q.Set("group", data.Group)
	}
	if data.Labels != "" {
		q.Set("labels", data.Labels)
	}
	if a := in.Get("after"); a != "" {
		q.Set("after", a)
		data.Paged = true
	}
	var wl apiv1.WorkflowList
	if _, err := c.call(r, http.MethodGet, "/api/v1/workflows", q, nil, &wl); err != nil {
		// A selector the API refuses is the user's to mend: said on
		// the page, the filter kept.
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
			return c.render(w, r, http.StatusBadRequest, "workflows", page{Title: c.lang(r, u).T("Workflows"), User: u, Error: ae.Error(), Data: data})
		}
		return err
	}
	for _, wf := range wl.Workflows {
		row := workflowRow{Workflow: wf}
		var rl apiv1.WorkflowRunList
		if _, err := c.call(r, http.MethodGet, workflowPath(wf.ID)+"/runs", url.Values{"limit": {"1"}}, nil, &rl); err != nil {
			return err
		}
		if len(rl.Runs) > 0 {
			row.Last = &rl.Runs[0]
		}
		data.Rows = append(data.Rows, row)
	}
	if len(wl.Workflows) == workflowsPageSize {
		next := url.Values{"after": {strconv.FormatInt(wl.Workflows[len(wl.Workflows)-1].ID, 10)}}
		if data.Group != "" {
			next.Set("group", data.Group)
		}
		if data.Labels != "" {
			next.Set("labels", data.Labels)
		}
		data.NextURL = "/workflows?" + next.Encode()
	}
	return c.render(w, r, http.StatusOK, "workflows", page{Title: c.lang(r, u).T("Workflows"), User: u, Data: data})
}

// workflowPage is a workflow's page data.
type workflowPage struct {
	Workflow apiv1.Workflow
	// Graph is coloured by LastRun's node statuses (nil: no run yet).
	Graph    wfGraph
	LastRun  *apiv1.WorkflowRun
	Runs     []apiv1.WorkflowRun
	Settings []setting
	YAML     string
	// CanOperate shows the edit, trigger and delete controls (the API
	// decides).
	CanOperate bool
}

// Schedule is the workflow's schedule for the "jobSchedule" partial.
func (p *workflowPage) Schedule() apiv1.JobSpec { return scheduleOf(&p.Workflow) }

// workflowConsoleID is the {id} of a workflow's console path.
func workflowConsoleID(r *http.Request) (int64, error) {
	return pathID(r, http.StatusNotFound, "no such page: workflow id %q is not a positive number")
}

// userAndWorkflow reads the user and the workflow of the path.
func (c *Console) userAndWorkflow(r *http.Request) (*User, apiv1.Workflow, error) {
	return userAndObject[apiv1.Workflow](c, r, workflowConsoleID, workflowPath)
}

// workflow shows a workflow: its graph coloured by its last run, its
// settings, its YAML and its recent runs.
func (c *Console) workflow(w http.ResponseWriter, r *http.Request) error {
	u, wf, err := c.userAndWorkflow(r)
	if err != nil {
		return err
	}
	data := &workflowPage{Workflow: wf, CanOperate: u.CanOperate(wf.Group), Settings: workflowSettings(&wf, c.lang(r, u))}
	var rl apiv1.WorkflowRunList
	if _, err := c.call(r, http.MethodGet, workflowPath(wf.ID)+"/runs", url.Values{"limit": {strconv.Itoa(workflowPageRuns)}}, nil, &rl); err != nil {
		return err
	}
	data.Runs = rl.Runs
	var statuses map[string]apiv1.WorkflowRunNode
	if len(rl.Runs) > 0 {
		var last apiv1.WorkflowRun
		if _, err := c.call(r, http.MethodGet, "/api/v1/workflow-runs/"+strconv.FormatInt(rl.Runs[0].ID, 10), nil, nil, &last); err != nil {
			return err
		}
		data.LastRun = &last
		statuses = nodesByName(last.Nodes)
	}
	data.Graph = workflowGraph(wf.Nodes, wf.Edges, statuses, c.lang(r, u), func(n string) string {
		for _, nd := range wf.Nodes {
			if nd.Name == n && nd.JobID > 0 {
				return jobURL(nd.JobID)
			}
		}
		return ""
	})
	if b, err := jobfile.EncodeWorkflow(&wf); err == nil {
		data.YAML = string(b)
	}
	return c.render(w, r, http.StatusOK, "workflow", page{Title: wf.Name, User: u, Data: data})
}

func nodesByName(ns []apiv1.WorkflowRunNode) map[string]apiv1.WorkflowRunNode {
	m := make(map[string]apiv1.WorkflowRunNode, len(ns))
	for _, n := range ns {
		m[n.Name] = n
	}
	return m
}

// workflowGraph lays out a workflow's nodes and edges, each node coloured
// by its status in statuses (nil: no run), titled in l and linked where
// link says.
func workflowGraph(nodes []apiv1.WorkflowNode, edges []apiv1.WorkflowEdge, statuses map[string]apiv1.WorkflowRunNode, l i18n.Lang, link func(string) string) wfGraph {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	es := make([]graphEdgeIn, len(edges))
	for i, e := range edges {
		es[i] = graphEdgeIn{From: e.From, To: e.To, On: e.On}
	}
	g := layoutGraph(names, es)
	for i := range g.Nodes {
		n := &g.Nodes[i]
		var nd apiv1.WorkflowNode
		for _, x := range nodes {
			if x.Name == n.Name {
				nd = x
				break
			}
		}
		title := []string{n.Name}
		switch {
		case nd.Job != "":
			title = append(title, l.T("job %s", nd.Job))
		case nd.Inline != nil:
			title = append(title, l.T("inline job, handler %s", nd.Inline.Handler))
		}
		if nd.Disabled {
			title = append(title, l.T("disabled"))
		}
		if nd.ForEach != "" {
			title = append(title, l.T("for each %s", nd.ForEach))
		}
		if st, ok := statuses[n.Name]; ok {
			n.Status, n.Class = st.Status, statusClass(st.Status)
			title = append(title, l.T(st.Status))
			if st.Reason != "" {
				title = append(title, st.Reason)
			}
		}
		n.Title = strings.Join(title, " · ")
		if link != nil {
			n.URL = link(n.Name)
		}
	}
	return g
}

// workflowSettings lists what a workflow's YAML says besides its graph,
// its words in l (the labels are catalogue ids the page translates).
func workflowSettings(wf *apiv1.Workflow, l i18n.Lang) []setting {
	dash := func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	}
	overlap := wf.Overlap
	if wf.MaxConcurrent > 0 {
		overlap += l.T(" (at most %d)", wf.MaxConcurrent)
	}
	timeout := l.T("none")
	if wf.Timeout > 0 {
		timeout = durText(wf.Timeout)
	}
	enabled := l.T("yes")
	if !wf.Enabled {
		enabled = l.T("no")
	}
	out := []setting{
		{"Schedule", strings.TrimSpace(wf.ScheduleType + " " + wf.ScheduleExpr)},
		{"Time zone", dash(wf.Timezone)},
		{"Misfire policy", dash(wf.MisfirePolicy)},
		{"Overlap", dash(overlap)},
		{"Timeout (whole run)", timeout},
		{"Enabled", enabled},
		{"Labels", dash(labels.Format(wf.Labels))},
		{"Owner", dash(wf.Owner)},
		{"Excluded days (calendars)", dash(strings.Join(wf.ExcludeCalendars, ", "))},
		{"Included days (calendars)", dash(strings.Join(wf.IncludeCalendars, ", "))},
		{"Params", dash(wf.Params)},
		{"Next fire (UTC)", when(wf.NextFireAt)},
		{"Last fire (UTC)", when(wf.LastFireAt)},
		{"Nodes / edges", strconv.Itoa(len(wf.Nodes)) + " / " + strconv.Itoa(len(wf.Edges))},
		{"Version", strconv.FormatInt(wf.Version, 10)},
		{"Updated (UTC)", when(wf.UpdatedAt)},
	}
	return out
}

// triggerWorkflow starts a run now, with the form's params when given,
// and opens the new run's page.
func (c *Console) triggerWorkflow(w http.ResponseWriter, r *http.Request) error {
	return c.trigger(w, r, workflowKind, noticeWorkflowTriggered)
}

var workflowKind = objectKind{parseID: workflowConsoleID, apiPath: workflowPath, listURL: "/workflows", runURL: workflowRunURL, trimParams: true}

// deleteWorkflow deletes the workflow (its runs stay) and returns to the
// list.
func (c *Console) deleteWorkflow(w http.ResponseWriter, r *http.Request) error {
	return c.remove(w, r, workflowKind, noticeWorkflowDeleted)
}
