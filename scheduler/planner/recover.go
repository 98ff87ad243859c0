package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/lease"
	"github.com/jetjob/jetjob/scheduler/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// plannedColumns are what a trigger needs of a planned run and its job. A
// manual run's own params override its job's.
const plannedColumns = `SELECT r.id, r.job_id, r.group_name, r.shard, j.handler, COALESCE(r.params, j.params),
		r.trigger_type, r.scheduled_at, r.attempt, r.shard_index, r.shard_total, j.timeout_ms,
		j.misfire_policy, j.route_strategy, j.block_strategy, r.worker_id, COALESCE(j.misfire_threshold_ms, 0), j.max_concurrency
	FROM job_runs r JOIN jobs j ON j.id = r.job_id`

// selectPlanned reads all of a shard's planned, not yet published runs.
const selectPlanned = plannedColumns + `
	WHERE r.shard = $1 AND r.status = 'SCHEDULED'
	ORDER BY r.scheduled_at`

// selectOrphans reads the runs a sweep hands to the wheel: runs written by
// something other than the planner (manual triggers whose API process died
// before publishing) due within the window, and any planned run long past
// its time (its publish was lost with a process). Each half uses its own
// partial index.
const selectOrphans = plannedColumns + `
	WHERE r.shard = $1 AND r.status = 'SCHEDULED'
	  AND r.trigger_type NOT IN ('schedule', 'misfire') AND r.scheduled_at <= $2
	UNION ALL ` + plannedColumns + `
	WHERE r.shard = $1 AND r.status = 'SCHEDULED'
	  AND r.trigger_type IN ('schedule', 'misfire') AND r.scheduled_at < $3`

// SweepInterval is how often the owner of a shard sweeps it for orphans,
// and OrphanAge how old a planned run must be to count as one.
const (
	SweepInterval = 10 * time.Second
	OrphanAge     = 30 * time.Second
)

// Recover returns a shard's planned runs that were never published: those
// left by a scheduler that stopped or died, or whose publish was cut short.
// Its new owner hands them to the wheel like freshly planned runs. A run
// that was in fact published before the crash carries the same
// Nats-Msg-Id and is dropped by the stream's duplicate window; one that
// reaches a worker later than its misfire threshold follows the job's
// misfire policy there. Runs already TRIGGERED are never read again.
func (p *Planner) Recover(ctx context.Context, l lease.Lease) ([]store.PlannedRun, error) {
	return p.recover(ctx, l, selectPlanned, l.Shard)
}

// selectByID reads given runs that are still SCHEDULED.
const selectByID = plannedColumns + `
	WHERE r.id = ANY($1) AND r.status = 'SCHEDULED'`

// Load returns the given runs that are still SCHEDULED, with what their
// triggers need: for runs created outside planning (retries, child runs),
// which the scheduler that created them fires itself. They carry no lease
// epoch, like manual runs: their Msg-Id de-duplicates a later recovery by
// the shard's owner.
func (p *Planner) Load(ctx context.Context, ids []int64) ([]store.PlannedRun, error) {
	runs, err := p.recover(ctx, lease.Lease{Shard: -1}, selectByID, ids)
	for i := range runs {
		runs[i].Recovered = false
	}
	return runs, err
}

// Sweep returns a shard's orphaned runs (see selectOrphans).
func (p *Planner) Sweep(ctx context.Context, l lease.Lease) ([]store.PlannedRun, error) {
	now := p.now()
	return p.recover(ctx, l, selectOrphans, l.Shard, now.Add(p.cfg.Window), now.Add(-OrphanAge))
}

func (p *Planner) recover(ctx context.Context, l lease.Lease, query string, args ...any) ([]store.PlannedRun, error) {
	rows, _ := p.pool.Query(ctx, query, args...)
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.PlannedRun, error) {
		var pr store.PlannedRun
		var typ string
		var timeoutMS, thresholdMS int64
		err := r.Scan(&pr.RunID, &pr.JobID, &pr.Group, &pr.Shard, &pr.Handler, &pr.Params, &typ, &pr.ScheduledAt,
			&pr.Attempt, &pr.ShardIndex, &pr.ShardTotal, &timeoutMS, &pr.MisfirePolicy,
			&pr.RouteStrategy, &pr.BlockStrategy, &pr.Target, &thresholdMS, &pr.MaxConcurrency)
		pr.MisfireThreshold = time.Duration(thresholdMS) * time.Millisecond
		pr.Epoch, pr.Recovered = l.Epoch, true
		pr.TriggerType = wire.TriggerType(typ)
		pr.Timeout = time.Duration(timeoutMS) * time.Millisecond
		return pr, err
	})
	if err != nil {
		return nil, fmt.Errorf("read planned runs: %w", err)
	}
	return runs, nil
}
