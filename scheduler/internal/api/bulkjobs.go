package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/labels"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// Labels and owners of jobs, and actions on the jobs a label selector
// picks (docs/jobs.md, "Labels and owners").

const (
	maxOwnerLen     = 200
	defaultBulkMax  = 100
	maxBulkMax      = 1000
	bulkActionsWant = "enable, disable or trigger"
)

// checkLabels validates a spec's labels and owner.
func checkLabels(spec apiv1.JobSpec, add func(string, ...any)) {
	if err := labels.Check(spec.Labels); err != nil {
		add("labels: %v", err)
	}
	if utf8.RuneCountInString(spec.Owner) > maxOwnerLen || strings.ContainsFunc(spec.Owner, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		add("owner: at most %d characters, no control characters", maxOwnerLen)
	}
}

// bulkJobs acts on every job (or, kind workflow, every workflow: its row
// is a job's, enabled, disabled and triggered by the same calls) the
// selector picks among those the caller
// may read, one job at a time through the same store call as the job's
// own route, each with its audit entry. A job the caller may read but not
// operate is reported refused; one they may not read is never picked.
// More jobs than max refuses the whole request before any is touched.
func (s *Server) bulkJobs(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.BulkRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	sel, err := labels.ParseSelector(req.Selector)
	switch {
	case err != nil:
		return invalidf("%v", err)
	case len(sel) == 0:
		return invalidf("selector is required (key=value pairs, e.g. env=prod,team=billing): a bulk action never picks every job")
	case req.Action != "enable" && req.Action != "disable" && req.Action != "trigger":
		return invalidf("action %q: want %s", req.Action, bulkActionsWant)
	case req.Max < 0 || req.Max > maxBulkMax:
		return invalidf("max %d: want 1 to %d (0: %d)", req.Max, maxBulkMax, defaultBulkMax)
	case req.Group != "" && !wire.ValidName(req.Group):
		return invalidf("group %q is not a valid group name", req.Group)
	case len(req.Note) > maxPauseNoteLen:
		return invalidf("note: at most %d bytes", maxPauseNoteLen)
	case req.Kind != "" && req.Kind != store.KindJob && req.Kind != store.KindWorkflow:
		return invalidf("kind %q: want job (the default) or workflow", req.Kind)
	}
	limit := req.Max
	if limit == 0 {
		limit = defaultBulkMax
	}
	js, more, err := s.store.SearchJobs(r.Context(), store.JobFilter{Group: req.Group, Groups: readable(r), Labels: sel, Limit: limit, Kind: req.Kind})
	if err != nil {
		return err
	}
	if more {
		return invalidf("selector %s picks more than max=%d jobs: narrow it (or a group) or raise max (up to %d)", labels.Format(sel), limit, maxBulkMax)
	}
	p := auth.FromContext(r.Context())
	out := apiv1.BulkResult{Matched: len(js), Items: make([]apiv1.BulkItem, 0, len(js))}
	for _, j := range js {
		item := apiv1.BulkItem{JobID: j.ID, Name: j.Name, Group: j.Group}
		if err := s.bulkOne(r, p, req, j, &item); err != nil {
			item.Error = strings.TrimPrefix(err.Error(), errInvalid.Error()+": ")
		} else {
			item.OK = true
			out.Done++
		}
		out.Items = append(out.Items, item)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// errNotOperator is a job of a bulk action the caller may not change.
var errNotOperator = errors.New("you may read this job but not change it (operator of its group needed)")

// bulkOne applies req's action to j as its own route would.
func (s *Server) bulkOne(r *http.Request, p *auth.Principal, req apiv1.BulkRequest, j store.Job, item *apiv1.BulkItem) error {
	if !p.Can(j.Group, auth.Operator) {
		return errNotOperator
	}
	ctx := r.Context()
	switch req.Action {
	case "enable":
		_, err := s.store.SetEnabledWith(ctx, actor(r), j.ID, store.EnableOptions{Enabled: true})
		return err
	case "disable":
		_, err := s.store.SetEnabledWith(ctx, actor(r), j.ID, store.EnableOptions{Note: req.Note})
		return err
	}
	pl, _, err := s.store.TriggerRun(ctx, actor(r), j.ID, store.Trigger{})
	if err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	s.cfg.Fire(pl)
	item.RunID = pl.RunID
	return nil
}
