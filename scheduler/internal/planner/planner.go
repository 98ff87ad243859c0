// Package planner is the durable pre-read. About once a second, for each
// shard this scheduler owns, it reads the jobs due within the planning
// window, computes every fire time inside it, and in one transaction writes
// those fires as SCHEDULED runs and advances the jobs' next_fire_at past the
// window. The written runs are handed to the wheel, which fires them on time.
//
// Because planned fires are rows, not memory, a scheduler that dies leaves
// them behind and the shard's next owner fires them (Recover): xxl-job's
// pre-read, which lived only in its time ring, is no longer lost in a crash.
//
// Fires found later than the misfire threshold (the scheduler, NATS or
// PostgreSQL was down, or the job was just re-enabled) follow the job's
// misfire policy: skip records them SKIPPED, fire_once runs the newest one
// now and records the rest SKIPPED, fire_all runs them all now, up to
// MaxCatchup.
//
// Runs of one group due at the same instant are planned into trigger
// batches (Config.TriggerBatch, batches.go): one message for several runs.
package planner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/tuning"
	"github.com/jetjob/jetjob/shared/wire"
)

// Config tunes planning. Zero values mean the defaults.
type Config struct {
	// Window is how far ahead fires are planned (default 5 s). A job is
	// planned when its next fire comes within half the window (at least
	// two intervals), up to the whole window, so frequent jobs are planned
	// a few fires at a time.
	Window time.Duration
	// Interval is the pause between planning passes (default 1 s).
	Interval time.Duration
	// MisfireThreshold is how late a fire may be and still count as on
	// time (default 5 s).
	MisfireThreshold time.Duration
	// MaxCatchup caps the misfired fires handled per job and pass (default 100).
	MaxCatchup int
	// BatchSize caps the jobs read per transaction (default 5000); a shard
	// with more due jobs is planned in several transactions in one pass.
	BatchSize int
	// IdleTxTimeout ends a planning transaction left idle this long (its
	// process paused or stuck), releasing the shard (default 5 s).
	IdleTxTimeout time.Duration
	// TriggerBatch caps the runs that share one trigger message (default
	// 16, at most wire.MaxBatchRuns; 1: every run is published alone).
	// Every message costs NATS and both processes a store, a delivery, an
	// ack and a removal whatever it carries, so the runs of one group due
	// at the same instant are planned into batches (see batches.go).
	// Forced to 1 while tracing is on (Deps.Trace): a trace follows one
	// run from its publish span, in one message of its own.
	TriggerBatch int
	// MaxLag is how far the stages after planning (dispatch, the results
	// applier: Deps.Pressure) may fall behind before planning waits for
	// them (default 1 s); from a quarter of it on, planning looks less far
	// ahead. A worker group twice as far behind has its jobs left out.
	// See admit.go.
	MaxLag time.Duration
}

const (
	DefaultWindow           = 5 * time.Second
	DefaultInterval         = time.Second
	DefaultMisfireThreshold = 5 * time.Second
	DefaultMaxCatchup       = 100
	DefaultBatchSize        = 5000
	DefaultTriggerBatch     = 16
)

func (c Config) withDefaults() Config {
	c.Window = cmp.Or(c.Window, DefaultWindow)
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.MisfireThreshold = cmp.Or(c.MisfireThreshold, DefaultMisfireThreshold)
	c.MaxCatchup = cmp.Or(c.MaxCatchup, DefaultMaxCatchup)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.IdleTxTimeout = cmp.Or(c.IdleTxTimeout, 5*time.Second)
	c.TriggerBatch = cmp.Or(c.TriggerBatch, DefaultTriggerBatch)
	c.MaxLag = cmp.Or(c.MaxLag, DefaultMaxLag)
	return c
}

// Validate says which fields are wrong.
func (c Config) Validate() error {
	var batch error
	if c.TriggerBatch > wire.MaxBatchRuns {
		batch = fmt.Errorf("planner: TriggerBatch must be at most %d (what a worker accepts in one message), got %d",
			wire.MaxBatchRuns, c.TriggerBatch)
	}
	return errors.Join(c.validateTiming(),
		tuning.NotNegative("planner", "TriggerBatch", c.TriggerBatch, fmt.Sprint(DefaultTriggerBatch)),
		tuning.NotNegative("planner", "MaxLag", c.MaxLag, DefaultMaxLag.String()), batch)
}

// validateTiming says which of the planning pass's settings is wrong.
func (c Config) validateTiming() error {
	c = c.withDefaults()
	switch {
	case c.Window < 100*time.Millisecond:
		return fmt.Errorf("planning window %s: want at least 100ms", c.Window)
	case c.Interval < 10*time.Millisecond || c.Interval > c.Window:
		return fmt.Errorf("planning interval %s: want between 10ms and the window (%s)", c.Interval, c.Window)
	case c.MisfireThreshold < 0:
		return fmt.Errorf("misfire threshold %s: must not be negative", c.MisfireThreshold)
	case c.MaxCatchup < 1:
		return fmt.Errorf("max catch-up %d: want at least 1", c.MaxCatchup)
	case c.BatchSize < 1:
		return fmt.Errorf("planner batch size %d: want at least 1", c.BatchSize)
	case c.IdleTxTimeout < 0:
		return fmt.Errorf("planner idle transaction timeout %s: must not be negative", c.IdleTxTimeout)
	}
	return nil
}

// Deps are what a Planner works through and whom it hands its runs: given to
// New and fixed from then on, never set on a running component. Config holds
// only what an operator tunes.
type Deps struct {
	// Pool is the PostgreSQL pool runs are planned in.
	Pool *pgxpool.Pool
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Owner is this scheduler's id in scheduler_shards
	// (lease.Manager.ID): a shard is planned only while Owner holds it.
	Owner string
	// Leases reports the shards this scheduler holds right now
	// (lease.Manager.Held).
	Leases func() []lease.Lease
	// Out receives every planned run; it must not block for long.
	Out func([]runs.Planned)
	// Planned, when set, is called after each shard pass that succeeded
	// (the planning-lag metric).
	Planned func(shard int, at time.Time)
	// Trace records a span per batch that planned runs; nil: tracing off.
	Trace *spans.Tracer
	// Pressure reports how far the stages after planning are behind
	// (admit.go); nil: planning never waits for them.
	Pressure func(context.Context) Pressure
	// Held, when set, is called with how long planning waited for them
	// each time it resumes (a metric).
	Held func(time.Duration)
	// BatchTarget is the worker a trigger batch of a consistent_hash job's
	// runs is to go to (route.Picker.BatchTarget), "" for none; runs of
	// such jobs share a batch only with runs bound for the same worker
	// (batches.go). Nil: those jobs' runs are published alone.
	BatchTarget func(job int64, group, handler string) string
	// TestSignals report planning passes to tests; zero, as in
	// production, they do nothing.
	TestSignals TestSignals
}

// TestSignals are the planner's key moments, for tests (package
// internal/testsignal).
type TestSignals struct {
	// ShardPlanned fires after a shard pass wrote every fire due within
	// the window (PlanShard succeeded), its runs already handed on.
	ShardPlanned testsignal.Signal[Pass]
	// Held fires when planning starts to wait for the stages after it
	// (admit.go), with the pressure that made it wait.
	Held testsignal.Signal[Pressure]
	// Swept fires after a sweep of a shard (Sweep) read its orphans, its
	// runs already handed on.
	Swept testsignal.Signal[Swept]
}

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testsignal.TB) {
	ts.ShardPlanned.Init(tb)
	ts.Held.Init(tb)
	ts.Swept.Init(tb)
}

// Swept is one sweep of a shard, as TestSignals.Swept reports it: when it
// read, and the runs it handed to the wheel.
type Swept struct {
	Shard int
	At    time.Time
	Runs  []int64
}

// Pass is one successful planning pass over a shard, as
// TestSignals.ShardPlanned reports it.
type Pass struct {
	Shard int
	Epoch int64
	// Runs is how many runs the pass planned; At is the time it planned
	// for, and Ahead how far beyond it (its window: Config.Window, or less
	// under pressure, see admit.go).
	Runs  int
	At    time.Time
	Ahead time.Duration
	// Behind are the groups whose jobs the pass left out, their workers
	// behind (admit.go).
	Behind []string
}

// Planner plans the fires of the shards this scheduler holds.
type Planner struct {
	cfg    Config
	pool   *pgxpool.Pool
	log    *zap.Logger
	cache  *scheduleCache
	owner  string
	leases func() []lease.Lease
	out    func([]runs.Planned)
	now    func() time.Time
	// planned, trace and signals are Deps.Planned, Deps.Trace and
	// Deps.TestSignals.
	planned func(shard int, at time.Time)
	trace   *spans.Tracer
	signals TestSignals
	// target is Deps.BatchTarget.
	target func(job int64, group, handler string) string
	// pressure and held are Deps.Pressure and Deps.Held.
	pressure func(context.Context) Pressure
	held     func(time.Duration)
	// period is the time from the start of the last pass to the start of
	// the one under way (admit.go, least); Run's alone.
	period time.Duration
	// behind are the groups the last admission left out (admit.go); Run's
	// alone.
	behind []string
	// sweepSoon makes the next pass sweep (SweepSoon).
	sweepSoon atomic.Bool
}

// SweepSoon makes the next pass sweep every shard this planner holds,
// however recent the last sweep: a group's resume asks for it, so that the
// runs that waited for the resume (package runs, held.go), which only a
// sweep hands over, start within a pass rather than a sweep interval.
func (p *Planner) SweepSoon() { p.sweepSoon.Store(true) }

// ErrLeaseLost is returned when a shard's lease moved on: nothing was written.
var ErrLeaseLost = errors.New("lease lost")

// New validates cfg and returns a planner; Run drives it.
func New(cfg Config, deps Deps) (*Planner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := logging.Named(deps.Log, "planner")
	if deps.Trace != nil && cfg.TriggerBatch > 1 {
		// A trace follows one run from its publish span to the worker
		// through its trigger's header: with tracing on, every run is
		// published alone.
		log.Info("tracing is on: no trigger batches, every run is published alone", zap.Int("trigger_batch", cfg.TriggerBatch))
		cfg.TriggerBatch = 1
	}
	return &Planner{
		cfg: cfg, pool: deps.Pool, log: log, cache: newScheduleCache(),
		owner: deps.Owner, leases: deps.Leases, out: deps.Out, now: time.Now,
		planned: deps.Planned, trace: deps.Trace, signals: deps.TestSignals, target: deps.BatchTarget,
		pressure: deps.Pressure, held: deps.Held,
	}, nil
}

// Run plans every Interval until ctx ends, and sweeps for orphaned runs
// every SweepInterval. Before each pass it waits until the stages after
// planning have room, and plans each shard as far ahead as they allow
// (admit.go). A failing pass (PostgreSQL down) is logged and retried on
// the next tick; the loop itself never dies.
func (p *Planner) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	lastSweep := p.now()
	var ok bool
	var began time.Time
	for {
		if !p.await(ctx) {
			return nil
		}
		if now := p.now(); !began.IsZero() {
			p.period, began = now.Sub(began), now
		} else {
			began = now
		}
		sweep := p.sweepSoon.Swap(false) || p.now().Sub(lastSweep) >= SweepInterval
		for _, l := range p.leases() {
			if ctx.Err() != nil {
				return nil
			}
			a := p.admission(ctx)
			// A pass over many shards can outlast a lease period: plan each
			// shard under its lease as it is now, not as the pass began.
			if l, ok = p.current(l.Shard); !ok {
				continue
			}
			if _, err := p.planShard(ctx, l, a); err != nil && ctx.Err() == nil {
				if errors.Is(err, ErrLeaseLost) {
					p.log.Warn("shard lease lost; not planning it", logging.Shard(l.Shard))
				} else {
					errcount.Postgres(errcount.Plan)
					p.log.Warn("planning failed; retrying next pass", logging.Shard(l.Shard), zap.Error(err))
				}
				continue
			}
			if sweep {
				at := p.now()
				swept, err := p.Sweep(ctx, l)
				if err != nil && ctx.Err() == nil {
					errcount.Postgres(errcount.Plan)
					p.log.Warn("sweep failed; retrying next time", logging.Shard(l.Shard), zap.Error(err))
				}
				if len(swept) > 0 {
					p.log.Info("swept orphaned planned runs", logging.Shard(l.Shard), zap.Int("runs", len(swept)))
					p.out(swept)
				}
				if err == nil && p.signals.Swept.On() {
					ids := make([]int64, len(swept))
					for i := range swept {
						ids[i] = swept[i].RunID
					}
					p.signals.Swept.Signal(Swept{Shard: l.Shard, At: at, Runs: ids})
				}
			}
		}
		if sweep {
			lastSweep = p.now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// current returns this scheduler's lease on shard as it is now.
func (p *Planner) current(shard int) (lease.Lease, bool) {
	for _, l := range p.leases() {
		if l.Shard == shard {
			return l, true
		}
	}
	return lease.Lease{}, false
}

// PlanShard plans one shard until no job is due within the window and
// returns how many runs it wrote.
func (p *Planner) PlanShard(ctx context.Context, l lease.Lease) (int, error) {
	return p.planShard(ctx, l, admission{ahead: p.cfg.Window})
}

// planShard is PlanShard planning as admitted: as far ahead as a.ahead,
// leaving out the jobs of the groups a says are behind.
func (p *Planner) planShard(ctx context.Context, l lease.Lease, a admission) (int, error) {
	total := 0
	for {
		now := p.now()
		if !l.Valid(now) {
			return total, fmt.Errorf("plan shard %d: %w (local deadline passed)", l.Shard, ErrLeaseLost)
		}
		planned, more, err := p.planBatch(ctx, l, now, a)
		if err != nil {
			return total, fmt.Errorf("plan shard %d: %w", l.Shard, err)
		}
		total += len(planned)
		p.trace.Planned(ctx, l.Shard, now, planned)
		if len(planned) > 0 {
			p.out(planned)
		}
		if !more {
			if p.planned != nil {
				p.planned(l.Shard, now)
			}
			p.signals.ShardPlanned.Signal(Pass{Shard: l.Shard, Epoch: l.Epoch, Runs: total, At: now, Ahead: a.ahead, Behind: a.behind})
			return total, nil
		}
	}
}
