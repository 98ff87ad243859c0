package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// importRuns writes finished runs of another scheduler (jetjob import
// xxl-job --history) as runs of their jobs, trigger type import. Admin
// only: these runs did not happen in jetjob, and an operator must not be
// able to write a group's history. Repeating a call adds nothing.
func (s *Server) importRuns(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.RunImport
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Runs) == 0 || len(req.Runs) > apiv1.MaxImportedRuns {
		return invalidf("runs: want 1 to %d, got %d", apiv1.MaxImportedRuns, len(req.Runs))
	}
	now := s.now()
	in := make([]store.ImportedRun, len(req.Runs))
	for i, x := range req.Runs {
		st := wire.Status(x.Status)
		bad := func(format string, args ...any) error {
			return invalidf("runs[%d] (job %d at %s): %s", i, x.JobID, x.ScheduledAt.Format(time.RFC3339), fmt.Sprintf(format, args...))
		}
		switch {
		case x.JobID <= 0:
			return bad("job_id must be positive")
		case x.ScheduledAt.IsZero() || x.ScheduledAt.After(now):
			return bad("scheduled_at must be a time in the past")
		case !st.Valid() || !st.Terminal():
			return bad("status %q: want a finished status (SUCCEEDED, FAILED, TIMED_OUT, ...)", x.Status)
		case x.StartedAt != nil && x.StartedAt.Before(x.ScheduledAt):
			return bad("started_at is before scheduled_at")
		case x.FinishedAt != nil && (x.FinishedAt.After(now) || x.FinishedAt.Before(x.ScheduledAt)):
			return bad("finished_at must lie between scheduled_at and now")
		case x.StartedAt != nil && x.FinishedAt != nil && x.FinishedAt.Before(*x.StartedAt):
			return bad("finished_at is before started_at")
		case x.ShardTotal < 0 || x.ShardIndex < 0 || (x.ShardTotal > 0 && x.ShardIndex >= x.ShardTotal) || (x.ShardTotal == 0 && x.ShardIndex != 0):
			return bad("shard %d/%d is out of range", x.ShardIndex, x.ShardTotal)
		case len(x.Params) > wire.MaxParamsBytes:
			return bad("params are %d bytes, more than %d", len(x.Params), wire.MaxParamsBytes)
		case len(x.WorkerID) > 255:
			return bad("worker_id is more than 255 bytes")
		}
		in[i] = store.ImportedRun{JobID: x.JobID, ScheduledAt: x.ScheduledAt.UTC(), Status: st, ShardIndex: x.ShardIndex,
			ShardTotal: x.ShardTotal, WorkerID: x.WorkerID, Params: x.Params, Message: x.Message}
		if x.StartedAt != nil {
			in[i].StartedAt = x.StartedAt.UTC()
		}
		if x.FinishedAt != nil {
			in[i].FinishedAt = x.FinishedAt.UTC()
		}
	}
	res, err := s.store.ImportRuns(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.RunImportResult{Imported: res.Imported, Existing: res.Existing, TooOld: res.TooOld})
	return nil
}

// maxImportedDays bounds the days of one POST /api/v1/stats/import.
const maxImportedDays = 4000

// importStats writes another scheduler's daily run counts (xxl-job's
// xxl_job_log_report) into the daily statistics, on the days jetjob has
// nothing of its own. Admin only, as importRuns.
func (s *Server) importStats(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.StatsImport
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if len(req.Days) == 0 || len(req.Days) > maxImportedDays {
		return invalidf("days: want 1 to %d, got %d", maxImportedDays, len(req.Days))
	}
	today := store.DayStart(s.now())
	in := make([]store.DayTotal, len(req.Days))
	for i, d := range req.Days {
		day, err := time.Parse(time.DateOnly, d.Day)
		switch {
		case err != nil:
			return invalidf("days[%d]: day %q: want YYYY-MM-DD", i, d.Day)
		case !day.Before(today):
			return invalidf("days[%d]: day %s is not over yet", i, d.Day)
		case d.Succeeded < 0 || d.Failed < 0:
			return invalidf("days[%d]: negative counts", i)
		}
		in[i] = store.DayTotal{Day: day, Succeeded: d.Succeeded, Failed: d.Failed}
	}
	written, skipped, err := s.store.ImportDayTotals(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.StatsImportResult{Written: written, Skipped: skipped})
	return nil
}
