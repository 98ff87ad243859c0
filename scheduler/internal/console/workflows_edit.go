package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// The workflow editor: the workflow as the YAML document `jetjob export`
// writes and `jetjob apply -f` reads (package jobfile), in a textarea.
// "Check" reads the document and validates its graph with the engine's
// own validation (wfengine.Spec.Validate: cycles named, unknown nodes,
// joins that can never be met, templates naming nodes not upstream) and
// draws it; "Save" sends it to POST or PUT /api/v1/workflows, where the
// API validates it whole (jobs, schedule, permissions) and writes the
// audit entry, and its refusal comes back as the form with each problem
// listed.

// workflowForm is the editor's data.
type workflowForm struct {
	// Workflow is the workflow edited; nil on create.
	Workflow *apiv1.Workflow
	// Version is the version the edit is based on (the API refuses the
	// save with 409 when the workflow changed since).
	Version int64
	YAML    string
	// Problems are what is wrong with the document, each on its own.
	Problems []string
	// Checked says the document was read and its graph is valid (the
	// API checks the rest when saving).
	Checked bool
	// lang is the language of the graph's titles.
	lang i18n.Lang
	// Graph is the document's graph (nil: none could be read).
	Graph *wfGraph
}

// Action is where the form posts.
func (f *workflowForm) Action() string {
	if f.Workflow != nil {
		return workflowURL(f.Workflow.ID)
	}
	return "/workflows"
}

// newWorkflowYAML is a new workflow's starting document: two nodes the
// user renames to their own jobs.
func newWorkflowYAML(group string) string {
	return fmt.Sprintf(`apiVersion: jetjob/v1
kind: Workflow
group: %s
name: my-workflow
schedule_type: none
nodes:
  - {name: extract, job: %s/extract}
  - {name: load, job: %s/load}
edges:
  - {from: extract, to: load}
`, group, group, group)
}

// newWorkflow shows the editor with a starting document.
func (c *Console) newWorkflow(w http.ResponseWriter, r *http.Request) error {
	u, groups, err := c.meAndNewGroups(r)
	if err != nil {
		return err
	}
	group := groups[0]
	if g := r.URL.Query().Get("group"); g != "" && u.CanOperate(g) {
		group = g
	}
	f := &workflowForm{YAML: newWorkflowYAML(group), lang: c.lang(r, u)}
	f.check()
	f.Problems, f.Checked = nil, false // a starting document names jobs that may not exist: say nothing yet
	return c.render(w, r, http.StatusOK, "workflow_form", page{Title: c.lang(r, u).T("New workflow"), User: u, Data: f})
}

// editWorkflow shows the editor with the workflow's document.
func (c *Console) editWorkflow(w http.ResponseWriter, r *http.Request) error {
	u, wf, err := c.userAndWorkflow(r)
	if err != nil {
		return err
	}
	if err := mayEdit(u, "workflow", wf.Name, wf.Group); err != nil {
		return err
	}
	b, err := jobfile.EncodeWorkflow(&wf)
	if err != nil {
		return err
	}
	f := &workflowForm{Workflow: &wf, Version: wf.Version, YAML: string(b), lang: c.lang(r, u)}
	f.check()
	return c.render(w, r, http.StatusOK, "workflow_form", page{Title: c.lang(r, u).T("Edit %s", wf.Name), User: u, Data: f})
}

// check reads the form's document and validates its graph, filling
// Problems, Checked and Graph; it returns the spec read.
func (f *workflowForm) check() apiv1.WorkflowSpec {
	spec, err := jobfile.ParseWorkflow("workflow", []byte(f.YAML))
	if err != nil {
		f.Problems = append(f.Problems, err.Error())
		return spec
	}
	g := workflowGraph(spec.Nodes, spec.Edges, nil, f.lang, nil)
	f.Graph = &g
	if err := graphSpec(spec).Validate(); err != nil {
		f.Problems = append(f.Problems, problemsOf(err.Error())...)
		return spec
	}
	f.Checked = true
	return spec
}

// graphSpec is the graph of spec as the engine validates it. The node
// jobs are resolved by the API when saving: here each stands as a valid
// id, so that only the graph and templates are judged.
func graphSpec(spec apiv1.WorkflowSpec) *wfengine.Spec {
	var sp wfengine.Spec
	for _, n := range spec.Nodes {
		ns := wfengine.NodeSpec{Name: n.Name, JobID: 1, Params: n.Params, Join: n.Join, Disabled: n.Disabled,
			ForEach: n.ForEach, MaxRetries: n.MaxRetries}
		if n.Timeout != nil {
			ms := durMS(*n.Timeout)
			ns.TimeoutMS = &ms
		}
		sp.Nodes = append(sp.Nodes, ns)
	}
	for _, e := range spec.Edges {
		sp.Edges = append(sp.Edges, wfengine.EdgeSpec(e))
	}
	return &sp
}

// problemsOf splits a validation message ("invalid workflow: a; b") into
// its problems.
func problemsOf(msg string) []string {
	for _, p := range []string{"invalid: ", "invalid workflow: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	var out []string
	for _, p := range strings.Split(msg, "; ") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// createWorkflow checks (op=check) or saves the posted document as a new
// workflow.
func (c *Console) createWorkflow(w http.ResponseWriter, r *http.Request) error {
	return c.saveWorkflow(w, r, nil)
}

// updateWorkflow checks or saves the posted document over the workflow of
// the path, at the version the form was opened at.
func (c *Console) updateWorkflow(w http.ResponseWriter, r *http.Request) error {
	id, err := workflowConsoleID(r)
	if err != nil {
		return err
	}
	return c.saveWorkflow(w, r, &id)
}

func (c *Console) saveWorkflow(w http.ResponseWriter, r *http.Request, id *int64) error {
	if err := r.ParseForm(); err != nil {
		return badForm(err)
	}
	u, err := c.me(r)
	if err != nil {
		return err
	}
	f := &workflowForm{YAML: strings.ReplaceAll(r.PostForm.Get("yaml"), "\r\n", "\n"), lang: c.lang(r, u)}
	title := c.lang(r, u).T("New workflow")
	if id != nil {
		f.Version, err = strconv.ParseInt(r.PostForm.Get("version"), 10, 64)
		if err != nil || f.Version <= 0 {
			return badForm(fmt.Errorf("version %q: want the positive version the form was opened at", r.PostForm.Get("version")))
		}
		var cur apiv1.Workflow
		if _, err := c.call(r, http.MethodGet, workflowPath(*id), nil, nil, &cur); err != nil {
			return err
		}
		f.Workflow, title = &cur, c.lang(r, u).T("Edit %s", cur.Name)
	}
	spec := f.check()
	code := http.StatusOK
	if r.PostForm.Get("op") != "save" {
		return c.render(w, r, code, "workflow_form", page{Title: title, User: u, Data: f})
	}
	if !f.Checked {
		return c.render(w, r, http.StatusBadRequest, "workflow_form", page{Title: title, User: u, Data: f})
	}
	var out apiv1.Workflow
	n := noticeWorkflowCreated
	if id == nil {
		_, err = c.call(r, http.MethodPost, "/api/v1/workflows", nil, spec, &out)
	} else {
		spec.Version, n = f.Version, noticeWorkflowSaved
		_, err = c.call(r, http.MethodPut, workflowPath(*id), nil, spec, &out)
	}
	var ae *APIError
	switch {
	case err == nil:
		redirect(w, r, workflowURL(out.ID), n)
		return nil
	case errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Doc.CurrentVersion > 0:
		code = http.StatusConflict
		f.Checked = false
		f.Problems = append(f.Problems, fmt.Sprintf("Someone else changed this workflow while you edited it (it is now at version %d): "+
			"copy your document, open the editor again and apply your changes there.", ae.Doc.CurrentVersion))
	case errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusConflict || ae.Status == http.StatusForbidden):
		// Shown in the form, so that what was typed is not lost.
		code = ae.Status
		f.Checked = false
		f.Problems = append(f.Problems, problemsOf(ae.Error())...)
	default:
		return err
	}
	return c.render(w, r, code, "workflow_form", page{Title: title, User: u, Data: f})
}

func durMS(d apiv1.Duration) int64 { return time.Duration(d).Milliseconds() }
