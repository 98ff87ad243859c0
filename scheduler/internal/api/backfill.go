package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/backfill"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/schedule"
)

// maxBackfillRange bounds a backfill's range, whatever its fire count.
const maxBackfillRange = 10 * 366 * 24 * time.Hour

// createBackfill starts a backfill of the job's fires in [from, to)
// (package backfill). It answers 201 with the operation; follow it with
// GET /backfills/{id}.
func (s *Server) createBackfill(w http.ResponseWriter, r *http.Request) error {
	id, req, err := pathIDBody[apiv1.BackfillRequest](w, r)
	if err != nil {
		return err
	}
	now := s.now()
	switch {
	case req.From.IsZero():
		return invalidf("from is required (RFC 3339 time)")
	case req.To.IsZero():
		return invalidf("to is required (RFC 3339 time)")
	case !req.From.Before(req.To):
		return invalidf("from %s must be before to %s", req.From.Format(time.RFC3339), req.To.Format(time.RFC3339))
	case req.To.Sub(req.From) > maxBackfillRange:
		return invalidf("from..to spans %s, more than the limit of %s", req.To.Sub(req.From), maxBackfillRange)
	case req.To.After(now):
		return invalidf("to %s is in the future: a backfill runs past fires (the schedule runs the coming ones)", req.To.Format(time.RFC3339))
	case req.Max < 0 || req.Max > backfill.DefaultMax:
		return invalidf("max %d: want 1 to %d (0: %d)", req.Max, backfill.DefaultMax, backfill.DefaultMax)
	}
	limit := req.Max
	if limit == 0 {
		limit = backfill.DefaultMax
	}
	j, err := s.store.GetJob(r.Context(), id)
	if err != nil {
		return err
	}
	tp, err := j.Timing()
	if err != nil {
		return err
	}
	if !tp.Sched.Periodic() {
		return invalidf("job %d: schedule_type %s has no fire times to backfill (want cron or fix_rate)", id, j.ScheduleType)
	}
	if _, err := schedule.Parse(j.ScheduleType, j.ScheduleExpr, j.Timezone); err != nil {
		return err
	}
	n, more := backfill.Count(tp, req.From.UTC(), req.To.UTC(), limit)
	switch {
	case more:
		return invalidf("from..to holds more than max=%d fires of the job's schedule: narrow the range or raise max (up to %d)", limit, backfill.DefaultMax)
	case n == 0:
		return invalidf("from..to holds no fire of the job's schedule (within its start_at/end_at)")
	}
	b, err := s.store.CreateBackfill(r.Context(), actor(r), j, req.From.UTC(), req.To.UTC(), n)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, backfillDoc(b))
	return nil
}

func (s *Server) listBackfills(w http.ResponseWriter, r *http.Request) error {
	id, limit, err := jobPage(r)
	if err != nil {
		return err
	}
	bs, err := s.store.ListBackfills(r.Context(), id, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.BackfillList{Backfills: docs(bs, backfillDoc)})
	return nil
}

// searchBackfills lists the operations of the caller's groups (or of
// ?group=), newest first, optionally in one ?state=: the console's
// backfills page, where an operator follows every range being re-run.
func (s *Server) searchBackfills(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "group", "state", "limit"); err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := store.BackfillFilter{Group: q.Get("group"), Groups: readable(r), State: q.Get("state"), Limit: int(limit)}
	switch f.State {
	case "", apiv1.BackfillRunning, apiv1.BackfillCompleted, apiv1.BackfillCancelled:
	default:
		return invalidf("state %q: want %s, %s or %s", f.State, apiv1.BackfillRunning, apiv1.BackfillCompleted, apiv1.BackfillCancelled)
	}
	bs, err := s.store.SearchBackfills(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.BackfillList{Backfills: docs(bs, backfillDoc)})
	return nil
}

// cancelBackfill stops an operation: fires not yet written are never
// run, runs written but not published end CANCELLED (a kill request makes
// sure no worker starts one already handed to the wheel), published runs
// finish (kill them one by one if need be).
func (s *Server) cancelBackfill(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	b, cancelled, err := s.store.CancelBackfill(r.Context(), actor(r), id)
	if err != nil {
		return err
	}
	for _, run := range cancelled {
		if err := s.cfg.Kill(r.Context(), run, fmt.Sprintf("backfill %d cancelled", id)); err != nil {
			return fmt.Errorf("send kill request for run %d of backfill %d: %w", run, id, err)
		}
	}
	writeJSON(w, http.StatusOK, backfillDoc(b))
	return nil
}

func (s *Server) pathBackfillGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	return pathGroup(r, "backfill", s.store.BackfillGroup)
}

func backfillDoc(b store.Backfill) apiv1.Backfill {
	return apiv1.Backfill{ID: b.ID, JobID: b.JobID, Group: b.Group, From: b.From.UTC(), To: b.To.UTC(),
		Planned: b.Planned, Triggered: b.Triggered, Existing: b.Existing, Done: b.Done, State: b.State,
		CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt, FinishedAt: utcPtr(b.FinishedAt)}
}
