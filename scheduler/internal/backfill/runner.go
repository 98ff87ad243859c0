package backfill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/tuning"
)

// Config bounds how fast backfills run. Zero values mean the defaults.
type Config struct {
	// Interval is the pause between steps (default 1 s).
	Interval time.Duration
	// PerSecond caps the runs one operation writes per second (default 10).
	PerSecond int
	// InFlight caps an operation's runs not yet ended (default 10): a
	// backfill of a slow job waits for its runs instead of queueing a
	// year of triggers in the broker.
	InFlight int
	// Batch caps the operations advanced per step (default 50).
	Batch int
}

// Validate says which field is wrong: each value must be positive, or 0
// for its default.
func (c Config) Validate() error {
	return errors.Join(
		tuning.NotNegative("backfill", "Interval", c.Interval, "1s"),
		tuning.NotNegative("backfill", "PerSecond", c.PerSecond, "10"),
		tuning.NotNegative("backfill", "InFlight", c.InFlight, "10"),
		tuning.NotNegative("backfill", "Batch", c.Batch, "50"),
	)
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.PerSecond <= 0 {
		c.PerSecond = 10
	}
	if c.InFlight <= 0 {
		c.InFlight = 10
	}
	if c.Batch <= 0 {
		c.Batch = 50
	}
	return c
}

// Runner advances running backfills. Every scheduler runs one; each step
// claims the operations it advances, so they never write the same fire
// twice (and the runs' unique key would hold if they did).
type Runner struct {
	cfg   Config
	store *store.Store
	fire  func([]runs.Planned)
	log   *zap.Logger
}

// Deps are what a Runner writes through and whom it hands its runs: given to
// New and fixed from then on, never set on a running component. Config holds
// only what an operator tunes.
type Deps struct {
	// Store claims and advances the operations.
	Store *store.Store
	// Fire receives the runs each step wrote (the scheduler's wheel).
	Fire func([]runs.Planned)
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
}

// New validates cfg and returns a Runner; Run drives it.
func New(cfg Config, deps Deps) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg.withDefaults(), store: deps.Store, fire: deps.Fire, log: logging.Named(deps.Log, "backfill")}, nil
}

// Run steps until ctx ends. A failed step (PostgreSQL away) is logged
// and retried at the next tick.
func (r *Runner) Run(ctx context.Context) error {
	return supervise.Every(ctx, r.cfg.Interval, r.tick)
}

// tick is one step of every operation, its fires handed to the wheel.
func (r *Runner) tick(ctx context.Context) {
	runs, err := r.store.StepBackfills(ctx, r.cfg.Batch, r.step)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("backfill step failed; retrying", zap.Error(err))
		}
		return
	}
	if len(runs) > 0 {
		r.fire(runs)
	}
}

// step picks an operation's next fires: no more than the rate allows per
// interval, nor than keeps InFlight runs unfinished.
func (r *Runner) step(b store.Backfill, j store.Job) (nominal, at []time.Time, exhausted bool, err error) {
	n := min(max(1, int(float64(r.cfg.PerSecond)*r.cfg.Interval.Seconds())), r.cfg.InFlight-b.InFlight)
	if n <= 0 {
		return nil, nil, false, nil
	}
	tp, err := j.Timing()
	if err != nil {
		return nil, nil, false, fmt.Errorf("job %d schedule: %w", j.ID, err)
	}
	var cursor time.Time
	if b.Cursor != nil {
		cursor = *b.Cursor
	}
	nominal, exhausted = Fires(tp, b.From, b.To, cursor, n)
	at = make([]time.Time, len(nominal))
	for i, t := range nominal {
		at[i] = tp.At(t)
	}
	return nominal, at, exhausted, nil
}
