package api

import (
	"net/http"

	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Operations on workflows beyond their definitions and the operations on
// one run's nodes (workflows.go): re-running a whole run; pausing,
// resuming and backfilling a workflow. A workflow's schedule is its jobs
// row's, so the last three are the jobs' own implementations
// (schedops.go, backfill.go) routed here under the workflow's
// permissions (its routes find it as a workflow: a plain job's id is not
// found there); only the document answered differs.

// pauseWorkflow disables the workflow's schedule, keeping the optional
// body's note ({"note": "..."}), as a job's disable does. Runs already
// started or queued go on.
func (s *Server) pauseWorkflow(w http.ResponseWriter, r *http.Request) error {
	return s.setEnabled(w, r, disableOptions, workflowAnswer)
}

// resumeWorkflow enables the workflow's schedule again; the optional body
// says what happens to the fires missed while paused ({"catch_up":
// "policy"}, the default: its misfire policy; "none": not run), as a
// job's enable does.
func (s *Server) resumeWorkflow(w http.ResponseWriter, r *http.Request) error {
	return s.setEnabled(w, r, enableOptions, workflowAnswer)
}

// workflowAnswer answers the workflow document of j, a workflow's row.
func workflowAnswer(s *Server, w http.ResponseWriter, r *http.Request, j store.Job) error {
	wf, err := s.store.GetWorkflow(r.Context(), j.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.workflowDoc(r.Context(), wf))
	return nil
}

// rerunWorkflowRun starts a new run of the workflow of the path's run,
// with that run's params, by the path every manual trigger takes
// (store.RerunWorkflowRun): the workflow's overlap policy and cap apply,
// and the new run's message names the run it re-runs. The old run is
// left as it is. It answers 202 with the new run as written, like a
// trigger: GET /api/v1/workflow-runs/{id} follows it.
//
// Its permission is operator of the run's group, as for retry, with no
// scripts: the params are the ones the old run ran with, not chosen by
// the caller.
func (s *Server) rerunWorkflowRun(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var none struct{}
	if err := decodeOptional(w, r, &none); err != nil {
		return err
	}
	p, err := s.store.RerunWorkflowRun(r.Context(), actor(r), id)
	if err != nil {
		return err
	}
	return s.fired(w, r, p)
}
