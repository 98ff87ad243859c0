package api

import (
	"net/http"
)

// Operations on workflows beyond their definitions and the operations on
// one run's nodes (workflows.go): re-running a whole run.

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
	s.cfg.Fire(p)
	run, err := s.store.GetRun(r.Context(), p.RunID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, runDoc(run))
	return nil
}
