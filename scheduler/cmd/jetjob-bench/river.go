package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jetjob/jetjob/internal/backoff"
)

// riverReport is what the River baseline writes on SIGTERM (the report
// type of scheduler/cmd/jetjob-bench/river).
type riverReport struct {
	Expected   int64     `json:"expected"`
	Invoked    int64     `json:"invoked"`
	Duplicates int64     `json:"duplicates"`
	StartLagMs []float32 `json:"start_lag_ms"`
	Outside    int64     `json:"outside"`
}

// runRiver is --scenario river: steady's load (--jobs periodic jobs
// "@every 1s", a no-op handler) run by River instead of jetjob, on the
// same throwaway PostgreSQL with the same settings, so that a sitting
// compares the two on one host. River is one process (enqueuer, fetcher
// and workers); its CPU and PostgreSQL's over the window make "CPU per
// run", the jobs River recorded completed in the window the succeeded
// rate, the handler's start lag (start − the job's scheduled time) the
// latency. Its binary comes from `make bench-river` (--river-bin).
func runRiver(ctx context.Context, e *env, res *Result) error {
	o := e.o
	if _, err := os.Stat(o.riverBin); err != nil {
		return fmt.Errorf("--river-bin: %w (make bench-river builds it)", err)
	}
	if err := e.startPostgres(ctx); err != nil {
		return err
	}
	res.Machine = e.machine(ctx)
	// River starts firing on the whole second after it is up; the window
	// opens --warmup after a generous start-up allowance.
	const startup = 5 * time.Second
	w0 := time.Now().Add(startup + o.warmup).Truncate(time.Second).Add(time.Second)
	w1 := w0.Add(o.duration.Truncate(time.Second))
	secs := w1.Sub(w0).Seconds()
	out := filepath.Join(e.tmp, "river-report.json")
	c, err := startProgram("river", e.file(e.logDir, "river", "log"), 60*time.Second, o.riverBin,
		"--dsn", e.dbURL, "--jobs", strconv.Itoa(o.jobs), "--window-start", strconv.FormatInt(w0.UnixMilli(), 10),
		"--window-seconds", strconv.Itoa(int(secs)), "--max-workers", strconv.Itoa(o.concurrency()), "--out", out)
	if err != nil {
		return err
	}
	e.river = c
	if time.Now().After(w0.Add(-o.warmup)) {
		e.note("River took longer than %s to start: the warm-up was shorter than --warmup", startup)
	}
	res.Window = &Window{Start: w0.UTC(), End: w1.UTC(), Seconds: secs}
	logf("River runs %d periodic jobs (MaxWorkers %d); measuring %s until %s", o.jobs, o.concurrency(), w1.Sub(w0), w1.Format("15:04:05"))
	if err := sleepUntil(ctx, w0); err != nil {
		return err
	}
	u0 := e.sample()
	if err := sleepUntil(ctx, w1); err != nil {
		return err
	}
	u1 := e.sample()

	// Drain: the window's fires that River has not completed yet.
	deadline := time.Now().Add(o.drain)
	for {
		var open int64
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE scheduled_at >= $1 AND scheduled_at < $2
			AND state <> 'completed'`, w0, w1).Scan(&open); err != nil {
			return fmt.Errorf("river drain: %w", err)
		}
		if open == 0 || time.Now().After(deadline) {
			if open > 0 {
				e.note("%d River jobs of the window not completed after --drain %s", open, o.drain)
			}
			break
		}
		if err := backoff.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	u2 := e.sample()
	stopErr := c.stop(30 * time.Second)
	e.river = nil
	if stopErr != nil {
		return stopErr
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("river report: %w", err)
	}
	var rep riverReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("river report: %w", err)
	}

	var due, ok int64
	if err := e.pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE scheduled_at >= $1 AND scheduled_at < $2),
			count(*) FILTER (WHERE finalized_at >= $1 AND finalized_at < $2 AND state = 'completed')
		FROM river_job`, w0, w1).Scan(&due, &ok); err != nil {
		return fmt.Errorf("river rates: %w", err)
	}
	res.Rates = &Rates{FiresDue: round1(float64(due) / secs), RunsFinished: round1(float64(ok) / secs),
		RunsSucceeded: round1(float64(ok) / secs), succeeded: ok}
	lags := make([]float64, len(rep.StartLagMs))
	for i, l := range rep.StartLagMs {
		lags[i] = float64(l)
	}
	p50, p99, mx := percentiles(lags)
	res.StartLagMs = &Latency{N: int64(len(lags)), Missing: rep.Expected - rep.Invoked, P50: round3(p50), P99: round3(p99), Max: round3(mx)}
	res.Correctness = &Correct{ExpectedFires: rep.Expected, InvokedFires: rep.Invoked, LostFires: rep.Expected - rep.Invoked,
		UnaccountedFires: rep.Expected - rep.Invoked, DuplicateRuns: rep.Duplicates, HandlerInvocations: rep.Invoked + rep.Duplicates,
		StatusCounts: map[string]int64{}}
	res.Processes = procStats(u0, u1, secs)
	res.HostCPU = hostCPU(u0, u1)
	res.CPUPerRun = cpuPerRun(res.Processes, ok)
	withPeakRSS(res.Processes, u2)
	return nil
}
