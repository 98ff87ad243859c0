package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// The console's dashboard (GET /dashboard). Every query is bounded by
// scheduled_at, so that PostgreSQL prunes job_runs to the partitions of
// the window, and reads an index that starts with its most selective
// column (migration 0004): the cost follows the window's runs, not the
// table's.

// DayStatusCount is a UTC day's number of runs of one status.
type DayStatusCount struct {
	Day    time.Time
	Status string
	Runs   int64
}

// StatusCounts returns the runs per day and status of the filter's days
// (f.JobID, f.Group and f.Groups filter as for Stats), from the same
// sources as Stats: the rollup's run counts for rolled-up days, job_runs
// for the others. It counts without Stats' duration percentiles, which
// cost a sort of every run of the live days (today: measured 2.1 s for
// 600 k runs, against 0.5-1.2 s for the counts alone).
func (s *Store) StatusCounts(ctx context.Context, f StatsFilter) ([]DayStatusCount, error) {
	from, to := DayStart(f.From), DayStart(f.To)
	live, err := s.liveRanges(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("status counts: %w", err)
	}
	scan := func(r pgx.CollectableRow) (DayStatusCount, error) {
		var c DayStatusCount
		err := r.Scan(&c.Day, &c.Status, &c.Runs)
		c.Day = DayStart(c.Day)
		return c, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT day, status, sum(runs)::bigint FROM run_stats_daily`+statsFilter+
		` AND day BETWEEN $1 AND $2 GROUP BY 1, 2`, from, to, f.JobID, f.Group, f.Groups)
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("status counts: rollup: %w", err)
	}
	for _, lr := range live {
		// Planned with its values (an unnamed statement): the unused
		// filters fold away and the group index stays usable.
		rows, _ := s.pool.Query(ctx, `SELECT (scheduled_at AT TIME ZONE 'UTC')::date, status, count(*) FROM job_runs`+statsFilter+
			` AND scheduled_at >= $1 AND scheduled_at < $2 GROUP BY 1, 2`,
			pgx.QueryExecModeExec, lr[0], lr[1], f.JobID, f.Group, f.Groups)
		cs, err := pgx.CollectRows(rows, scan)
		if err != nil {
			return nil, fmt.Errorf("status counts: live %s to %s: %w", lr[0].Format(time.DateOnly), lr[1].Format(time.DateOnly), err)
		}
		out = append(out, cs...)
	}
	return out, nil
}

// Lags are the fire and start lags of the runs scheduled in a window, in
// milliseconds: triggered_at − scheduled_at and started_at − scheduled_at,
// over the runs that have the figure (percentile_cont skips NULLs).
type Lags struct {
	FireRuns, StartRuns int64
	FireP50, FireP99    *float64
	StartP50, StartP99  *float64
}

// RunLags computes the lags of the runs scheduled in [from, to) of the
// filter's groups ($4, $5 as statsFilter; the job is not filtered).
func (s *Store) RunLags(ctx context.Context, from, to time.Time, group string, groups []string) (Lags, error) {
	var l Lags
	err := s.pool.QueryRow(ctx, `SELECT count(fl), percentile_cont(0.5) WITHIN GROUP (ORDER BY fl),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY fl),
			count(sl), percentile_cont(0.5) WITHIN GROUP (ORDER BY sl), percentile_cont(0.99) WITHIN GROUP (ORDER BY sl)
		FROM (SELECT extract(epoch FROM triggered_at - scheduled_at)::float8 * 1000 AS fl,
				extract(epoch FROM started_at - scheduled_at)::float8 * 1000 AS sl
			FROM job_runs`+statsFilter+` AND scheduled_at >= $1 AND scheduled_at < $2`+unfiltered(group, groups)+`) r`,
		pgx.QueryExecModeExec, from, to, 0, group, groups).
		Scan(&l.FireRuns, &l.FireP50, &l.FireP99, &l.StartRuns, &l.StartP50, &l.StartP99)
	if err != nil {
		return l, fmt.Errorf("run lags: %w", err)
	}
	return l, nil
}

// unfiltered states job_runs_time's predicate when no group filter
// applies, so that a time range without other filters can read that
// index (see unfilteredMarker).
func unfiltered(group string, groups []string) string {
	if group == "" && groups == nil {
		return " AND " + unfilteredMarker
	}
	return ""
}

// CountRuns counts the runs of the filter's groups in one status scheduled
// in [from, to): read off job_runs_status (partial since migration 0009:
// a status other than SCHEDULED and SUCCEEDED, such as RUNNING).
func (s *Store) CountRuns(ctx context.Context, status wire.Status, from, to time.Time, group string, groups []string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs`+statsFilter+
		` AND status = $6 AND scheduled_at >= $1 AND scheduled_at < $2`,
		pgx.QueryExecModeExec, from, to, 0, group, groups, string(status)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count %s runs: %w", status, err)
	}
	return n, nil
}

// failedStatuses are wire.FailedStatuses as the query's text array (they
// are the ones results.applyEventsSQL retries and alarms on).
var failedStatuses = func() []string {
	out := make([]string, len(wire.FailedStatuses))
	for i, s := range wire.FailedStatuses {
		out[i] = string(s)
	}
	return out
}()

// Failures summarises the failed runs of a window.
type Failures struct {
	Lost int64
	// AlarmFailures counts the alert deliveries (package alerts) of the
	// window that failed for good: notices, a job's alarm fields' among
	// them, that nobody received.
	AlarmFailures int64
	// Jobs are the jobs with the most failed runs, worst first.
	Jobs []FailingJob
}

// FailingJob is a job with failed runs in the window.
type FailingJob struct {
	JobID int64
	// Name is "" for a job deleted since.
	Name          string
	Group         string
	Failed, Total int64
	// LastRun is the newest failed run (by scheduled time); LastAt when it
	// ended (its scheduled time if it has no end).
	LastRun     int64
	LastAt      time.Time
	LastMessage string
}

// RunFailures reads the failed runs (FAILED, TIMED_OUT, LOST) scheduled in
// [from, to) of the filter's groups, and the top jobs among them: up to
// top, by failed runs, then job id.
func (s *Store) RunFailures(ctx context.Context, from, to time.Time, group string, groups []string, top int) (Failures, error) {
	var out Failures
	// failed reads job_runs_status, one range per status.
	const failed = `SELECT id, job_id, group_name, status, scheduled_at, finished_at, message
		FROM job_runs` + statsFilter + ` AND status = ANY($6) AND scheduled_at >= $1 AND scheduled_at < $2`
	args := []any{pgx.QueryExecModeExec, from, to, 0, group, groups, failedStatuses}
	err := s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'LOST') FROM (`+failed+`) f`, args...).Scan(&out.Lost)
	if err != nil {
		return out, fmt.Errorf("failed runs: %w", err)
	}
	// A delivery's group is its notice's (the job's), as $4, $5 of
	// statsFilter.
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM alert_deliveries d
		WHERE d.state = 'failed' AND d.created_at >= $1 AND d.created_at < $2
		  AND ($3 = '' OR d.notice->>'group' = $3) AND ($4::text[] IS NULL OR d.notice->>'group' = ANY($4))`,
		from, to, group, groups).Scan(&out.AlarmFailures)
	if err != nil {
		return out, fmt.Errorf("undelivered alerts: %w", err)
	}
	// A job's total is read off the fire key (job_id, scheduled_at, …),
	// for the top jobs only.
	rows, _ := s.pool.Query(ctx, `WITH f AS MATERIALIZED (`+failed+`),
		top AS (SELECT job_id, count(*) AS failed FROM f GROUP BY job_id ORDER BY failed DESC, job_id LIMIT $7)
		SELECT t.job_id, coalesce(j.name, ''), last.group_name, t.failed,
			(SELECT count(*) FROM job_runs r`+statsFilter+` AND r.job_id = t.job_id
				AND r.scheduled_at >= $1 AND r.scheduled_at < $2),
			last.id, coalesce(last.finished_at, last.scheduled_at), last.message
		FROM top t
		CROSS JOIN LATERAL (SELECT * FROM f WHERE f.job_id = t.job_id ORDER BY scheduled_at DESC, id DESC LIMIT 1) last
		LEFT JOIN jobs j ON j.id = t.job_id
		ORDER BY t.failed DESC, t.job_id`, append(args, top)...)
	out.Jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (FailingJob, error) {
		var fj FailingJob
		err := r.Scan(&fj.JobID, &fj.Name, &fj.Group, &fj.Failed, &fj.Total, &fj.LastRun, &fj.LastAt, &fj.LastMessage)
		return fj, err
	})
	if err != nil {
		return out, fmt.Errorf("failing jobs: %w", err)
	}
	return out, nil
}
