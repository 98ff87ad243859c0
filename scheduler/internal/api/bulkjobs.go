package api

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
	bulkActionsWant = "enable, disable, trigger or delete"
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
// selector picks among those the caller may read (or on each one IDs
// names), one job at a time through the same
// store call as the job's own route, each with its audit entry. A job the
// caller may read but not operate is reported refused; one they may not
// read is never picked (named by id, it is reported not found). More jobs
// than max refuses the whole request before any is touched.
func (s *Server) bulkJobs(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.BulkRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	sel, err := labels.ParseSelector(req.Selector)
	limit := req.Max
	if limit == 0 {
		limit = defaultBulkMax
	}
	switch {
	case err != nil:
		return invalidf("%v", err)
	case len(sel) == 0 && len(req.IDs) == 0:
		return invalidf("selector or ids is required (key=value pairs, e.g. env=prod,team=billing, or job ids): a bulk action never picks every job")
	case len(sel) > 0 && len(req.IDs) > 0:
		return invalidf("selector and ids: give one")
	case !slices.Contains(bulkActions, req.Action):
		return invalidf("action %q: want %s", req.Action, bulkActionsWant)
	case req.Max < 0 || req.Max > maxBulkMax:
		return invalidf("max %d: want 1 to %d (0: %d)", req.Max, maxBulkMax, defaultBulkMax)
	case req.Group != "" && !wire.ValidName(req.Group):
		return invalidf("group %q is not a valid group name", req.Group)
	case utf8.RuneCountInString(req.Note) > maxPauseNoteLen:
		return invalidf("note: at most %d characters", maxPauseNoteLen)
	case len(req.IDs) > limit:
		return invalidf("ids: %d jobs, more than max=%d (raise max, up to %d)", len(req.IDs), limit, maxBulkMax)
	case req.Kind != "" && req.Kind != store.KindJob && req.Kind != store.KindWorkflow:
		return invalidf("kind %q: want job (the default) or workflow", req.Kind)
	case req.Kind == store.KindWorkflow && req.Action == "delete":
		return invalidf("action delete: workflows are deleted one at a time (DELETE /workflows/{id})")
	}
	var out apiv1.BulkResult
	if len(sel) > 0 {
		js, more, err := s.store.SearchJobs(r.Context(), store.JobFilter{Group: req.Group, Groups: readable(r), Labels: sel, Limit: limit, Kind: req.Kind})
		if err != nil {
			return err
		}
		if more {
			return invalidf("selector %s picks more than max=%d jobs: narrow it (or a group) or raise max (up to %d)", labels.Format(sel), limit, maxBulkMax)
		}
		out.Items = make([]apiv1.BulkItem, 0, len(js))
		for _, j := range js {
			out.Items = append(out.Items, s.bulkItem(r, req, j))
		}
	} else {
		out.Items = make([]apiv1.BulkItem, 0, len(req.IDs))
		seen := map[int64]bool{}
		for _, id := range req.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			j, err := s.bulkPick(r, req, id)
			if err != nil {
				out.Items = append(out.Items, apiv1.BulkItem{JobID: id, Error: err.Error()})
				continue
			}
			out.Items = append(out.Items, s.bulkItem(r, req, j))
		}
	}
	for _, it := range out.Items {
		if it.Error != "no such job" {
			out.Matched++
		}
		if it.OK {
			out.Done++
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

var bulkActions = []string{"enable", "disable", "trigger", "delete"}

// errNoSuchJob is a job a bulk action names by id that does not exist, is
// not of the request's kind (a workflow for jobs), is outside req's group or is in a group the
// caller may not read: all alike, so that ids probe nothing.
var errNoSuchJob = errors.New("no such job")

// bulkPick reads the job id names for a bulk action.
func (s *Server) bulkPick(r *http.Request, req apiv1.BulkRequest, id int64) (store.Job, error) {
	if id <= 0 {
		return store.Job{}, errNoSuchJob
	}
	j, err := s.store.GetJob(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return j, errNoSuchJob
	case err != nil:
		return j, err
	case cmp.Or(j.Kind, store.KindJob) != cmp.Or(req.Kind, store.KindJob), req.Group != "" && j.Group != req.Group,
		!auth.FromContext(r.Context()).Can(j.Group, auth.Viewer):
		return j, errNoSuchJob
	}
	return j, nil
}

// bulkItem applies req's action to j and says how it went.
func (s *Server) bulkItem(r *http.Request, req apiv1.BulkRequest, j store.Job) apiv1.BulkItem {
	item := apiv1.BulkItem{JobID: j.ID, Name: j.Name, Group: j.Group}
	if err := s.bulkOne(r, auth.FromContext(r.Context()), req, j, &item); err != nil {
		item.Error = strings.TrimPrefix(err.Error(), errInvalid.Error()+": ")
	} else {
		item.OK = true
	}
	return item
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
	case "delete":
		// As DELETE /jobs/{id} (pathJobWriteGroup): a job that runs
		// commands is deleted by those who may write one.
		n, err := s.commandNeed(ctx, j.Group, j.Handler)
		if err != nil {
			return err
		}
		if n.Scripts && !p.CanScripts(j.Group) {
			return fmt.Errorf("%s: deleting it needs scripts on group %s", n.Why, j.Group)
		}
		return s.store.DeleteJob(ctx, actor(r), j.ID)
	}
	pl, _, err := s.store.TriggerRun(ctx, actor(r), j.ID, store.Trigger{})
	if err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	s.cfg.Fire(pl)
	item.RunID = pl.RunID
	return nil
}
