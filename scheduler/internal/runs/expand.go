package runs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// expandSQL turns a planned run into part 0 of n and inserts parts 1..n-1
// as runs of their own (same job, fire, attempt and links), each naming its
// worker in worker_id. The parts belong to part 0's chain (chain_root): one
// fire, one cap on the runs its parts' children may cause. It is written once: part 0 moves only while
// shard_total is 0, so a recovery reads the parts and never expands again,
// and UNIQUE (job_id, scheduled_at, shard_index, attempt) holds the rest.
// Like every write for a shard it is fenced by the lease the run was
// planned under ($5 = 0: a manual run, unfenced). A fixed shard count ($7)
// marks every part with its fire (shard_fire, part 0's id), which the
// results path reads to trigger the children once, after the last part,
// and gives every part the node of a workflow run part 0 is a run of (and
// its per-run timeout and retries), which ends when all parts have.
var expandSQL = `WITH base AS (
	UPDATE job_runs r SET shard_index = 0, shard_total = $3, worker_id = ($4::text[])[1],
		shard_fire = CASE WHEN $7::bool THEN r.id END
	WHERE r.id = $2 AND r.scheduled_at = $6::timestamptz AND r.status = 'SCHEDULED' AND r.shard_total = 0
	  AND ` + fenced("r.shard", "$1", "$5::bigint") + `
	RETURNING r.*
), parts AS (
	INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, attempt,
		retry_of, parent_run, params, shard_index, shard_total, worker_id, chain_root, priority, shard_fire,
		workflow_run, node, node_attempt, item, run_timeout_ms, run_max_retries)
	SELECT b.job_id, b.group_name, b.shard, b.trigger_type, 'SCHEDULED', b.scheduled_at, b.attempt,
		b.retry_of, b.parent_run, b.params, i, $3, ($4::text[])[i + 1], COALESCE(b.chain_root, b.id), b.priority,
		b.shard_fire, CASE WHEN $7 THEN b.workflow_run END, CASE WHEN $7 THEN b.node END,
		CASE WHEN $7 THEN b.node_attempt END, CASE WHEN $7 THEN b.item END,
		CASE WHEN $7 THEN b.run_timeout_ms END, CASE WHEN $7 THEN b.run_max_retries END
	FROM base b, generate_series(1, $3 - 1) AS i
	ON CONFLICT DO NOTHING
	RETURNING id, shard_index
)
SELECT id, 0 FROM base
UNION ALL SELECT id, shard_index FROM parts`

// Part is one run of an expanded sharding broadcast: part Index of n.
type Part struct {
	RunID int64 // part 0 is the expanded run itself
	Index int
}

// Expand turns the sharding-broadcast run r into one part per target
// (worker ids in order; "" sends a part to the group's shared queue) and
// returns the parts written. It returns none when the run is
// no longer SCHEDULED and unexpanded, or when owner no longer holds r's
// shard at r.Epoch: the run was expanded (or ended) already, or belongs to
// another scheduler now, and there is nothing to publish here.
func Expand(ctx context.Context, db DB, owner string, r *Planned, targets []string) ([]Part, error) {
	return expand(ctx, db, owner, r, targets, false)
}

// ExpandFire turns run r of a job with a fixed shard count of n into n
// parts, all for the group's shared queue, as Expand does, and marks them
// as one fire's (job_runs.shard_fire): its children fire once, when every
// part has succeeded (ApplyEvents).
func ExpandFire(ctx context.Context, db DB, owner string, r *Planned, n int) ([]Part, error) {
	return expand(ctx, db, owner, r, make([]string, n), true)
}

func expand(ctx context.Context, db DB, owner string, r *Planned, targets []string, fixed bool) ([]Part, error) {
	rows, _ := db.Query(ctx, expandSQL, owner, r.RunID, len(targets), targets, r.Epoch, r.ScheduledAt, fixed)
	parts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Part, error) {
		var p Part
		return p, row.Scan(&p.RunID, &p.Index)
	})
	if err != nil {
		return nil, fmt.Errorf("expand run %d into %d parts: %w", r.RunID, len(targets), err)
	}
	return parts, nil
}
