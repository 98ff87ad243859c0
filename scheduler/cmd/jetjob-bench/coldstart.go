package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// restartGap is how long after window A the restart begins: the window's
// last fires have started by then, so that the restart does not land in
// window A's figures.
const restartGap = 2 * time.Second

// runColdStart is --scenario coldstart: steady "@every 1s" jobs on the
// fresh cluster and database the scenario's env creates (initdb'd for the
// run, migrated, the jobs inserted with COPY and nothing vacuumed or
// analysed: job_runs is empty and has never been analysed when the first
// fire is due; autovacuum stays on, as on a real new database, and what it
// did is reported). Window A is measured after --warmup; restartGap after
// it every process is stopped with SIGTERM and started again (restartAll:
// workers, schedulers, NATS, and PostgreSQL unless --restart-postgres=false;
// JetStream's store directory is kept), and window B is measured --recovery
// after everything is up again. Both windows get the steady figures; the
// run as a whole (first fire to the end of window B) gets the loss and
// duplicate audit; the restart gets its recovery time: from the first
// SIGTERM to the first fire time from which every fire time's start lag
// p99 stays within --recovery-lag.
func runColdStart(ctx context.Context, e *env, res *Result, set *jobSet) error {
	o := e.o
	e.cold = true
	sets := []*jobSet{set}
	if err := e.start(ctx, res, sets); err != nil {
		return err
	}
	cs := &ColdStart{}
	res.ColdStart = cs
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs`).Scan(&cs.JobRunsAtStart); err != nil {
		return fmt.Errorf("coldstart: count job_runs: %w", err)
	}
	if cs.JobRunsAtStart != 0 {
		return fmt.Errorf("coldstart: job_runs has %d rows before the first fire, want a fresh, empty table", cs.JobRunsAtStart)
	}
	t0, err := e.arm(ctx, 0, sets...)
	if err != nil {
		return err
	}
	if cs.TablesAtFirstFire, err = tableStats(ctx, e.pool); err != nil {
		return err
	}
	for _, t := range cs.TablesAtFirstFire {
		if t.Analyzed > 0 || t.Vacuumed > 0 {
			e.note("coldstart: %s was already analysed (%d) or vacuumed (%d) before the first fire", t.Table, t.Analyzed, t.Vacuumed)
		}
	}

	// Window A, on the fresh database.
	wA0 := t0.Add(o.warmup)
	wA1 := wA0.Add(o.duration)
	logf("phase A (fresh database): first fire %s, measuring %s..%s", t0.Format("15:04:05"),
		wA0.Format("15:04:05"), wA1.Format("15:04:05"))
	a, err := e.watch(ctx, res, wA0, wA1)
	if err != nil {
		return err
	}
	if cs.TablesAtWindowAEnd, err = tableStats(ctx, e.pool); err != nil {
		return err
	}

	// The restart, and window B after the recovery.
	if err := sleepUntil(ctx, wA1.Add(restartGap)); err != nil {
		return err
	}
	logf("restart: stopping every process (PostgreSQL too: %v)", o.restartPostgres)
	stopped, down, ready, err := e.restartAll(ctx, o.restartPostgres)
	if err != nil {
		return err
	}
	cs.Restart = Restart{StoppedAt: stopped.UTC(), DownAt: down.UTC(), ReadyAt: ready.UTC(),
		StopSeconds: round3(down.Sub(stopped).Seconds()), StartSeconds: round3(ready.Sub(down).Seconds()),
		PostgresRestarted: o.restartPostgres, RecoveryLagMs: float64(o.recoveryLag.Milliseconds())}
	wB0 := ready.Add(o.recovery).Truncate(time.Second).Add(time.Second)
	wB1 := wB0.Add(o.duration)
	logf("phase B (after the restart): recovering until %s, measuring %s..%s", wB0.Format("15:04:05"),
		wB0.Format("15:04:05"), wB1.Format("15:04:05"))
	if err := e.progress(ctx, ready, wB0); err != nil {
		return err
	}
	b, err := e.watch(ctx, res, wB0, wB1)
	if err != nil {
		return err
	}

	u2, u, err := e.settle(ctx, t0, wB1, set.firstID, set.lastID(), o.drain, "the run")
	if err != nil {
		return err
	}

	if cs.WindowA, err = e.phaseFigures(ctx, sets, a, u, a.u1); err != nil {
		return fmt.Errorf("coldstart: window A: %w", err)
	}
	if cs.WindowB, err = e.phaseFigures(ctx, sets, b, u, u2); err != nil {
		return fmt.Errorf("coldstart: window B: %w", err)
	}
	all, err := measureWindow(ctx, e.pool, t0, wB1, set.firstID, set.lastID())
	if err != nil {
		return err
	}
	res.Window = &Window{Start: t0.UTC(), End: wB1.UTC(), Seconds: wB1.Sub(t0).Seconds()}
	res.Correctness = correctness(sets, t0, wB1, u, all)
	if err := e.recovery(ctx, sets, &cs.Restart, stopped, ready, wB0, wB1); err != nil {
		return err
	}
	return nil
}

// watched is one measured window: its bounds and the CPU and counter
// snapshots at its ends.
type watched struct {
	w0, w1 time.Time
	u0, u1 usage
	c0, c1 map[string]float64
}

// watch waits for the window, snapshots at its start, logs progress and
// snapshots at its end (windowStart, windowEnd: profiles too).
func (e *env) watch(ctx context.Context, res *Result, w0, w1 time.Time) (watched, error) {
	w := watched{w0: w0, w1: w1}
	if err := sleepUntil(ctx, w0); err != nil {
		return w, err
	}
	w.u0, w.c0 = e.windowStart(ctx)
	if err := e.progress(ctx, w0, w1); err != nil {
		return w, err
	}
	w.u1, w.c1 = e.windowEnd(ctx, res)
	return w, nil
}

// phaseFigures is one window's steady figures; peak is the snapshot the
// peak RSS is read from.
func (e *env) phaseFigures(ctx context.Context, sets []*jobSet, w watched, u *union, peak usage) (*Phase, error) {
	first, last := sets[0].firstID, sets[len(sets)-1].lastID()
	secs := w.w1.Sub(w.w0).Seconds()
	rates, err := measureRates(ctx, e.pool, w.w0, w.w1)
	if err != nil {
		return nil, err
	}
	rates.FiresPlanned = round1((w.c1["jetjob_runs_planned_total"] - w.c0["jetjob_runs_planned_total"]) / secs)
	ws, err := measureWindow(ctx, e.pool, w.w0, w.w1, first, last)
	if err != nil {
		return nil, err
	}
	p := &Phase{Window: Window{Start: w.w0.UTC(), End: w.w1.UTC(), Seconds: secs}, Rates: rates,
		FireLagMs: ws.fire, StartLagMs: ws.start, EndToEndMs: ws.e2e}
	if p.FireSpreadMs, err = measureSpread(ctx, e.pool, w.w0, w.w1, first, last); err != nil {
		return nil, fmt.Errorf("spread: %w", err)
	}
	p.Correctness = correctness(sets, w.w0, w.w1, u, ws)
	p.Processes = procStats(w.u0, w.u1, secs)
	withPeakRSS(p.Processes, peak)
	p.HostCPU = hostCPU(w.u0, w.u1)
	p.CPUPerRun = cpuPerRun(p.Processes, rates.succeeded)
	p.PerRun = e.perRun(ctx, w.u0.cost, w.u1.cost, rates.succeeded)
	return p, nil
}

// recovery fills in when start lag came back: per fire time (whole
// second) from restartGap before the stop to the end of window B, the
// fires expected, the runs, how many started, how many were shed, and
// start lag p99 (a run that never started counts with "now" as its start,
// so shed fires keep a second from counting as recovered). The run has
// recovered at the first fire time from which every later one up to the
// end of window B has all its runs and a p99 within --recovery-lag.
func (e *env) recovery(ctx context.Context, sets []*jobSet, r *Restart, stopped, ready, wB0, wB1 time.Time) error {
	first, last := sets[0].firstID, sets[len(sets)-1].lastID()
	from := stopped.Truncate(time.Second).Add(-restartGap)
	secs, err := lagSeconds(ctx, e.pool, sets, from, wB1, first, last)
	if err != nil {
		return err
	}
	rec := recovered(secs, float64(e.o.recoveryLag.Milliseconds()), stopped)
	r.RecoverySeconds, r.RecoveryAfterReadySeconds = -1, -1
	if rec >= 0 {
		at := secs[rec].At
		r.RecoveredAt = &at
		r.RecoverySeconds = round3(at.Sub(stopped).Seconds())
		r.RecoveryAfterReadySeconds = round3(at.Sub(ready).Seconds())
		logf("restart: start lag p99 within %s from the fires of %s on: %.1f s after the first SIGTERM",
			e.o.recoveryLag, at.Local().Format("15:04:05"), r.RecoverySeconds)
	} else {
		e.note("restart: start lag p99 did not stay within %s up to the end of window B", e.o.recoveryLag)
	}
	for _, s := range secs {
		if s.At.Before(wB0) || (r.RecoveredAt != nil && !s.At.After(r.RecoveredAt.Add(3*time.Second))) {
			r.Seconds = append(r.Seconds, s)
		}
	}
	return nil
}

// recovered is the index of the first fire time at or after stopped from
// which every later one has all its runs and start lag p99 within limitMs,
// -1 if there is none.
func recovered(secs []LagSecond, limitMs float64, stopped time.Time) int {
	rec := -1
	for i := len(secs) - 1; i >= 0; i-- {
		s := secs[i]
		if s.Runs < s.Fires || s.StartP99Ms > limitMs {
			break
		}
		rec = i
	}
	// Only fire times after the stop can be the recovery.
	for rec >= 0 && rec < len(secs) && secs[rec].At.Before(stopped) {
		rec++
	}
	if rec >= len(secs) {
		return -1
	}
	return rec
}

// lagSeconds is, per whole second of scheduled_at in [from, to), the fires
// the sets expect and what became of them.
func lagSeconds(ctx context.Context, pool *pgxpool.Pool, sets []*jobSet, from, to time.Time, idFrom, idTo int64) ([]LagSecond, error) {
	expected := map[int64]int64{}
	for _, s := range sets {
		s.fires(from, to, func(_ int64, at time.Time) { expected[at.Unix()]++ })
	}
	rows, _ := pool.Query(ctx, `SELECT date_trunc('second', scheduled_at), count(*), count(started_at),
			count(*) FILTER (WHERE status IN ('SKIPPED', 'EXPIRED')),
			percentile_disc(0.99) WITHIN GROUP (ORDER BY
				1000 * extract(epoch FROM coalesce(started_at, statement_timestamp()) - scheduled_at)::float8)
		FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2 AND job_id BETWEEN $3 AND $4
		GROUP BY 1`, from, to, idFrom, idTo)
	got := map[int64]LagSecond{}
	var s LagSecond
	_, err := pgx.ForEachRow(rows, []any{&s.At, &s.Runs, &s.Started, &s.Shed, &s.StartP99Ms}, func() error {
		s.At = s.At.UTC()
		s.StartP99Ms = round1(s.StartP99Ms)
		got[s.At.Unix()] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("start lag per second: %w", err)
	}
	var out []LagSecond
	for t := from.Truncate(time.Second); t.Before(to); t = t.Add(time.Second) {
		s, ok := got[t.Unix()]
		if !ok {
			s = LagSecond{At: t.UTC()}
		}
		s.Fires = expected[t.Unix()]
		if s.Fires == 0 && s.Runs == 0 {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// tableStats is what PostgreSQL knows of jobs and job_runs (and its
// partitions): rows, whether and how often they were analysed and
// vacuumed.
func tableStats(ctx context.Context, pool *pgxpool.Pool) ([]TableStat, error) {
	rows, _ := pool.Query(ctx, `SELECT s.relname, s.n_live_tup, s.n_dead_tup, c.reltuples::float8,
			s.analyze_count + s.autoanalyze_count, s.vacuum_count + s.autovacuum_count, s.last_autoanalyze, s.last_autovacuum
		FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
		WHERE s.relname = 'jobs' OR s.relname LIKE 'job\_runs%'
		ORDER BY 1`)
	var out []TableStat
	var t TableStat
	_, err := pgx.ForEachRow(rows, []any{&t.Table, &t.LiveRows, &t.DeadRows, &t.RelTuples, &t.Analyzed, &t.Vacuumed,
		&t.LastAutoAnalyze, &t.LastAutoVacuum}, func() error {
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("table statistics: %w", err)
	}
	return out, nil
}
