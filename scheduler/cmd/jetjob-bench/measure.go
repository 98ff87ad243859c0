package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/policy"
)

// windowSQL measures the runs scheduled in [$1, $2) of jobs $3..$4 (with
// $5, only those that started: the runs that did run). A timestamp still
// missing counts as statement_timestamp(): the percentile is then a lower
// bound, and `missing` says how many.
const windowSQL = `SELECT count(*),
	count(*) FILTER (WHERE triggered_at IS NULL), count(*) FILTER (WHERE started_at IS NULL),
	count(*) FILTER (WHERE recorded_at IS NULL),
	coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY f), 0), coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY f), 0), coalesce(max(f), 0),
	coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY s), 0), coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY s), 0), coalesce(max(s), 0),
	coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY e), 0), coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY e), 0), coalesce(max(e), 0)
FROM (SELECT
		1000 * extract(epoch FROM coalesce(triggered_at, statement_timestamp()) - scheduled_at)::float8 AS f,
		1000 * extract(epoch FROM coalesce(started_at, statement_timestamp()) - scheduled_at)::float8 AS s,
		1000 * extract(epoch FROM coalesce(recorded_at, statement_timestamp()) - scheduled_at)::float8 AS e,
		triggered_at, started_at, recorded_at
	FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2 AND job_id BETWEEN $3 AND $4
		AND (NOT $5::bool OR started_at IS NOT NULL)) r`

// windowStats is the latency and status picture of a window's runs.
// runs and the SKIPPED status count fires, not rows: a SKIPPED run may
// stand for a range of a job's missed fires (policy.ParseSkipped), and
// counts for those of them in the window (ranged says how many more than
// the rows).
type windowStats struct {
	runs                 int64
	fire, start, e2e     Latency
	statuses             map[string]int64
	terminal, unfinished int64
	ranged               int64
}

func measureWindow(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, idFrom, idTo int64) (windowStats, error) {
	return measureRuns(ctx, pool, from, to, idFrom, idTo, false)
}

// measureRan is measureWindow over the runs that started (overload: the
// lags of the runs that did run, the shed ones left out).
func measureRan(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, idFrom, idTo int64) (windowStats, error) {
	return measureRuns(ctx, pool, from, to, idFrom, idTo, true)
}

func measureRuns(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, idFrom, idTo int64, ranOnly bool) (windowStats, error) {
	var w windowStats
	var nt, ns, ne int64
	err := pool.QueryRow(ctx, windowSQL, from, to, idFrom, idTo, ranOnly).Scan(&w.runs, &nt, &ns, &ne,
		&w.fire.P50, &w.fire.P99, &w.fire.Max, &w.start.P50, &w.start.P99, &w.start.Max,
		&w.e2e.P50, &w.e2e.P99, &w.e2e.Max)
	if err != nil {
		return w, fmt.Errorf("window stats: %w", err)
	}
	w.fire.N, w.start.N, w.e2e.N = w.runs, w.runs, w.runs
	w.fire.Missing, w.start.Missing, w.e2e.Missing = nt, ns, ne
	for _, l := range []*Latency{&w.fire, &w.start, &w.e2e} {
		l.P50, l.P99, l.Max = round3(l.P50), round3(l.P99), round3(l.Max)
	}
	rows, _ := pool.Query(ctx, `SELECT status, count(*), bool_or(jetjob_status_rank(status) = 3) FROM job_runs
		WHERE scheduled_at >= $1 AND scheduled_at < $2 AND job_id BETWEEN $3 AND $4
			AND (NOT $5::bool OR started_at IS NOT NULL) GROUP BY status`, from, to, idFrom, idTo, ranOnly)
	w.statuses = map[string]int64{}
	var status string
	var n int64
	var term bool
	_, err = pgx.ForEachRow(rows, []any{&status, &n, &term}, func() error {
		w.statuses[status] = n
		if term {
			w.terminal += n
		} else {
			w.unfinished += n
		}
		return nil
	})
	if err != nil {
		return w, fmt.Errorf("window statuses: %w", err)
	}
	if ranOnly {
		return w, nil
	}
	if w.ranged, err = rangedFires(ctx, pool, from, to, idFrom, idTo); err != nil {
		return w, err
	}
	w.runs += w.ranged
	w.terminal += w.ranged
	if w.ranged > 0 {
		w.statuses["SKIPPED"] += w.ranged
	}
	return w, nil
}

// rangedFires counts the fires in [from, to) of the jobs that SKIPPED runs
// standing for a range of missed fires (policy.ParseSkipped) stand for,
// beyond those runs themselves (a run whose own time is in the window is
// counted as a row already). The fires of a range are evenly spaced from
// its first to its last, as the benchmark's jobs' are. A range starts at
// most a day before the window.
func rangedFires(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, idFrom, idTo int64) (int64, error) {
	rows, _ := pool.Query(ctx, `SELECT scheduled_at, message FROM job_runs
		WHERE scheduled_at >= $1::timestamptz - interval '1 day' AND scheduled_at < $2 AND job_id BETWEEN $3 AND $4
			AND status = 'SKIPPED' AND message LIKE 'misfire: % missed fires from %'`, from, to, idFrom, idTo)
	var at time.Time
	var msg string
	var extra int64
	_, err := pgx.ForEachRow(rows, []any{&at, &msg}, func() error {
		n, _, first, last, ok := policy.ParseSkipped(msg)
		if !ok || n < 2 {
			return nil
		}
		extra += firesIn(n, first, last, from, to)
		if !at.Before(from) && at.Before(to) {
			extra--
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("skipped ranges: %w", err)
	}
	return extra, nil
}

// firesIn counts, of n fires evenly spaced from first to last, those in
// [from, to).
func firesIn(n int, first, last, from, to time.Time) int64 {
	if n < 2 {
		if n == 1 && !first.Before(from) && first.Before(to) {
			return 1
		}
		return 0
	}
	step := last.Sub(first) / time.Duration(n-1)
	var in int64
	for k := range n {
		if t := first.Add(time.Duration(k) * step); !t.Before(from) && t.Before(to) {
			in++
		}
	}
	return in
}

// measureSpread is, per fire time in [from, to), the lag of the first and
// the last trigger published.
func measureSpread(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, idFrom, idTo int64) (*Spread, error) {
	var s Spread
	err := pool.QueryRow(ctx, `SELECT count(*),
			coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY lo), 0), coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY lo), 0),
			coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY hi), 0), coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY hi), 0)
		FROM (SELECT 1000 * extract(epoch FROM min(triggered_at) - scheduled_at)::float8 AS lo,
				1000 * extract(epoch FROM max(triggered_at) - scheduled_at)::float8 AS hi
			FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2 AND job_id BETWEEN $3 AND $4
				AND triggered_at IS NOT NULL
			GROUP BY scheduled_at) s`, from, to, idFrom, idTo).Scan(&s.FireTimes, &s.FirstP50, &s.FirstP99, &s.LastP50, &s.LastP99)
	s.FirstP50, s.FirstP99, s.LastP50, s.LastP99 = round3(s.FirstP50), round3(s.FirstP99), round3(s.LastP50), round3(s.LastP99)
	return &s, err
}

// rates counts, over [from, to), the runs due, published and finished.
func measureRates(ctx context.Context, pool *pgxpool.Pool, from, to time.Time) (Rates, error) {
	var due, pub, fin, ok int64
	err := pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE scheduled_at >= $1 AND scheduled_at < $2),
			count(*) FILTER (WHERE triggered_at >= $1 AND triggered_at < $2),
			count(*) FILTER (WHERE recorded_at >= $1 AND recorded_at < $2 AND jetjob_status_rank(status) = 3),
			count(*) FILTER (WHERE recorded_at >= $1 AND recorded_at < $2 AND status = 'SUCCEEDED')
		FROM job_runs`, from, to).Scan(&due, &pub, &fin, &ok)
	if err != nil {
		return Rates{}, fmt.Errorf("rates: %w", err)
	}
	secs := to.Sub(from).Seconds()
	return Rates{FiresDue: round1(float64(due) / secs), TriggersPublished: round1(float64(pub) / secs),
		RunsFinished: round1(float64(fin) / secs), RunsSucceeded: round1(float64(ok) / secs), succeeded: ok}, nil
}

// waitFinished waits until every fire in [from, to) of the jobs has its
// run and every such run a final status, up to timeout; it returns how
// many runs still have none, plus the jobs whose fires of the window are
// not all planned yet (under backpressure the planner may be seconds
// behind when the window closes; it plans or sheds them after).
func waitFinished(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, idFrom, idTo int64, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		var open int64
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2
			AND job_id BETWEEN $3 AND $4 AND recorded_at IS NULL)
			+ (SELECT count(*) FROM jobs WHERE id BETWEEN $3 AND $4 AND enabled AND next_fire_at < $2)`, from, to, idFrom, idTo).Scan(&open)
		if err != nil {
			return 0, err
		}
		if open == 0 || time.Now().After(deadline) {
			return open, nil
		}
		if err := backoff.Sleep(ctx, time.Second); err != nil {
			return open, err
		}
	}
}

// audit compares the fires expected in [from, to) with what the workers'
// handlers ran.
func audit(sets []*jobSet, from, to time.Time, u *union) (expected, invoked int64, lostExamples []string) {
	for _, s := range sets {
		s.fires(from, to, func(job int64, at time.Time) {
			expected++
			if u.invoked(job, at) {
				invoked++
			} else if len(lostExamples) < 10 {
				lostExamples = append(lostExamples, FireKey{job, at.UnixMicro()}.String())
			}
		})
	}
	return expected, invoked, lostExamples
}

// topSQL reads the statements that took the most time since the last
// reset.
func topSQL(ctx context.Context, pool *pgxpool.Pool, n int) ([]SQLStat, error) {
	rows, _ := pool.Query(ctx, `SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 300), calls, total_exec_time,
			mean_exec_time, total_plan_time, rows, coalesce(wal_bytes, 0)::bigint, shared_blks_dirtied,
			100 * (total_exec_time + total_plan_time) / nullif(sum(total_exec_time + total_plan_time) OVER (), 0)
		FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT $1`, n)
	var out []SQLStat
	var s SQLStat
	var share *float64
	_, err := pgx.ForEachRow(rows, []any{&s.Query, &s.Calls, &s.TotalMs, &s.MeanMs, &s.PlanMs, &s.Rows, &s.WALBytes, &s.BlksDirtied, &share}, func() error {
		s.TotalMs, s.MeanMs, s.PlanMs = round3(s.TotalMs), round3(s.MeanMs), round3(s.PlanMs)
		if share != nil {
			s.SharePct = round1(*share)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

func resetSQLStats(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	return err
}

// percentiles of a sample, in place.
func percentiles(xs []float64) (p50, p99, maxv float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(xs)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(xs)))) - 1
		return xs[max(0, min(i, len(xs)-1))]
	}
	return at(0.5), at(0.99), xs[len(xs)-1]
}

// cpuPerRun divides the processes' CPU over a window by the runs that
// succeeded in it (recorded_at in the window), in all and by kind of
// process: every benchmark process counts, the orchestrator too.
func cpuPerRun(ps []ProcStat, runs int64) *CPUPerRun {
	if runs <= 0 || len(ps) == 0 {
		return nil
	}
	c := &CPUPerRun{Runs: runs}
	at := map[string]int{}
	for _, k := range []string{"postgres", "nats", "schedulers", "workers", "orchestrator"} {
		at[k] = len(c.ByKind)
		c.ByKind = append(c.ByKind, KindCPU{Kind: k})
	}
	for _, p := range ps {
		kind, _, numbered := strings.Cut(p.Role, "-") // scheduler-0 → schedulers; nats-0 → nats
		if numbered && kind != "nats" {
			kind += "s"
		}
		i, ok := at[kind]
		if !ok {
			i = len(c.ByKind)
			at[kind] = i
			c.ByKind = append(c.ByKind, KindCPU{Kind: kind})
		}
		c.ByKind[i].Processes++
		c.ByKind[i].CPUSeconds += p.CPUWindow
		c.CPUSeconds += p.CPUWindow
	}
	var out []KindCPU
	for _, k := range c.ByKind {
		if k.Processes > 0 {
			k.CPUSeconds = round3(k.CPUSeconds)
			k.Ms = round3(1000 * k.CPUSeconds / float64(runs))
			out = append(out, k)
		}
	}
	c.ByKind = out
	c.CPUSeconds = round3(c.CPUSeconds)
	c.Ms = round3(1000 * c.CPUSeconds / float64(runs))
	return c
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
