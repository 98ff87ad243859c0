package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// newerSQL answers a batch of queries in one statement. For each late
// trigger it names the newer missed fire of the same job that runs in its
// place (the decision itself is the worker's: policy.Decide, stage
// AtPickUp), or 0: this one runs. A missed fire is one scheduled at or
// before the worker's cutoff (policy.LateBefore of its now and the job's
// threshold; the boundary is included here, where policy.Late calls a fire
// at the cutoff on time). Scheduled or catch-up fires only: manual, retry
// and child runs supersede nothing.
//
// fire_once must run one fire per backlog, and keep running one while the
// backlog lasts. "Expire if any newer fire is missed" does the first and
// not the second: under a sustained backlog every trigger reaches its
// worker late with newer missed fires behind it, so each is expired in
// favour of one that will itself be expired, and nothing runs (the
// overload benchmark measured 0.8 % of fires succeeding). So the newer fire
// named is one that does run:
//
//   - a trigger whose own run was chosen (trigger type misfire: a catch-up)
//     runs;
//   - else the oldest newer missed fire that ran, is running, or was chosen
//     supersedes it;
//   - else an older catch-up published after this fire was due (by
//     dispatch or the planner, when the backlog was found) supersedes it:
//     that catch-up was the backlog's one run, and this fire, judged on
//     time when its own batch was formed, crossed its threshold on the way
//     to its worker (NATS just back, a loaded machine). Without this rule
//     a recovery ran two late fires, the catch-up and this one. Only a
//     catch-up due no longer before this fire than this fire is late
//     counts (the same outage, and a bounded probe);
//   - else the job's newest missed fire still waiting (TRIGGERED, or
//     SCHEDULED, which may be out already: the deferred TRIGGERED write,
//     in the package doc) is chosen now, its trigger type set to misfire,
//     and supersedes it.
//
// A backlog replayed after an outage therefore runs its newest fire once,
// and a backlog that persists runs each job about once per wait in the
// queue instead of never. Two schedulers answering at once may choose two
// fires: one more run, never a lost one. The job's (job_id, scheduled_at)
// index and the partitions by scheduled_at bound each probe to the runs
// between the two times.
const newerSQL = `WITH q AS (
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::timestamptz[])
		WITH ORDINALITY AS q(run_id, job_id, scheduled_at, cutoff, i)
), a AS (
	SELECT q.i,
		EXISTS (SELECT 1 FROM job_runs s WHERE s.id = q.run_id AND s.scheduled_at = q.scheduled_at
			AND s.trigger_type = 'misfire') AS chosen,
		(SELECT n.id FROM job_runs n
			WHERE n.job_id = q.job_id AND n.scheduled_at > q.scheduled_at AND n.scheduled_at <= q.cutoff
			  AND n.trigger_type IN ('schedule', 'misfire') AND n.status NOT IN ('SKIPPED', 'EXPIRED', 'DISCARDED')
			  AND (n.trigger_type = 'misfire' OR n.status NOT IN ('SCHEDULED', 'TRIGGERED'))
			ORDER BY n.scheduled_at, n.id LIMIT 1) AS runs,
		(SELECT o.id FROM job_runs o
			WHERE o.job_id = q.job_id AND o.scheduled_at < q.scheduled_at
			  AND o.scheduled_at >= q.scheduled_at - (now() - q.scheduled_at)
			  AND o.trigger_type = 'misfire' AND o.triggered_at > q.scheduled_at
			  AND o.status NOT IN ('SKIPPED', 'EXPIRED', 'DISCARDED')
			ORDER BY o.scheduled_at DESC, o.id DESC LIMIT 1) AS covered,
		w.id AS waiting, w.scheduled_at AS waiting_at
	FROM q
	LEFT JOIN LATERAL (
		SELECT n.id, n.scheduled_at FROM job_runs n
		WHERE n.job_id = q.job_id AND n.scheduled_at > q.scheduled_at AND n.scheduled_at <= q.cutoff
		  AND n.trigger_type = 'schedule' AND n.status IN ('SCHEDULED', 'TRIGGERED')
		ORDER BY n.scheduled_at DESC, n.id DESC LIMIT 1) w ON true
), choose AS (
	UPDATE job_runs r SET trigger_type = 'misfire'
	FROM (SELECT DISTINCT waiting, waiting_at FROM a WHERE NOT chosen AND runs IS NULL AND covered IS NULL AND waiting IS NOT NULL) c
	WHERE r.id = c.waiting AND r.scheduled_at = c.waiting_at
	  AND r.trigger_type = 'schedule' AND r.status IN ('SCHEDULED', 'TRIGGERED')
	RETURNING r.id
)
SELECT CASE WHEN a.chosen THEN 0 ELSE COALESCE(a.runs, a.covered, a.waiting, 0) END FROM a ORDER BY a.i`

// genericPlanSQL makes newerSQL run on its generic plan, built once per
// connection. Its three probes and its UPDATE each reach every partition of
// job_runs, and a custom plan, made anew at every call, took ≈ 4 ms to
// plan against 0.16 ms to run: under a lasting backlog, when workers ask
// about every trigger, planning was most of PostgreSQL's CPU (the overload
// benchmark, docs/performance.md). The generic plan prunes the partitions
// at run time, per probe, by the same (job_id, scheduled_at) bounds.
const genericPlanSQL = `SET LOCAL plan_cache_mode = force_generic_plan`

// ChooseSuperseders answers a supersede request (package supersede serves
// them) with newerSQL: per query, the newer missed fire that runs in the
// queried trigger's place, 0 for none. Where none runs yet it chooses one,
// the job's newest missed fire still waiting, and sets its trigger type to
// misfire, the one write it makes. tx is the caller's transaction of its
// own: ChooseSuperseders sets its plan mode for the statement
// (genericPlanSQL), which lasts until tx ends.
//
// No fence: any scheduler answers, for a worker, and none holds the run's
// shard for it. The write changes only the trigger type of a fire that is
// SCHEDULED or TRIGGERED with trigger type schedule, never a status, and no
// rule of the state machine reads the trigger type: the mark only tells
// later questions that this fire was chosen.
func ChooseSuperseders(ctx context.Context, tx pgx.Tx, queries []wire.SupersedeQuery) ([]int64, error) {
	ids, jobs := make([]int64, len(queries)), make([]int64, len(queries))
	scheduled, cutoffs := make([]time.Time, len(queries)), make([]time.Time, len(queries))
	for i, q := range queries {
		ids[i], jobs[i], scheduled[i], cutoffs[i] = q.RunID, q.JobID, q.ScheduledAt, q.Cutoff
	}
	if _, err := tx.Exec(ctx, genericPlanSQL); err != nil {
		return nil, fmt.Errorf("plan mode: %w", err)
	}
	rows, _ := tx.Query(ctx, newerSQL, ids, jobs, scheduled, cutoffs)
	by, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("choose superseders of %d triggers: %w", len(queries), err)
	}
	return by, nil
}
