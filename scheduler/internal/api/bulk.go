package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/inproc"
)

// Bulk operations act on many runs at once (the console's selection, or
// every run matching a search). Each item goes through its own route, in
// process and with the caller's credentials (package inproc): it is
// authorized, validated and audited exactly as if it were asked alone, so
// a bulk request can do nothing its items could not, and one refused item
// is reported without stopping the others.

// maxBulk bounds the items of one bulk request: a request's work stays a
// few seconds; more is several requests.
const maxBulk = 500

// bulkRuns applies apiv1.RunsBulk's action to each of its runs.
func (s *Server) bulkRuns(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.RunsBulk
	if err := decode(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.Action != apiv1.BulkKill && req.Action != apiv1.BulkRerun && req.Action != apiv1.BulkDelete:
		return invalidf("action %q: want %s, %s or %s", req.Action, apiv1.BulkKill, apiv1.BulkRerun, apiv1.BulkDelete)
	case req.Filter != "" && len(req.IDs) > 0:
		return invalidf("ids and filter: give one")
	case req.Filter != "":
		ids, err := s.bulkFilter(r, req.Filter)
		if err != nil {
			return err
		}
		req.IDs = ids
	case len(req.IDs) == 0:
		return invalidf("ids: name at least one run (or give a filter)")
	case len(req.IDs) > maxBulk:
		return invalidf("ids: %d runs, at most %d per request", len(req.IDs), maxBulk)
	}
	out := apiv1.RunsBulkResult{Results: make([]apiv1.RunsBulkItem, 0, len(req.IDs))}
	seen := map[int64]bool{}
	for _, id := range req.IDs {
		if id <= 0 || seen[id] {
			continue
		}
		seen[id] = true
		item := s.bulkRun(r, req.Action, id)
		if item.Error == "" {
			out.Done++
		} else {
			out.Failed++
		}
		out.Results = append(out.Results, item)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// bulkFilter is the ids of the runs GET /runs?filter answers the caller,
// at most maxBulk: a filter matching more is refused, so that "every run
// matching" never silently means "the first 500 of them".
func (s *Server) bulkFilter(r *http.Request, filter string) ([]int64, error) {
	q, err := url.ParseQuery(filter)
	if err != nil {
		return nil, invalidf("filter %q: %v", filter, err)
	}
	if q.Has("limit") || q.Has("cursor") {
		return nil, invalidf("filter: no limit or cursor (a bulk request takes every run the filter matches, at most %d)", maxBulk)
	}
	q.Set("limit", strconv.Itoa(maxBulk))
	resp, err := inproc.Do(r.Context(), s.mux, r, http.MethodGet, "/api/v1/runs?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("bulk: search runs: %w", err)
	}
	if !resp.OK() {
		var e apiv1.Error
		if json.Unmarshal(resp.Body, &e) != nil || e.Error == "" {
			e.Error = http.StatusText(resp.Code)
		}
		return nil, &httpError{code: resp.Code, msg: "filter: " + e.Error}
	}
	var list apiv1.RunList
	if err := json.Unmarshal(resp.Body, &list); err != nil {
		return nil, fmt.Errorf("bulk: search runs: %w", err)
	}
	if list.Cursor != "" {
		return nil, invalidf("filter matches more than %d runs: narrow it (from, to, status, job), or send several requests", maxBulk)
	}
	if len(list.Runs) == 0 {
		return nil, invalidf("filter matches no run")
	}
	ids := make([]int64, 0, len(list.Runs))
	for _, run := range list.Runs {
		ids = append(ids, run.ID)
	}
	return ids, nil
}

// bulkRun does action to run id through its route: kill is POST
// /runs/{id}/kill; rerun reads the run and triggers its job again with the
// run's params (none when it used the job's), as the console's Re-run;
// delete is DELETE /runs/{id}.
func (s *Server) bulkRun(r *http.Request, action string, id int64) apiv1.RunsBulkItem {
	item := apiv1.RunsBulkItem{ID: id}
	path := "/api/v1/runs/" + strconv.FormatInt(id, 10)
	var resp *inproc.Response
	var err error
	switch action {
	case apiv1.BulkKill:
		resp, err = inproc.Do(r.Context(), s.mux, r, http.MethodPost, path+"/kill", nil)
	case apiv1.BulkDelete:
		resp, err = inproc.Do(r.Context(), s.mux, r, http.MethodDelete, path, nil)
	case apiv1.BulkRerun:
		var run apiv1.Run
		if resp, err = inproc.Do(r.Context(), s.mux, r, http.MethodGet, path, nil); err == nil && resp.OK() {
			if err = json.Unmarshal(resp.Body, &run); err == nil {
				var body []byte
				if body, err = json.Marshal(apiv1.TriggerRequest{Params: paramsOf(run)}); err == nil {
					resp, err = inproc.Do(r.Context(), s.mux, r, http.MethodPost,
						"/api/v1/jobs/"+strconv.FormatInt(run.JobID, 10)+"/trigger", body)
				}
			}
		}
	}
	if err != nil {
		item.Status, item.Error = http.StatusInternalServerError, fmt.Sprintf("run %d: %v", id, err)
		return item
	}
	item.Status = resp.Code
	if !resp.OK() {
		var e apiv1.Error
		if json.Unmarshal(resp.Body, &e) != nil || e.Error == "" {
			e.Error = http.StatusText(resp.Code)
		}
		item.Error = e.Error
		return item
	}
	var run apiv1.Run
	if json.Unmarshal(resp.Body, &run) == nil {
		item.Run = run.ID
	}
	return item
}

// paramsOf is what a re-run of run is given: its own params, or none when
// it ran with its job's.
func paramsOf(run apiv1.Run) *string {
	if run.Params == "" {
		return nil
	}
	return &run.Params
}
