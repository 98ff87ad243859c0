package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/store"
	"github.com/jetjob/jetjob/shared/logging"
	"github.com/jetjob/jetjob/shared/policy"
)

// route decides where run runs[i] goes and returns what to publish for it:
// the run itself (its Target set, "" for the shared queue), or, for a
// sharding broadcast, one part per live worker. Nothing when a broadcast
// could not be expanded (the run is no longer SCHEDULED here, or its
// write failed: it stays SCHEDULED and recovery or the sweep fires it).
func (d *Dispatcher) route(ctx context.Context, runs []store.PlannedRun, i int) []store.PlannedRun {
	r := &runs[i]
	pick := d.cfg.Route
	switch {
	case pick == nil:
		r.Target = ""
	case r.ShardTotal > 0 && r.Target != "":
		// A recovered part of a broadcast: back to its worker, or to the
		// shared queue if that worker is gone.
		if !pick.Live(r.Group, r.Target) {
			r.Target = ""
		}
	case r.RouteStrategy == policy.RouteShardingBroadcast && r.ShardTotal == 0:
		return d.broadcast(ctx, r)
	default:
		r.Target = pick.Pick(ctx, r.JobID, r.Group, r.Handler, r.RouteStrategy)
	}
	return runs[i : i+1]
}

// expandSQL turns a planned run into part 0 of n and inserts parts 1..n-1
// as runs of their own (same job, fire, attempt and links), each naming its
// worker in worker_id. It is written once: part 0 moves only while
// shard_total is 0, so a recovery reads the parts and never expands again,
// and UNIQUE (job_id, scheduled_at, shard_index, attempt) holds the rest.
// Like every write for a shard it is fenced by the lease it was planned
// under ($5 = 0: a manual run, unfenced).
const expandSQL = `WITH base AS (
	UPDATE job_runs r SET shard_index = 0, shard_total = $3, worker_id = ($4::text[])[1]
	WHERE r.id = $2 AND r.scheduled_at = $6::timestamptz AND r.status = 'SCHEDULED' AND r.shard_total = 0
	  AND ($5::bigint = 0 OR EXISTS (SELECT 1 FROM scheduler_shards s
		WHERE s.shard = r.shard AND s.owner = $1 AND s.epoch = $5 AND s.expires_at > now()))
	RETURNING r.*
), parts AS (
	INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, attempt,
		retry_of, parent_run, params, shard_index, shard_total, worker_id)
	SELECT b.job_id, b.group_name, b.shard, b.trigger_type, 'SCHEDULED', b.scheduled_at, b.attempt,
		b.retry_of, b.parent_run, b.params, i, $3, ($4::text[])[i + 1]
	FROM base b, generate_series(1, $3 - 1) AS i
	ON CONFLICT DO NOTHING
	RETURNING id, shard_index
)
SELECT 0::bigint, 0 FROM base
UNION ALL SELECT id, shard_index FROM parts`

// broadcast expands a sharding-broadcast run into one run per live worker
// that can run its handler (index i of n, in worker id order) and returns
// them, each directed to its worker. With no live worker the run becomes
// part 0 of 1 and goes to the shared queue, where it waits for a worker.
func (d *Dispatcher) broadcast(ctx context.Context, r *store.PlannedRun) []store.PlannedRun {
	ids := d.cfg.Route.Candidates(r.Group, r.Handler)
	targets := ids
	if len(targets) == 0 {
		targets = []string{""}
	}
	n := len(targets)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rows, _ := d.pool.Query(wctx, expandSQL, d.cfg.Owner, r.RunID, n, targets, r.Epoch, r.ScheduledAt)
	type part struct {
		id    int64
		index int
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (part, error) {
		var p part
		return p, row.Scan(&p.id, &p.index)
	})
	if err != nil {
		d.log.Warn("expanding a sharding broadcast failed; the run stays SCHEDULED for recovery",
			logging.Run(r.RunID), logging.Job(r.JobID), zap.Error(fmt.Errorf("expand run %d: %w", r.RunID, err)))
		return nil
	}
	if len(got) == 0 {
		d.log.Debug("broadcast run no longer planned here; not publishing", logging.Run(r.RunID), logging.Job(r.JobID))
		return nil
	}
	out := make([]store.PlannedRun, 0, n)
	for _, p := range got {
		pr := *r
		if p.id != 0 {
			pr.RunID = p.id
		}
		pr.ShardIndex, pr.ShardTotal, pr.Target = p.index, n, targets[p.index]
		out = append(out, pr)
	}
	if len(out) != n {
		// Parts already there (ON CONFLICT) cannot be: part 0 moves once.
		d.log.Warn("sharding broadcast expanded to fewer parts than workers",
			logging.Run(r.RunID), zap.Int("parts", len(out)), zap.Int("workers", n))
	}
	d.log.Debug("sharding broadcast", logging.Run(r.RunID), logging.Job(r.JobID), zap.Strings("workers", ids))
	return out
}
