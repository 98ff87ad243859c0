package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// selectPlanned reads a shard's planned, not yet published runs with what
// their triggers need. A manual run's own params override its job's.
const selectPlanned = `SELECT r.id, r.job_id, r.group_name, j.handler, COALESCE(r.params, j.params),
		r.trigger_type, r.scheduled_at, r.attempt, r.shard_index, r.shard_total, j.timeout_ms,
		j.misfire_policy, j.route_strategy, j.block_strategy
	FROM job_runs r JOIN jobs j ON j.id = r.job_id
	WHERE r.shard = $1 AND r.status = 'SCHEDULED'
	ORDER BY r.scheduled_at`

// Recover returns a shard's planned runs that were never published: those
// left by a scheduler that stopped or died, or whose publish was cut short.
// Its owner hands them to the wheel like freshly planned runs. A run that
// was in fact published before the crash carries the same Nats-Msg-Id and
// is dropped by the stream's duplicate window.
func (p *Planner) Recover(ctx context.Context, shard int) ([]store.PlannedRun, error) {
	rows, _ := p.pool.Query(ctx, selectPlanned, shard)
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.PlannedRun, error) {
		var pr store.PlannedRun
		var typ string
		var timeoutMS int64
		err := r.Scan(&pr.RunID, &pr.JobID, &pr.Group, &pr.Handler, &pr.Params, &typ, &pr.ScheduledAt,
			&pr.Attempt, &pr.ShardIndex, &pr.ShardTotal, &timeoutMS, &pr.MisfirePolicy,
			&pr.RouteStrategy, &pr.BlockStrategy)
		pr.Shard = shard
		pr.TriggerType = wire.TriggerType(typ)
		pr.Timeout = time.Duration(timeoutMS) * time.Millisecond
		return pr, err
	})
	if err != nil {
		return nil, fmt.Errorf("recover shard %d: %w", shard, err)
	}
	return runs, nil
}
