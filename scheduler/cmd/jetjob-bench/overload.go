package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/internal/policy"
)

// overload completes runPeriodic for --scenario overload: "@every 1s" jobs
// offered at --jobs fires/s, meant to be about twice the capacity that
// --scenario max finds. It reports what the window's fires became: the
// succeeded rate (and its share of --capacity), the fires the misfire
// policy shed (SKIPPED by a scheduler, EXPIRED by a worker) grouped by
// their messages, the other statuses, the fires without a row (lost) and
// the duplicates; the lags are those of the runs that did run.
func (e *env) overload(ctx context.Context, res *Result, sets []*jobSet, w0, w1 time.Time, ws windowStats, u *union) error {
	first, last := sets[0].firstID, sets[len(sets)-1].lastID()
	ran, err := measureRan(ctx, e.pool, w0, w1, first, last)
	if err != nil {
		return fmt.Errorf("overload: %w", err)
	}
	res.FireLagMs, res.StartLagMs, res.EndToEndMs = &ran.fire, &ran.start, &ran.e2e
	c := res.Correctness
	secs := w1.Sub(w0).Seconds()
	ov := &Overload{
		Fires: c.ExpectedFires, OfferedPerS: round1(float64(c.ExpectedFires) / secs),
		SucceededPerS: res.Rates.RunsSucceeded, Succeeded: ws.statuses["SUCCEEDED"],
		Shed: c.ShedFires, ShedPerS: round1(float64(c.ShedFires) / secs),
		WithoutRow: c.UnrecordedFires, Unaccounted: c.UnaccountedFires, Duplicates: c.DuplicateRuns,
		CapacityPerS: e.o.capacity, OtherStatuses: map[string]int64{},
	}
	if ov.Fires > 0 {
		ov.SucceededPctOfOffered = round1(100 * float64(ov.Succeeded) / float64(ov.Fires))
		ov.ShedPct = round1(100 * float64(ov.Shed) / float64(ov.Fires))
	}
	if e.o.capacity > 0 {
		ov.SucceededPctOfCapacity = round1(100 * ov.SucceededPerS / e.o.capacity)
	}
	for st, n := range ws.statuses {
		if st != "SUCCEEDED" && st != "SKIPPED" && st != "EXPIRED" {
			ov.OtherStatuses[st] = n
		}
	}
	if ov.ShedByMessage, ov.SummarizedFires, err = shedKinds(ctx, e.pool, w0, w1, first, last); err != nil {
		return fmt.Errorf("overload: %w", err)
	}
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2
		AND job_id BETWEEN $3 AND $4 AND trigger_type = 'misfire'`, w0, w1, first, last).Scan(&ov.CatchUps); err != nil {
		return fmt.Errorf("overload: catch-up runs: %w", err)
	}
	if ws.ranged > 0 {
		e.note("%d fires of the window are in SKIPPED runs that stand for ranges of missed fires (one row for many): counted as shed",
			ws.ranged)
	}
	res.Overload = ov
	logf("overload: offered %.0f fires/s, succeeded %.0f/s, shed %.0f/s (%d), other %v, without a row %d, duplicates %d",
		ov.OfferedPerS, ov.SucceededPerS, ov.ShedPerS, ov.Shed, ov.OtherStatuses, ov.WithoutRow, ov.Duplicates)
	return nil
}

// shedKinds groups the window's shed runs (SKIPPED, EXPIRED) by status and
// message, numbers in the message replaced by N ("late by 5.2s" and "late
// by 6.1s" are one kind), with one real message of each kind (rows, not
// the fires a range stands for). summarized is the fires that the SKIPPED
// runs standing for ranges of missed fires among them stand for
// (policy.ParseSkipped), wherever they fall.
func shedKinds(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, idFrom, idTo int64) (kinds []ShedKind, summarized int64, err error) {
	rows, _ := pool.Query(ctx, `SELECT status, regexp_replace(message, '[0-9]+([.][0-9]+)?', 'N', 'g') AS kind, count(*), min(message)
		FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2 AND job_id BETWEEN $3 AND $4
			AND status IN ('SKIPPED', 'EXPIRED')
		GROUP BY 1, 2 ORDER BY 3 DESC`, from, to, idFrom, idTo)
	var k ShedKind
	_, err = pgx.ForEachRow(rows, []any{&k.Status, &k.Message, &k.Runs, &k.Example}, func() error {
		kinds = append(kinds, k)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("shed runs by message: %w", err)
	}
	rows, _ = pool.Query(ctx, `SELECT message FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2
		AND job_id BETWEEN $3 AND $4 AND status = 'SKIPPED' AND message LIKE 'misfire: % missed fires from %'`, from, to, idFrom, idTo)
	var msg string
	_, err = pgx.ForEachRow(rows, []any{&msg}, func() error {
		if n, _, _, _, ok := policy.ParseSkipped(msg); ok {
			summarized += int64(n)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("skipped ranges: %w", err)
	}
	return kinds, summarized, nil
}
