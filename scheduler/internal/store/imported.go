package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// ImportedRun is one finished run of another scheduler, for ImportRuns.
type ImportedRun struct {
	JobID int64
	// ScheduledAt is when it was triggered there; StartedAt and
	// FinishedAt may be zero (unknown).
	ScheduledAt, StartedAt, FinishedAt time.Time
	Status                             wire.Status // terminal
	ShardIndex, ShardTotal             int
	WorkerID, Params, Message          string
}

// ImportResult counts what ImportRuns did.
type ImportResult struct {
	// Imported runs were written; Existing were there already (the same
	// job, time and shard part: an import repeated).
	Imported, Existing int
	// TooOld are runs of days whose runs jetjob already rolled up into
	// the daily statistics and dropped (older than its run retention):
	// writing them would replace that day's statistics by theirs alone.
	TooOld int
}

// ImportRuns writes finished runs of another scheduler as runs of their
// jobs (trigger type wire.TriggerImport), idempotently: a run of the same job, time and
// shard part is left as it is, so importing the same history twice adds
// nothing. Days already rolled up into the daily statistics are rolled up
// again in the same transaction, so the dashboard counts the imported runs
// at once; the days not rolled up yet are the maintenance loop's, as any
// other. A job that does not exist fails the whole call (ErrNotFound).
func (s *Store) ImportRuns(ctx context.Context, a Actor, batch []ImportedRun) (ImportResult, error) {
	var res ImportResult
	if len(batch) == 0 {
		return res, nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = ImportResult{}
		type jobRow struct {
			group string
			shard int
		}
		jobs := map[int64]jobRow{}
		var ids []int64
		for _, r := range batch {
			if _, seen := jobs[r.JobID]; !seen {
				jobs[r.JobID] = jobRow{}
				ids = append(ids, r.JobID)
			}
		}
		rows, _ := tx.Query(ctx, `SELECT id, group_name, shard FROM jobs WHERE id = ANY($1)`, ids)
		found := 0
		var id int64
		var jr jobRow
		_, err := pgx.ForEachRow(rows, []any{&id, &jr.group, &jr.shard}, func() error {
			jobs[id] = jr
			found++
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the jobs: %w", err)
		}
		if found != len(ids) {
			for _, id := range ids {
				if jobs[id].group == "" {
					return fmt.Errorf("job %d: %w", id, ErrNotFound)
				}
			}
		}

		// The days the runs fall on: one already rolled up whose runs
		// are gone (its statistics count more runs than job_runs still
		// holds) takes no more; the others already rolled up are rolled
		// up again below.
		days := map[time.Time]bool{} // day → rolled up (and kept)
		closed := map[time.Time]bool{}
		for _, r := range batch {
			d := DayStart(r.ScheduledAt)
			if _, seen := days[d]; seen || closed[d] {
				continue
			}
			var statRuns, heldRuns int64
			err := tx.QueryRow(ctx, `SELECT coalesce((SELECT runs FROM run_stats_days WHERE day = $1), -1),
				(SELECT count(*) FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2)`, d, d.AddDate(0, 0, 1)).Scan(&statRuns, &heldRuns)
			if err != nil {
				return fmt.Errorf("read day %s: %w", d.Format(time.DateOnly), err)
			}
			switch {
			case statRuns > heldRuns:
				closed[d] = true
			default:
				days[d] = statRuns >= 0
			}
		}

		var in []runs.Imported
		for _, r := range batch {
			if closed[DayStart(r.ScheduledAt)] {
				res.TooOld++
				continue
			}
			j := jobs[r.JobID]
			in = append(in, runs.Imported{JobID: r.JobID, Group: j.group, Shard: j.shard, ScheduledAt: r.ScheduledAt,
				StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Status: r.Status, ShardIndex: r.ShardIndex,
				ShardTotal: r.ShardTotal, WorkerID: r.WorkerID, Params: r.Params, Message: r.Message})
		}
		if len(in) > 0 {
			written, err := runs.InsertImported(ctx, tx, in)
			if err != nil {
				return err
			}
			res.Imported = len(written)
			res.Existing = len(in) - res.Imported
			perJob := map[int64]int{}
			for _, id := range written {
				perJob[id]++
			}
			// One audit entry per job, in its group's audit.
			for _, id := range ids {
				if n := perJob[id]; n > 0 {
					if err := writeAudit(ctx, tx, a, "runs.import", JobTarget(id), jobs[id].group, nil, map[string]any{"imported": n}); err != nil {
						return err
					}
				}
			}
		}
		for d, rolled := range days {
			if !rolled || res.Imported == 0 {
				continue
			}
			if _, _, err := RollUpDay(ctx, tx, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return ImportResult{}, fmt.Errorf("import %d runs: %w", len(batch), err)
	}
	return res, nil
}

// DayTotal is another scheduler's count of the runs of one day, without
// jobs (xxl-job's xxl_job_log_report), for ImportDayTotals.
type DayTotal struct {
	Day               time.Time // its UTC day is taken
	Succeeded, Failed int64
}

// ImportDayTotals writes days of another scheduler's run counts into the
// daily statistics, where jetjob knows nothing of the day: a day that has
// runs in job_runs, or statistics already, is skipped (jetjob's own
// figures, or the imported runs, say more). A written day counts as rolled
// up, under job 0 and no group: the dashboard's totals include it, a
// group's or a job's view does not. It returns the days written and
// skipped.
func (s *Store) ImportDayTotals(ctx context.Context, a Actor, days []DayTotal) (written, skipped int, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		written, skipped = 0, 0
		for _, d := range days {
			day := DayStart(d.Day)
			var known bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM run_stats_days WHERE day = $1)
				OR EXISTS (SELECT 1 FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2)`, day, day.AddDate(0, 0, 1)).Scan(&known); err != nil {
				return fmt.Errorf("read day %s: %w", day.Format(time.DateOnly), err)
			}
			if known || d.Succeeded+d.Failed == 0 {
				skipped++
				continue
			}
			if _, err := tx.Exec(ctx, `INSERT INTO run_stats_daily (day, job_id, group_name, status, runs, timed_runs)
				SELECT $1, 0, '', st, n, 0 FROM (VALUES ($2::text, $3::bigint), ($4, $5)) AS v(st, n) WHERE n > 0`,
				day, string(wire.StatusSucceeded), d.Succeeded, string(wire.StatusFailed), d.Failed); err != nil {
				return fmt.Errorf("write day %s: %w", day.Format(time.DateOnly), err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO run_stats_days (day, runs, open_runs) VALUES ($1, $2, 0)`,
				day, d.Succeeded+d.Failed); err != nil {
				return fmt.Errorf("write day %s: %w", day.Format(time.DateOnly), err)
			}
			if err := writeAudit(ctx, tx, a, "stats.import", "day:"+day.Format(time.DateOnly), "", nil,
				map[string]any{"succeeded": d.Succeeded, "failed": d.Failed}); err != nil {
				return err
			}
			written++
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("import %d days of statistics: %w", len(days), err)
	}
	return written, skipped, nil
}
