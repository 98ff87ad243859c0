package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cluster view (GET /cluster): the live scheduler instances and every
// shard's lease, as the lease manager (package lease) keeps them, with how
// far each shard's planning is behind.

// SchedulerRow is a live scheduler instance (its heartbeat not expired).
type SchedulerRow struct {
	ID                     string
	Host                   string
	StartedAt, HeartbeatAt time.Time
	ExpiresAt              time.Time
}

// ShardRow is one shard's lease and planning state.
type ShardRow struct {
	Shard int
	// Owner is "" when no lease on the shard is live.
	Owner string
	Epoch int64
	// ExpiresAt is zero for a shard never held or released.
	ExpiresAt time.Time
	// Jobs counts the shard's enabled jobs.
	Jobs int64
	// PlanningLag is how far the shard's oldest next_fire_at of an enabled
	// job lies in the past, 0 when none does.
	//
	// jobs.next_fire_at is the first fire not yet planned as a run, and the
	// shard's owner plans every job whose next_fire_at comes within its
	// low-water mark ahead of now (planner.planBatch), moving next_fire_at
	// past its planning window. On a planned shard every enabled job's
	// next_fire_at therefore lies in the future (lag 0); one in the past is
	// a due fire that no run exists for yet: nobody holds the shard, or its
	// owner's planning is stuck or behind (after an outage a shard catches
	// up through the misfire policy and its lag returns to 0).
	PlanningLag time.Duration
}

// Cluster reads the live schedulers and the state of every shard, by
// number. Expiry is judged on the database clock, as the lease manager
// judges it.
func (s *Store) Cluster(ctx context.Context) ([]SchedulerRow, []ShardRow, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, host, started_at, heartbeat_at, expires_at
		FROM schedulers WHERE expires_at > now() ORDER BY id`)
	scheds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SchedulerRow, error) {
		var sr SchedulerRow
		err := r.Scan(&sr.ID, &sr.Host, &sr.StartedAt, &sr.HeartbeatAt, &sr.ExpiresAt)
		return sr, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: schedulers: %w", err)
	}
	// The oldest next fire of each shard is one probe of jobs_due (the
	// planner's own index); the job counts one pass over jobs.
	rows, _ = s.pool.Query(ctx, `SELECT s.shard, CASE WHEN s.expires_at > now() THEN s.owner ELSE '' END,
			s.epoch, CASE WHEN isfinite(s.expires_at) THEN s.expires_at END, coalesce(c.jobs, 0),
			coalesce(greatest(0, extract(epoch FROM now() - (SELECT min(j.next_fire_at) FROM jobs j
				WHERE j.shard = s.shard AND j.enabled AND j.next_fire_at IS NOT NULL)))::float8, 0)
		FROM scheduler_shards s
		LEFT JOIN (SELECT shard, count(*) AS jobs FROM jobs WHERE enabled GROUP BY shard) c ON c.shard = s.shard
		ORDER BY s.shard`)
	shards, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ShardRow, error) {
		var sh ShardRow
		var owner *string
		var exp *time.Time
		var lag float64
		err := r.Scan(&sh.Shard, &owner, &sh.Epoch, &exp, &sh.Jobs, &lag)
		if owner != nil {
			sh.Owner = *owner
		}
		if exp != nil {
			sh.ExpiresAt = *exp
		}
		sh.PlanningLag = time.Duration(lag * float64(time.Second))
		return sh, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: shards: %w", err)
	}
	return scheds, shards, nil
}
