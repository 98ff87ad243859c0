package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/jetjob/jetjob/internal/backoff"
)

// everySet is n jobs "@every <period>" whose first fires are spread by
// offset.
func everySet(firstID int64, n int, period time.Duration, handler string, offset func(int64) time.Duration, armedUntil time.Duration) *jobSet {
	expr := fmt.Sprintf("@every %s", period)
	if period%time.Second == 0 {
		expr = fmt.Sprintf("@every %ds", period/time.Second)
	}
	return &jobSet{firstID: firstID, n: n, typ: "cron", expr: expr, period: period,
		offset: offset, handler: handler, armedUntil: armedUntil}
}

func zeroOffset(int64) time.Duration { return 0 }

// start brings up PostgreSQL, NATS, the jobs, the workers and the
// schedulers, and waits until the schedulers hold every shard.
func (e *env) start(ctx context.Context, res *Result, sets []*jobSet) error {
	if err := e.startPostgres(ctx); err != nil {
		return err
	}
	if err := e.startNATS(ctx); err != nil {
		return err
	}
	res.Machine = e.machine(ctx)
	if err := e.insert(ctx, sets...); err != nil {
		return err
	}
	if err := e.startWorkers(e.o.workers, e.o.concurrency()); err != nil {
		return err
	}
	if err := e.startSchedulers(e.o.schedulers); err != nil {
		return err
	}
	if err := e.waitShards(ctx, 90*time.Second); err != nil {
		return err
	}
	logf("%d scheduler(s) hold all %d shards; %d worker(s) × concurrency %d, handler %s",
		e.o.schedulers, e.o.shards, e.o.workers, e.o.concurrency(), e.o.handler)
	return nil
}

func (e *env) insert(ctx context.Context, sets ...*jobSet) error {
	for _, s := range sets {
		if s.handler == "shell" && s.params == "" {
			s.params = e.o.shellCommand
		}
		if s.block == "" {
			s.block = e.o.blockStrategy
		}
		if s.route == "" {
			s.route = e.o.route
		}
		if s.misfire == "" {
			s.misfire = e.o.misfirePolicy
		}
		if s.kind == "" {
			s.flow = e.o.flow
		}
		t := time.Now()
		if err := s.insert(ctx, e.pool, e.o.shards); err != nil {
			return err
		}
		d := time.Since(t)
		logf("inserted %d jobs (%s, %s) with COPY in %s (%.0f rows/s)", s.n, s.typ, s.expr, d.Round(time.Millisecond),
			float64(s.n)/d.Seconds())
	}
	if err := e.o.flow.setGroup(ctx, e.pool); err != nil {
		return err
	}
	if e.cold {
		logf("no VACUUM ANALYZE: the tables stay as a fresh database has them (autovacuum alone may get to them)")
		return nil
	}
	t := time.Now()
	if _, err := e.pool.Exec(ctx, `VACUUM ANALYZE jobs`); err != nil {
		return fmt.Errorf("vacuum analyze jobs: %w", err)
	}
	logf("VACUUM ANALYZE jobs: %s", time.Since(t).Round(time.Millisecond))
	return nil
}

// arm gives the sets a common first-fire second far enough ahead for the
// UPDATE to finish and the planner to see the fires before they are due.
func (e *env) arm(ctx context.Context, minLead time.Duration, sets ...*jobSet) (time.Time, error) {
	var rows int64
	for _, s := range sets {
		for i := range int64(s.n) {
			if s.offset(i) < s.armedUntil {
				rows++
			}
		}
	}
	lead := max(minLead, 2*time.Second+time.Duration(rows)*100*time.Microsecond) // ≈ 10,000 rows/s, conservatively
	t0 := time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	t := time.Now()
	var armed int64
	for _, s := range sets {
		n, err := s.arm(ctx, e.pool, t0)
		if err != nil {
			return t0, err
		}
		armed += n
	}
	logf("armed %d jobs in %s: first fire %s", armed, time.Since(t).Round(time.Millisecond), t0.Format("15:04:05"))
	if armed != rows {
		e.note("armed %d jobs, expected %d", armed, rows)
	}
	if late := time.Until(t0); late < time.Second {
		e.note("arming finished only %s before the first fire", late.Round(time.Millisecond))
	}
	return t0, nil
}

// armWindow arms sets (arm, with no lead of its own) and returns the
// window to measure: from warmup after their first fire, for duration.
func (e *env) armWindow(ctx context.Context, warmup, duration time.Duration, sets ...*jobSet) (w0, w1 time.Time, err error) {
	t0, err := e.arm(ctx, 0, sets...)
	if err != nil {
		return t0, t0, err
	}
	w0 = t0.Add(warmup)
	return w0, w0.Add(duration), nil
}

// measure waits for the window [w0, w1) and samples the processes' usage
// and the schedulers' counters at its start (u0, c0: windowStart) and its
// end (u1, c1: windowEnd), reporting progress meanwhile.
func (e *env) measure(ctx context.Context, res *Result, w0, w1 time.Time) (u0, u1 usage, c0, c1 map[string]float64, err error) {
	if err := sleepUntil(ctx, w0); err != nil {
		return u0, u1, c0, c1, err
	}
	u0, c0 = e.windowStart(ctx)
	if err := e.progress(ctx, w0, w1); err != nil {
		return u0, u1, c0, c1, err
	}
	u1, c1 = e.windowEnd(ctx, res)
	return u0, u1, c0, c1, nil
}

// usageResults records what the processes used between u0 and u1, secs
// apart, in all and for each of the succeeded runs.
func (e *env) usageResults(ctx context.Context, res *Result, u0, u1 usage, secs float64, succeeded int64) {
	res.Processes = procStats(u0, u1, secs)
	res.HostCPU = hostCPU(u0, u1)
	res.CPUPerRun = cpuPerRun(res.Processes, succeeded)
	res.PerRun = e.perRun(ctx, u0.cost, u1.cost, succeeded)
}

// runPeriodic is steady and sparse: periodic jobs, a warm-up, a measured
// window, then a drain.
func runPeriodic(ctx context.Context, e *env, res *Result, sets []*jobSet) error {
	o := e.o
	if err := e.start(ctx, res, sets); err != nil {
		return err
	}
	w0, w1, err := e.armWindow(ctx, o.warmup, o.duration, sets...)
	if err != nil {
		return err
	}
	secs := w1.Sub(w0).Seconds()
	res.Window = &Window{Start: w0.UTC(), End: w1.UTC(), Seconds: secs}
	logf("warm-up until %s, measuring %s until %s", w0.Format("15:04:05"), o.duration, w1.Format("15:04:05"))
	u0, u1, c0, c1, err := e.measure(ctx, res, w0, w1)
	if err != nil {
		return err
	}

	first, last := sets[0].firstID, sets[len(sets)-1].lastID()
	u2, u, err := e.settle(ctx, w0, w1, first, last, o.drain, "the window")
	if err != nil {
		return err
	}

	rates, err := measureRates(ctx, e.pool, w0, w1)
	if err != nil {
		return err
	}
	rates.FiresPlanned = round1((c1["jetjob_runs_planned_total"] - c0["jetjob_runs_planned_total"]) / secs)
	res.Rates = &rates
	ws, err := measureWindow(ctx, e.pool, w0, w1, first, last)
	if err != nil {
		return err
	}
	res.FireLagMs, res.StartLagMs, res.EndToEndMs = &ws.fire, &ws.start, &ws.e2e
	if res.FireSpreadMs, err = measureSpread(ctx, e.pool, w0, w1, first, last); err != nil {
		return err
	}
	res.Correctness = correctness(sets, w0, w1, u, ws)
	e.usageResults(ctx, res, u0, u1, secs, rates.succeeded)
	withPeakRSS(res.Processes, u2)
	if res.Scenario == "overload" {
		return e.overload(ctx, res, sets, w0, w1, ws, u)
	}
	return nil
}

func correctness(sets []*jobSet, from, to time.Time, u *union, ws windowStats) *Correct {
	expected, invoked, lostEx := audit(sets, from, to, u)
	dups, dupEx := u.duplicates()
	shed := ws.statuses["SKIPPED"] + ws.statuses["EXPIRED"]
	return &Correct{
		ExpectedFires: expected, InvokedFires: invoked, LostFires: expected - invoked, LostExamples: lostEx,
		ShedFires: shed, UnaccountedFires: max(0, expected-invoked-shed), UnrecordedFires: max(0, expected-ws.runs),
		TerminalRuns: ws.terminal, UnfinishedRuns: ws.unfinished, StatusCounts: ws.statuses,
		DuplicateRuns: dups, DuplicateExamples: dupEx, HandlerInvocations: u.total(),
	}
}

// windowStart snapshots CPU and counters and starts the profiles.
func (e *env) windowStart(ctx context.Context) (usage, map[string]float64) {
	if e.o.profile {
		if err := resetSQLStats(ctx, e.pool); err != nil {
			e.note("pg_stat_statements_reset: %v", err)
		}
	}
	e.signalProfiles(syscall.SIGUSR1)
	u := e.sample()
	u.cost = e.costs(ctx)
	return u, e.counters(ctx, "jetjob_runs_planned_total", "jetjob_triggers_published_total")
}

// windowEnd snapshots CPU and counters, stops the profiles and reads the
// statement statistics.
func (e *env) windowEnd(ctx context.Context, res *Result) (usage, map[string]float64) {
	u := e.sample()
	u.cost = e.costs(ctx)
	c := e.counters(ctx, "jetjob_runs_planned_total", "jetjob_triggers_published_total")
	e.signalProfiles(syscall.SIGUSR2)
	if e.o.profile {
		top, err := topSQL(ctx, e.pool, 12)
		if err != nil {
			e.note("pg_stat_statements: %v", err)
		}
		res.TopSQL = top
	}
	return u, c
}

// progress logs, every 10 s until end, the published rate, the runs
// waiting in the wheels, the worst shard planning lag, the group backlog
// (pending triggers, the oldest one's wait) and the backpressure (how long
// planning waited, the worst stage lag: planner/admit.go).
func (e *env) progress(ctx context.Context, from, end time.Time) error {
	const pub, held = "jetjob_triggers_published_total", "jetjob_planning_held_seconds_total"
	c := e.counters(ctx, pub, held)
	last, lastHeld := c[pub], c[held]
	lastT := time.Now()
	for {
		next := time.Now().Add(10 * time.Second)
		if next.After(end) {
			return sleepUntil(ctx, end)
		}
		if err := sleepUntil(ctx, next); err != nil {
			return err
		}
		var n, h, wheel, lag, pending, oldest, stage float64
		for _, s := range e.scheds {
			m, err := scrapeMax(ctx, s.metrics)
			if err != nil {
				continue
			}
			n += m[pub]
			h += m[held]
			stage = max(stage, m["jetjob_dispatch_lag_seconds"], m["jetjob_events_oldest_unapplied_seconds"])
			wheel += m["jetjob_wheel_runs"]
			lag = max(lag, m["jetjob_shard_planning_lag_seconds"])
			pending = max(pending, m["jetjob_group_pending_triggers"])
			oldest = max(oldest, m["jetjob_group_oldest_pending_seconds"])
		}
		now := time.Now()
		logf("  %3.0fs: %.0f triggers/s published, %.0f runs in the wheel, worst shard planning lag %.1f s, %.0f triggers pending, the oldest waiting %.1f s; planning held %.1f s, stage lag %.1f s",
			now.Sub(from).Seconds(), (n-last)/now.Sub(lastT).Seconds(), wheel, lag, pending, oldest, h-lastHeld, stage)
		last, lastHeld, lastT = n, h, now
	}
}

func withPeakRSS(ps []ProcStat, u usage) {
	for i := range ps {
		if s, ok := u.m[ps[i].Role]; ok && s.hwmKB > 0 {
			ps[i].PeakRSSMB = round1(float64(s.hwmKB) / 1024)
		}
	}
}

// runBurst: n "once" jobs all due in the same second.
func runBurst(ctx context.Context, e *env, res *Result) error {
	o := e.o
	set := &jobSet{firstID: 1, n: o.jobs, typ: "once", expr: parked.Format(time.RFC3339), offset: zeroOffset,
		handler: o.handler, armedUntil: time.Second}
	sets := []*jobSet{set}
	if err := e.start(ctx, res, sets); err != nil {
		return err
	}
	// The fire time is the end of the warm-up, and at least a planning
	// window (5 s) plus a pass ahead, so the burst is planned before it is
	// due, as it would be in production.
	t0, err := e.arm(ctx, max(o.warmup, 7*time.Second), sets...)
	if err != nil {
		return err
	}
	logf("burst of %d fires at %s", o.jobs, t0.Format("15:04:05"))
	if err := sleepUntil(ctx, t0.Add(-100*time.Millisecond)); err != nil {
		return err
	}
	u0, _ := e.windowStart(ctx)
	// Watch the schedulers' counters of applied final statuses (cheap);
	// ask PostgreSQL only to confirm, so that polling does not load it.
	deadline := t0.Add(o.burstTimeout)
	var done int64
	lastDB, lastBacklog := time.Time{}, time.Time{}
	var peak backlogPeak
	for time.Now().Before(deadline) {
		if time.Since(lastBacklog) >= 500*time.Millisecond {
			lastBacklog = time.Now()
			peak.observe(ctx, e)
		}
		applied := e.finalStatuses(ctx)
		if applied >= int64(o.jobs) || time.Since(lastDB) > 5*time.Second {
			lastDB = time.Now()
			if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE job_id BETWEEN $1 AND $2 AND recorded_at IS NOT NULL`,
				set.firstID, set.lastID()).Scan(&done); err != nil {
				return err
			}
			if done >= int64(o.jobs) {
				break
			}
		}
		if err := backoff.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	end := time.Now()
	u1, _ := e.windowEnd(ctx, res)
	secs := end.Sub(t0).Seconds()
	res.Window = &Window{Start: t0.UTC(), End: end.UTC(), Seconds: round3(secs)}
	u, err := e.stopWorkers()
	if err != nil {
		e.note("stopping workers: %v", err)
	}
	if err := e.stopSchedulers(); err != nil {
		e.note("stopping schedulers: %v", err)
	}

	b := &Burst{FireAt: t0.UTC(), Jobs: o.jobs, TimedOut: done < int64(o.jobs),
		PeakPending: int64(peak.pending), PeakOldestPendingSecs: round3(peak.oldest)}
	var lastTrig, lastStart, lastRec *time.Time
	if err := e.pool.QueryRow(ctx, `SELECT count(triggered_at), max(triggered_at), max(started_at), max(recorded_at)
		FROM job_runs WHERE job_id BETWEEN $1 AND $2`, set.firstID, set.lastID()).Scan(&b.Published, &lastTrig, &lastStart, &lastRec); err != nil {
		return err
	}
	since := func(t *time.Time) float64 {
		if t == nil {
			return -1
		}
		return round3(t.Sub(t0).Seconds())
	}
	b.AllPublishedSecs, b.AllStartedSecs, b.AllFinishedSecs = since(lastTrig), since(lastStart), since(lastRec)
	if b.Published < int64(o.jobs) {
		b.AllPublishedSecs = -1
	}
	if b.TimedOut {
		e.note("burst: only %d of %d runs finished within %s", done, o.jobs, o.burstTimeout)
		b.AllFinishedSecs = -1
	}
	res.Burst = b
	ws, err := measureWindow(ctx, e.pool, t0, t0.Add(time.Second), set.firstID, set.lastID())
	if err != nil {
		return err
	}
	res.FireLagMs, res.StartLagMs, res.EndToEndMs = &ws.fire, &ws.start, &ws.e2e
	if res.FireSpreadMs, err = measureSpread(ctx, e.pool, t0, t0.Add(time.Second), set.firstID, set.lastID()); err != nil {
		return err
	}
	res.Correctness = correctness(sets, t0, t0.Add(time.Second), u, ws)
	rates, err := measureRates(ctx, e.pool, t0, end)
	if err != nil {
		return err
	}
	res.Rates = &rates
	e.usageResults(ctx, res, u0, u1, secs, rates.succeeded)
	return nil
}

// runMax raises the offered rate step by step (adding "@every 1s" jobs
// while the system runs) until start lag p99 exceeds 1 s or fires go
// missing.
func runMax(ctx context.Context, e *env, res *Result) error {
	o := e.o
	if err := e.start(ctx, res, nil); err != nil {
		return err
	}
	var sets []*jobSet
	nextID := int64(1)
	total := 0
	var wins []Window
	var best float64
	var uLast usage
	for step := range o.maxSteps {
		n := o.step
		if step == 0 {
			n = o.jobs
		}
		set := o.secondSet(nextID, n)
		nextID += int64(n)
		total += n
		sets = append(sets, set)
		if err := e.insert(ctx, set); err != nil {
			return err
		}
		w0, w1, err := e.armWindow(ctx, o.stepWarmup, o.stepDuration, set)
		if err != nil {
			return err
		}
		secs := w1.Sub(w0).Seconds()
		logf("step %d: %d jobs (%d fires/s offered), measuring %s..%s", step+1, total, total,
			w0.Format("15:04:05"), w1.Format("15:04:05"))
		if err := sleepUntil(ctx, w0); err != nil {
			return err
		}
		u0, c0 := e.windowStart(ctx)
		if err := sleepUntil(ctx, w1); err != nil {
			return err
		}
		u1, c1 := e.windowEnd(ctx, res)
		uLast = u1
		if _, err := waitFinished(ctx, e.pool, w0, w1, 1, nextID-1, 10*time.Second); err != nil {
			return err
		}
		rates, err := measureRates(ctx, e.pool, w0, w1)
		if err != nil {
			return err
		}
		rates.FiresPlanned = round1((c1["jetjob_runs_planned_total"] - c0["jetjob_runs_planned_total"]) / secs)
		ws, err := measureWindow(ctx, e.pool, w0, w1, 1, nextID-1)
		if err != nil {
			return err
		}
		var expected int64
		for _, s := range sets {
			s.fires(w0, w1, func(int64, time.Time) { expected++ })
		}
		st := Step{Jobs: total, OfferedPerS: float64(total), Window: Window{Start: w0.UTC(), End: w1.UTC(), Seconds: secs},
			Rates: rates, FireLagMs: ws.fire, StartLagMs: ws.start, EndToEndMs: ws.e2e, Unfinished: ws.unfinished,
			Lost: expected - ws.terminal}
		st.Sustained = ws.start.P99 <= 1000 && ws.unfinished == 0 && ws.runs == expected
		for _, p := range procStats(u0, u1, secs) {
			st.CPUPctByRole = append(st.CPUPctByRole, fmt.Sprintf("%s %.0f%%", p.Role, p.CPUPctWindow))
		}
		h := hostCPU(u0, u1)
		st.CPUPctByRole = append(st.CPUPctByRole, fmt.Sprintf("other processes on the host %.0f%%", 100*h.OtherCPU/secs))
		logf("step %d: succeeded %.0f/s, fire lag p99 %.1f ms, start lag p99 %.1f ms, unfinished %d, sustained %v",
			step+1, rates.RunsSucceeded, ws.fire.P99, ws.start.P99, ws.unfinished, st.Sustained)
		res.Steps = append(res.Steps, st)
		wins = append(wins, st.Window)
		if !st.Sustained {
			break
		}
		best = max(best, rates.RunsSucceeded)
	}
	u, err := e.stopWorkers()
	if err != nil {
		e.note("stopping workers: %v", err)
	}
	if err := e.stopSchedulers(); err != nil {
		e.note("stopping schedulers: %v", err)
	}
	dups, dupEx := u.duplicates()
	for i, w := range wins {
		expected, invoked, _ := audit(sets, w.Start, w.End, u)
		res.Steps[i].Lost = expected - invoked
		if res.Steps[i].Lost != 0 {
			res.Steps[i].Sustained = false
		}
	}
	res.Correctness = &Correct{DuplicateRuns: dups, DuplicateExamples: dupEx, HandlerInvocations: u.total()}
	best = 0
	for _, st := range res.Steps {
		if st.Sustained {
			best = max(best, st.Rates.RunsSucceeded)
		}
	}
	res.MaxSustainedPerSec = best
	if len(wins) > 0 {
		last := res.Steps[len(res.Steps)-1]
		res.Window = &last.Window
		res.Processes = procStats(uLast, uLast, 1)
		for i := range res.Processes {
			res.Processes[i].CPUWindow, res.Processes[i].CPUPctWindow = 0, 0
		}
	}
	return nil
}

// backlogPeak is the highest group backlog the schedulers reported
// (jetjob_group_pending_triggers, jetjob_group_oldest_pending_seconds;
// sampled every --backlog-interval of the scheduler child, 1 s).
type backlogPeak struct{ pending, oldest float64 }

func (p *backlogPeak) observe(ctx context.Context, e *env) {
	for _, s := range e.scheds {
		m, err := scrapeMax(ctx, s.metrics)
		if err != nil {
			continue
		}
		p.pending = max(p.pending, m["jetjob_group_pending_triggers"])
		p.oldest = max(p.oldest, m["jetjob_group_oldest_pending_seconds"])
	}
}
