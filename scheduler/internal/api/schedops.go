package api

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
)

// Schedule operations of a job: its own misfire threshold and catch-up
// cap, jitter, start/end, pause and resume, and the next-fires preview.

const (
	maxMisfireThreshold = 7 * 24 * time.Hour
	maxCatchupLimit     = 10_000
	maxJitter           = 24 * time.Hour
	maxPauseNoteLen     = 1000
	// jitterGapFires is how many upcoming fires the jitter is checked
	// against: it must stay below the shortest gap between fires, so
	// that jittered fires keep their order and never collide.
	jitterGapFires = 64
)

// checkSchedOps validates the schedule operation fields of a spec.
func checkSchedOps(spec apiv1.JobSpec, tz string, extra []timing.Part, now time.Time, add func(string, ...any)) {
	if d := time.Duration(spec.MisfireThreshold); d < 0 || d > maxMisfireThreshold {
		add("misfire_threshold %s: want 0 (the scheduler's default) up to %s", d, maxMisfireThreshold)
	}
	if spec.MaxCatchup < 0 || spec.MaxCatchup > maxCatchupLimit {
		add("max_catchup %d: want 0 (the scheduler's default) up to %d", spec.MaxCatchup, maxCatchupLimit)
	}
	jitter := time.Duration(spec.Jitter)
	switch {
	case jitter < 0 || jitter > maxJitter:
		add("jitter %s: want 0 (none) up to %s", jitter, maxJitter)
	case jitter > 0:
		if sched, err := timing.Schedules(spec.ScheduleType, spec.ScheduleExpr, tz, extra); err == nil {
			if gap := timing.MinGap(sched, now, jitterGapFires); gap > 0 && jitter >= gap {
				add("jitter %s: must be shorter than %s interval between fires (%s)", jitter, schedulesOf(1+len(extra)), gap)
			}
		}
	}
	if spec.StartAt != nil && spec.EndAt != nil && !spec.StartAt.Before(*spec.EndAt) {
		add("start_at %s must be before end_at %s", spec.StartAt.Format(time.RFC3339), spec.EndAt.Format(time.RFC3339))
	}
}

// setSchedOps copies a validated spec's schedule operation fields.
func setSchedOps(j *store.Job, spec apiv1.JobSpec) {
	j.MisfireThreshold, j.MaxCatchup, j.Jitter = time.Duration(spec.MisfireThreshold), spec.MaxCatchup, time.Duration(spec.Jitter)
	j.StartAt, j.EndAt = utcPtr(spec.StartAt), utcPtr(spec.EndAt)
}

func schedOpsDoc(d *apiv1.Job, j store.Job) {
	d.MisfireThreshold, d.MaxCatchup, d.Jitter = apiv1.Duration(j.MisfireThreshold), j.MaxCatchup, apiv1.Duration(j.Jitter)
	d.StartAt, d.EndAt = utcPtr(j.StartAt), utcPtr(j.EndAt)
	d.PausedNote, d.PausedAt, d.PausedBy = j.PausedNote, utcPtr(j.PausedAt), j.PausedBy
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// enableJob enables a job; the optional body says whether the fires it
// missed while disabled are replayed by its misfire policy (catch_up
// policy, the default) or not at all (none).
func (s *Server) enableJob(w http.ResponseWriter, r *http.Request) error {
	return s.setEnabled(w, r, enableOptions, jobAnswer)
}

// disableJob disables a job, keeping the optional body's note.
func (s *Server) disableJob(w http.ResponseWriter, r *http.Request) error {
	return s.setEnabled(w, r, disableOptions, jobAnswer)
}

// enableOptions reads the optional body of an enable (a job's, a
// workflow's resume).
func enableOptions(w http.ResponseWriter, r *http.Request) (store.EnableOptions, error) {
	var req apiv1.EnableRequest
	if err := decodeOptional(w, r, &req); err != nil {
		return store.EnableOptions{}, err
	}
	catchUp, err := store.ParseCatchUp(req.CatchUp)
	if err != nil {
		return store.EnableOptions{}, invalidf("%v", err)
	}
	return store.EnableOptions{Enabled: true, CatchUp: catchUp}, nil
}

// disableOptions reads the optional body of a disable (a job's, a
// workflow's pause): its note.
func disableOptions(w http.ResponseWriter, r *http.Request) (store.EnableOptions, error) {
	var req apiv1.DisableRequest
	if err := decodeOptional(w, r, &req); err != nil {
		return store.EnableOptions{}, err
	}
	if n := utf8.RuneCountInString(req.Note); n > maxPauseNoteLen {
		return store.EnableOptions{}, invalidf("note is %d characters, more than %d", n, maxPauseNoteLen)
	}
	return store.EnableOptions{Note: req.Note}, nil
}

func jobAnswer(s *Server, w http.ResponseWriter, r *http.Request, j store.Job) error {
	writeJSON(w, http.StatusOK, s.firedJobDoc(r.Context(), j))
	return nil
}

// setEnabled enables or disables the path's jobs row (a job's or a
// workflow's: one implementation for both) as options reads from the
// request, and answers with answer's document of it.
func (s *Server) setEnabled(w http.ResponseWriter, r *http.Request,
	options func(http.ResponseWriter, *http.Request) (store.EnableOptions, error),
	answer func(*Server, http.ResponseWriter, *http.Request, store.Job) error) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	o, err := options(w, r)
	if err != nil {
		return err
	}
	j, err := s.store.SetEnabledWith(r.Context(), actor(r), id, o)
	if err != nil {
		return err
	}
	return answer(s, w, r, j)
}

// nextFires lists the scheduled_at of the job's next runs, computed the
// way the planner computes them (store.NextFires).
func (s *Server) nextFires(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "n"); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	n, err := queryInt(r, "n", 5, 1, 100)
	if err != nil {
		return err
	}
	j, err := s.store.GetJob(r.Context(), id)
	if err != nil {
		return err
	}
	times, excluded, err := s.store.UpcomingFires(r.Context(), j, s.now(), int(n))
	if err != nil {
		return err
	}
	out := apiv1.NextFires{Times: times}
	for _, e := range excluded {
		out.Excluded = append(out.Excluded, apiv1.ExcludedFire{At: e.At.UTC(), Calendar: e.Calendar})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
