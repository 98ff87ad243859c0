package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The daily report: runs per UTC day (of scheduled_at), job and status, with
// duration percentiles. Finished days are rolled up into run_stats_daily by
// the maintenance loop (package retention), which outlives the partitions
// of job_runs it was computed from; days not rolled up (today, or a day the
// loop has not reached yet) are computed live from job_runs with the same
// aggregation, so both sources always agree on what a figure means.

// dayStatsSelect aggregates the runs scheduled in [$1, $2) per day, job,
// group and status. Durations are started_at → finished_at in milliseconds,
// over the runs that have both (percentile_cont skips NULLs).
const dayStatsSelect = `SELECT (scheduled_at AT TIME ZONE 'UTC')::date AS day, job_id, group_name, status,
		count(*) AS runs, count(ms) AS timed_runs,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50_ms,
		percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) AS p95_ms,
		percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99_ms,
		max(ms) AS max_ms
	FROM (SELECT scheduled_at, job_id, group_name, status,
			extract(epoch FROM finished_at - started_at)::float8 * 1000 AS ms
		FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2) r
	GROUP BY 1, 2, 3, 4`

// RollUpDay (re)computes one UTC day's rows of run_stats_daily from
// job_runs and records the day as covered in run_stats_days, replacing
// what an earlier rollup of the day wrote: rolling a day up twice is
// harmless. Call it in a transaction (the maintenance loop's). It returns
// the day's runs and how many of them were not yet terminal.
func RollUpDay(ctx context.Context, tx pgx.Tx, day time.Time) (runs, open int64, err error) {
	lo := DayStart(day)
	hi := lo.AddDate(0, 0, 1)
	if _, err := tx.Exec(ctx, `DELETE FROM run_stats_daily WHERE day = $1`, lo); err != nil {
		return 0, 0, fmt.Errorf("roll up %s: clear: %w", lo.Format(time.DateOnly), err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO run_stats_daily (day, job_id, group_name, status, runs, timed_runs,
			p50_ms, p95_ms, p99_ms, max_ms) `+dayStatsSelect, lo, hi); err != nil {
		return 0, 0, fmt.Errorf("roll up %s: %w", lo.Format(time.DateOnly), err)
	}
	err = tx.QueryRow(ctx, `INSERT INTO run_stats_days (day, runs, open_runs, rolled_up_at)
		SELECT $1, coalesce(sum(runs), 0), coalesce(sum(runs) FILTER (WHERE jetjob_status_rank(status) < 3), 0), now()
		FROM run_stats_daily WHERE day = $1
		ON CONFLICT (day) DO UPDATE SET runs = excluded.runs, open_runs = excluded.open_runs, rolled_up_at = now()
		RETURNING runs, open_runs`, lo).Scan(&runs, &open)
	if err != nil {
		return 0, 0, fmt.Errorf("roll up %s: record the day: %w", lo.Format(time.DateOnly), err)
	}
	return runs, open, nil
}

// DayStart is the start (00:00 UTC) of t's UTC day.
func DayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// StatsFilter selects report rows: days From to To (UTC, inclusive), and
// optionally one job or group.
type StatsFilter struct {
	From, To time.Time
	JobID    int64
	Group    string
	// Groups, when not nil, keeps only these groups (a caller's readable
	// groups).
	Groups []string
}

// DayStat is one report row: a day, job and status.
type DayStat struct {
	Day       time.Time
	JobID     int64
	Group     string
	Status    string
	Runs      int64
	TimedRuns int64
	P50MS     *float64
	P95MS     *float64
	P99MS     *float64
	MaxMS     *float64
	// Live is true when the row was computed from job_runs now (the day is
	// not rolled up yet: today, typically) rather than read from the rollup.
	Live bool
}

// statsFilter is the report's filter on job, group and the caller's
// groups: $3 job id (0: any), $4 group ("": any), $5 groups (NULL: all).
const statsFilter = ` WHERE ($3 = 0 OR job_id = $3) AND ($4 = '' OR group_name = $4) AND ($5::text[] IS NULL OR group_name = ANY($5))`

// Stats returns the report rows of the filter's days, ordered by day, job
// and status: rolled-up days from run_stats_daily, the others computed live
// from job_runs.
func (s *Store) Stats(ctx context.Context, f StatsFilter) ([]DayStat, error) {
	from, to := DayStart(f.From), DayStart(f.To)
	liveRanges, err := s.liveRanges(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	scan := func(live bool) func(pgx.CollectableRow) (DayStat, error) {
		return func(r pgx.CollectableRow) (DayStat, error) {
			ds := DayStat{Live: live}
			err := r.Scan(&ds.Day, &ds.JobID, &ds.Group, &ds.Status, &ds.Runs, &ds.TimedRuns,
				&ds.P50MS, &ds.P95MS, &ds.P99MS, &ds.MaxMS)
			ds.Day = DayStart(ds.Day)
			return ds, err
		}
	}
	rows, _ := s.pool.Query(ctx, `SELECT day, job_id, group_name, status, runs, timed_runs, p50_ms, p95_ms, p99_ms, max_ms
		FROM run_stats_daily`+statsFilter+` AND day BETWEEN $1 AND $2`, from, to, f.JobID, f.Group, f.Groups)
	out, err := pgx.CollectRows(rows, scan(false))
	if err != nil {
		return nil, fmt.Errorf("stats: rollup: %w", err)
	}
	for _, lr := range liveRanges {
		rows, _ := s.pool.Query(ctx, `SELECT * FROM (`+dayStatsSelect+`) s`+statsFilter, lr[0], lr[1], f.JobID, f.Group, f.Groups)
		live, err := pgx.CollectRows(rows, scan(true))
		if err != nil {
			return nil, fmt.Errorf("stats: live %s to %s: %w", lr[0].Format(time.DateOnly), lr[1].Format(time.DateOnly), err)
		}
		out = append(out, live...)
	}
	sortStats(out)
	return out, nil
}

// liveRanges are the spans [from, to) of the days from..to (inclusive)
// that the rollup does not cover, to be computed from job_runs: after the
// first maintenance round, today and perhaps yesterday.
func (s *Store) liveRanges(ctx context.Context, from, to time.Time) ([][2]time.Time, error) {
	rows, _ := s.pool.Query(ctx, `SELECT day FROM run_stats_days WHERE day BETWEEN $1 AND $2`, from, to)
	covered, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, fmt.Errorf("covered days: %w", err)
	}
	var liveRanges [][2]time.Time
	isCovered := make(map[time.Time]bool, len(covered))
	for _, d := range covered {
		isCovered[DayStart(d)] = true
	}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		if isCovered[d] {
			continue
		}
		if n := len(liveRanges); n > 0 && liveRanges[n-1][1].Equal(d) {
			liveRanges[n-1][1] = d.AddDate(0, 0, 1)
		} else {
			liveRanges = append(liveRanges, [2]time.Time{d, d.AddDate(0, 0, 1)})
		}
	}
	return liveRanges, nil
}

func sortStats(out []DayStat) {
	slices.SortFunc(out, func(a, b DayStat) int {
		if c := a.Day.Compare(b.Day); c != 0 {
			return c
		}
		if c := cmp.Compare(a.JobID, b.JobID); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.Status, b.Status)
	})
}
