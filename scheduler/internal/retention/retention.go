// Package retention maintains job_runs' daily partitions: it creates the
// coming days' partitions, rolls finished days up into run_stats_daily (the
// daily report), and drops the partitions of days older than the retention
// once the rollup covers them. It also deletes the counters of child-job
// chains (run_chains, package runs) idle for longer than the retention,
// and the workflow runs (workflow_runs, package wfengine) that ended and
// were scheduled before the retention's cutoff, as their own runs' days
// are dropped.
// It decides which days and when; the statements that create, drop or
// empty a day, which write runs, are package runs' (Partitions,
// CreatePartition, DropPartition, DeleteDefaultDay, ForgetIdleChains).
//
// Every scheduler runs the loop, but one does the work at a time: each step
// runs in its own transaction that first takes pg_try_advisory_xact_lock,
// and a scheduler that does not get it leaves the round to the one that
// did. The lock is maintenance's only; nothing on the scheduling path ever
// takes it. Every step is idempotent (a partition is created unless it
// exists, a day is rolled up again by replacing its rows, a partition is
// dropped only while it exists and is covered), so a round cut short by a
// crash is simply finished by the next one.
//
// Steps are short transactions of their own on purpose: attaching a
// partition holds a SHARE UPDATE EXCLUSIVE lock on job_runs and dropping one
// an ACCESS EXCLUSIVE lock until commit, and the hot path (planning, marking
// runs triggered, applying results) must not wait behind a long rollup.
// Each of them also sets lock_timeout, so that a step which cannot get its
// lock gives up (and is retried next round) instead of queueing every
// writer of job_runs behind it.
package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// Defaults of Config.
const (
	DefaultRetention   = 30 * 24 * time.Hour
	DefaultInterval    = 5 * time.Minute
	DefaultAhead       = 7
	DefaultLockTimeout = 2 * time.Second
	// reRollupDays bounds how far back a day rolled up with runs still
	// open is rolled up again: a run stuck for longer than that is counted
	// in the status it had.
	reRollupDays = 7
	// workflowRunBatch is how many old workflow runs one step deletes:
	// steps stay short transactions however many are due (the first round
	// after an upgrade, or after a long outage).
	workflowRunBatch = 1000
)

// lockKey is the advisory lock of maintenance ("jjretn"), distinct from
// the migration lock.
const lockKey = 0x6a6a7265746e

// Config tunes the loop. Zero values mean the defaults.
type Config struct {
	// Retention is how long runs are kept in job_runs (default 30 days):
	// a day's partition is dropped once the whole day is older than this
	// and the rollup covers it. The rollup is kept.
	Retention time.Duration
	// Interval is the pause between rounds (default 5 min); a round also
	// runs at start.
	Interval time.Duration
	// Ahead is how many days after today get their partition in advance
	// (default 7), so runs planned ahead (retries, a scheduler's clock
	// running fast) land in a day's partition rather than the default one.
	Ahead int
	// LockTimeout bounds how long a step waits for its lock on job_runs
	// (default 2 s).
	LockTimeout time.Duration
}

// Deps are what a Maintainer works on and by: given to New and fixed from
// then on, never set on a running component. Config holds only what an
// operator tunes.
type Deps struct {
	// Pool holds job_runs and run_stats_daily.
	Pool *pgxpool.Pool
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Now is the clock that decides what "today" is (nil: time.Now);
	// tests move it.
	Now func() time.Time
}

// Validate says which field is wrong.
func (c Config) Validate() error {
	switch {
	case c.Retention < 0:
		return fmt.Errorf("retention: run retention %s: want a positive duration such as 720h (30 days)", c.Retention)
	case c.Interval < 0:
		return fmt.Errorf("retention: interval %s must not be negative", c.Interval)
	case c.Ahead < 0:
		return fmt.Errorf("retention: %d days ahead must not be negative", c.Ahead)
	case c.LockTimeout < 0:
		return fmt.Errorf("retention: lock timeout %s must not be negative", c.LockTimeout)
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.Ahead = cmp.Or(c.Ahead, DefaultAhead)
	c.LockTimeout = cmp.Or(c.LockTimeout, DefaultLockTimeout)
	return c
}

// Maintainer runs the rounds. Create with New, drive with Run (or Round).
type Maintainer struct {
	cfg     Config
	pool    *pgxpool.Pool
	log     *zap.Logger
	now     func() time.Time
	metrics metrics
	// rollUp is store.RollUpDay; tests make it fail.
	rollUp func(ctx context.Context, tx pgx.Tx, day time.Time) (runs, open int64, err error)
}

// New validates cfg and returns a maintainer.
func New(cfg Config, deps Deps) (*Maintainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	return &Maintainer{cfg: cfg.withDefaults(), pool: deps.Pool, log: logging.Named(deps.Log, "retention"), now: now,
		metrics: newMetrics(), rollUp: store.RollUpDay}, nil
}

// Collectors are the maintainer's Prometheus metrics, for the scheduler's
// registry.
func (m *Maintainer) Collectors() []prometheus.Collector { return m.metrics.collectors() }

// Run does a round at once and then every Interval until ctx ends. A
// failed round is logged and tried again after a minute at most.
func (m *Maintainer) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		next := m.cfg.Interval
		rep, err := m.Round(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			m.metrics.failures.Inc()
			m.log.Warn("maintenance round failed; retrying", zap.Error(err))
			next = min(next, time.Minute)
		case rep.Skipped:
			m.log.Debug("maintenance done by another scheduler this round")
		default:
			m.metrics.lastSuccess.SetToCurrentTime()
		}
		t.Reset(next)
	}
}

// Report is what one round did.
type Report struct {
	// Skipped: another scheduler held the maintenance lock.
	Skipped bool
	// Created are the partitions created, Moved the rows moved into them
	// from the default partition.
	Created []string
	Moved   int64
	// RolledUp are the days rolled up (again, for days with open runs).
	RolledUp []time.Time
	// Dropped are the partitions dropped; Kept those older than the
	// retention that were not dropped because no rollup covers them.
	Dropped []string
	Kept    []string
	// Purged counts rows deleted from the default partition for days
	// older than the retention (rolled up first, like partitions).
	Purged int64
	// Chains counts the chain counters (run_chains) deleted: those of
	// root fires idle for longer than the retention, whose runs are gone.
	Chains int64
	// WorkflowRuns counts the workflow runs deleted: ended, and scheduled
	// before the retention's cutoff.
	WorkflowRuns int64
	// TriggerKeys counts the idempotency keys of triggers deleted: older
	// than their window (store.KeyWindow).
	TriggerKeys int64
}

// errNotHolder ends a round whose lock another scheduler holds.
var errNotHolder = errors.New("maintenance lock held by another scheduler")

// Round does one round: create partitions, roll up, drop, forget idle
// chains, old workflow runs and old trigger keys.
func (m *Maintainer) Round(ctx context.Context) (Report, error) {
	var rep Report
	today, cutoff := bounds(m.now(), m.cfg.Retention)
	err := m.round(ctx, &rep, today, cutoff)
	if errors.Is(err, errNotHolder) {
		rep.Skipped = true
		return rep, nil
	}
	return rep, err
}

func (m *Maintainer) round(ctx context.Context, rep *Report, today, cutoff time.Time) error {
	// Reading the days is the round's first step, so a scheduler that does
	// not get the lock leaves at once.
	var (
		parts       map[time.Time]string
		defaultDays []time.Time
	)
	if err := m.step(ctx, func(tx pgx.Tx) error {
		var err error
		parts, defaultDays, err = runs.Partitions(ctx, tx)
		return err
	}); err != nil {
		return err
	}

	// 1. Partitions for today and the days ahead, and for the days whose
	// rows sit in the default partition (inside the retention).
	for _, d := range toCreate(today, cutoff, m.cfg.Ahead, parts, defaultDays) {
		var moved int64
		if err := m.step(ctx, func(tx pgx.Tx) error {
			var err error
			moved, err = runs.CreatePartition(ctx, tx, d)
			return err
		}); err != nil {
			return fmt.Errorf("create partition of %s: %w", d.Format(time.DateOnly), err)
		}
		if moved >= 0 {
			name := runs.PartitionName(d)
			parts[d] = name
			rep.Created = append(rep.Created, name)
			rep.Moved += moved
			m.metrics.created.Inc()
			m.log.Info("partition created", zap.String("partition", name), zap.Int64("moved_from_default", moved))
		}
	}

	// 2. Rollup of every finished day not covered yet, and again of
	// recent days rolled up while some of their runs were still open.
	rows, _ := m.pool.Query(ctx, `SELECT day FROM run_stats_days WHERE open_runs = 0 OR day < $1`,
		today.AddDate(0, 0, -reRollupDays))
	doneDays, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return fmt.Errorf("read rolled-up days: %w", err)
	}
	done := map[time.Time]bool{}
	for _, d := range doneDays {
		done[store.DayStart(d)] = true
	}
	days := held(parts, defaultDays)
	// A day that fails to roll up is reported at the end; the other days
	// go on, and the failed one is simply not dropped.
	var errs []error
	for _, d := range toRollUp(days, today, done) {
		var total, open int64
		if err := m.step(ctx, func(tx pgx.Tx) error {
			var err error
			total, open, err = m.rollUp(ctx, tx, d)
			return err
		}); errors.Is(err, errNotHolder) {
			return err
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		rep.RolledUp = append(rep.RolledUp, d)
		m.metrics.rolledUp.Inc()
		m.log.Info("day rolled up", zap.String("day", d.Format(time.DateOnly)), zap.Int64("runs", total), zap.Int64("open_runs", open))
	}

	// 3. Drop what is older than the retention, only where the rollup
	// covers it (checked in the dropping transaction itself).
	for _, d := range toDrop(days, cutoff) {
		name, isPart := parts[d]
		var covered bool
		var purged int64
		err := m.step(ctx, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM run_stats_days WHERE day = $1)`, d).Scan(&covered); err != nil {
				return err
			}
			if !covered {
				return nil
			}
			if isPart {
				return runs.DropPartition(ctx, tx, d)
			}
			var err error
			purged, err = runs.DeleteDefaultDay(ctx, tx, d)
			return err
		})
		if err != nil {
			return fmt.Errorf("drop runs of %s: %w", d.Format(time.DateOnly), err)
		}
		switch {
		case !covered:
			if isPart {
				rep.Kept = append(rep.Kept, name)
			}
			m.log.Warn("runs older than the retention kept: their day is not rolled up",
				zap.String("day", d.Format(time.DateOnly)))
		case isPart:
			rep.Dropped = append(rep.Dropped, name)
			m.metrics.dropped.Inc()
			m.log.Info("partition dropped", zap.String("partition", name), zap.Duration("retention", m.cfg.Retention))
		default:
			rep.Purged += purged
			m.log.Info("old runs deleted from the default partition", zap.String("day", d.Format(time.DateOnly)), zap.Int64("runs", purged))
		}
	}

	// 4. The counters of chains idle for longer than the retention (the
	// cap on the runs a fire causes through child jobs, package runs):
	// their runs are dropped by now, and no child of theirs is to come.
	if err := m.step(ctx, func(tx pgx.Tx) error {
		var err error
		rep.Chains, err = runs.ForgetIdleChains(ctx, tx, cutoff)
		return err
	}); err != nil {
		return fmt.Errorf("delete idle chain counters: %w", err)
	}

	// 5. Workflow runs that ended before the cutoff, a batch per step:
	// they follow their own runs, whose days are dropped by now (or are
	// once rolled up), and take their node runs' keys with them. An active
	// run is kept however old.
	for {
		var n int64
		if err := m.step(ctx, func(tx pgx.Tx) error {
			var err error
			n, err = wfengine.ForgetEnded(ctx, tx, cutoff, workflowRunBatch)
			return err
		}); err != nil {
			return fmt.Errorf("delete old workflow runs: %w", err)
		}
		rep.WorkflowRuns += n
		if n < workflowRunBatch {
			break
		}
	}
	if rep.WorkflowRuns > 0 {
		m.log.Info("old workflow runs deleted", zap.Int64("workflow_runs", rep.WorkflowRuns), zap.Duration("retention", m.cfg.Retention))
	}

	// 6. Idempotency keys of triggers past their window.
	if err := m.step(ctx, func(tx pgx.Tx) error {
		var err error
		rep.TriggerKeys, err = store.ForgetTriggerKeys(ctx, tx, m.now().Add(-store.KeyWindow))
		return err
	}); err != nil {
		return fmt.Errorf("delete old trigger keys: %w", err)
	}
	return errors.Join(errs...)
}

// step runs f in a transaction holding the maintenance lock, with a lock
// timeout; errNotHolder when another scheduler holds the lock.
func (m *Maintainer) step(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(lockKey)).Scan(&got); err != nil {
			return fmt.Errorf("maintenance lock: %w", err)
		}
		if !got {
			return errNotHolder
		}
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`,
			strconv.FormatInt(m.cfg.LockTimeout.Milliseconds(), 10)); err != nil {
			return fmt.Errorf("set lock timeout: %w", err)
		}
		return f(tx)
	})
}

// metrics: what an operator alerts on is the last successful round (max
// over the schedulers: rounds another scheduler did are not counted here).
type metrics struct {
	created, rolledUp, dropped, failures prometheus.Counter
	lastSuccess                          prometheus.Gauge
}

func newMetrics() metrics {
	return metrics{
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_run_partitions_created_total", Help: "Day partitions of job_runs created by this scheduler.",
		}),
		rolledUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_run_days_rolled_up_total", Help: "Days of runs rolled up into run_stats_daily by this scheduler.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_run_partitions_dropped_total", Help: "Day partitions of job_runs dropped by this scheduler (older than the retention, rolled up).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_maintenance_failures_total", Help: "Maintenance rounds that failed (retried).",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jetjob_maintenance_last_success_timestamp_seconds", Help: "When this scheduler last completed a maintenance round (Unix time); take the max over schedulers.",
		}),
	}
}

func (m metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.created, m.rolledUp, m.dropped, m.failures, m.lastSuccess}
}
