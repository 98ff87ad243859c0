package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/paramtmpl"
	"github.com/jetjob/jetjob/shared/wire"
)

// plannedColumns are what a trigger needs of a planned run and its job. A
// manual run's own params override its job's.
const plannedColumns = plannedSelect + `
	FROM job_runs r JOIN jobs j ON j.id = r.job_id` + plannedGroupJoin

// plannedGroupJoin joins the group g of a run r: plannedSelect reads its
// flow columns (its cap and rate limit), and WaitingSQL its pause.
const plannedGroupJoin = `
	LEFT JOIN job_groups g ON g.name = r.group_name`

// plannedSelect is plannedColumns' list, of a run r, its job j and its
// group g (plannedGroupJoin).
const plannedSelect = `SELECT r.id, r.job_id, r.group_name, r.shard, j.handler, COALESCE(r.params, j.params),
		r.trigger_type, r.scheduled_at, r.attempt, r.shard_index, r.shard_total, COALESCE(r.run_timeout_ms, j.timeout_ms),
		j.misfire_policy, j.route_strategy, j.block_strategy, r.worker_id, COALESCE(j.misfire_threshold_ms, 0), j.max_concurrency,
		COALESCE(r.batch, 0), j.kind = 'workflow', r.message, COALESCE(r.workflow_run, 0),
		j.script_language, j.script_version, j.script_source,
		r.params IS NULL AND j.params_template, j.timezone, j.secret_names <> '{}', j.fixed_shards,
		CASE WHEN r.workflow_run IS NOT NULL THEN (SELECT w.scheduled_at FROM workflow_runs w
			WHERE w.id = r.workflow_run AND w.group_name = r.group_name) END,
		r.map_item, CASE WHEN r.map_item IS NOT NULL THEN r.shard_fire ELSE r.map_reduce END,
		` + FlowColumns

// selectShard reads a shard's planned, not yet published runs: every one
// the planner wrote, and those written outside planning due by $2, but for
// those waiting for their group's resume (held.go).
const selectShard = plannedColumns + `
	WHERE r.shard = $1 AND r.status = 'SCHEDULED'
	  AND (r.trigger_type IN ('schedule', 'misfire') OR r.scheduled_at <= $2)
	  AND NOT ` + WaitingSQL + `
	ORDER BY r.scheduled_at`

// selectOrphans reads the runs a sweep hands to the wheel: runs written by
// something other than the planner (manual triggers whose API process died
// before publishing) due within the window, and any planned run long past
// its time (its publish was lost with a process). Each half uses its own
// partial index. Runs waiting for their group's resume (held.go: retries,
// child and node runs, all in the first half) are left out: the sweep after
// the resume is what hands them over.
const selectOrphans = plannedColumns + `
	WHERE r.shard = $1 AND r.status = 'SCHEDULED'
	  AND r.trigger_type NOT IN ('schedule', 'misfire') AND r.scheduled_at <= $2
	  AND NOT ` + WaitingSQL + `
	UNION ALL ` + plannedColumns + `
	WHERE r.shard = $1 AND r.status = 'SCHEDULED'
	  AND r.trigger_type IN ('schedule', 'misfire') AND r.scheduled_at < $3`

// selectByID reads given runs that are still SCHEDULED.
const selectByID = plannedColumns + `
	WHERE r.id = ANY($1) AND r.status = 'SCHEDULED'`

// LoadShard returns the SCHEDULED runs of shard, oldest first: what a
// shard's new owner recovers, each with its batch (so a batch's runs still
// SCHEDULED come back together and are published again as that batch):
// every planned one, and those created outside planning due by dueBy (a
// sweep takes later ones when they come near). Some may have been
// published already (see the package doc); the caller sets Epoch and
// Recovered.
func LoadShard(ctx context.Context, db DB, shard int, dueBy time.Time) ([]Planned, error) {
	return load(ctx, db, selectShard, shard, dueBy)
}

// LoadOrphans returns the SCHEDULED runs of shard that no wheel may hold:
// those created outside planning due by dueBy, and planned ones scheduled
// before plannedBefore (see selectOrphans).
func LoadOrphans(ctx context.Context, db DB, shard int, dueBy, plannedBefore time.Time) ([]Planned, error) {
	return load(ctx, db, selectOrphans, shard, dueBy, plannedBefore)
}

// LoadScheduled returns those of the given runs that are still SCHEDULED.
func LoadScheduled(ctx context.Context, db DB, ids []int64) ([]Planned, error) {
	return load(ctx, db, selectByID, ids)
}

func load(ctx context.Context, db DB, query string, args ...any) ([]Planned, error) {
	rows, _ := db.Query(ctx, query, args...)
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Planned, error) { return scanPlanned(r) })
	if err != nil {
		return nil, fmt.Errorf("read planned runs: %w", err)
	}
	return runs, nil
}

// scanPlanned scans a row of plannedSelect's columns, followed by extra.
//
// A run written without params of its own for a job whose params are a
// template (a child run a parent's success wrote in SQL) gets them
// rendered here, for its scheduled time: every other run of such a job
// has them rendered and stored when it is written (package paramtmpl).
func scanPlanned(row pgx.Row, extra ...any) (Planned, error) {
	var pr Planned
	var typ, zone string
	var timeoutMS, thresholdMS int64
	var sc ScriptColumns
	var render bool
	var workflowAt *time.Time
	var mapFire *int64
	err := row.Scan(append([]any{&pr.RunID, &pr.JobID, &pr.Group, &pr.Shard, &pr.Handler, &pr.Params, &typ, &pr.ScheduledAt,
		&pr.Attempt, &pr.ShardIndex, &pr.ShardTotal, &timeoutMS, &pr.MisfirePolicy,
		&pr.RouteStrategy, &pr.BlockStrategy, &pr.Target, &thresholdMS, &pr.MaxConcurrency, &pr.Batch, &pr.Workflow, &pr.Message, &pr.WorkflowRun,
		&sc.Language, &sc.Version, &sc.Source, &render, &zone, &pr.Secrets, &pr.Shards, &workflowAt,
		&pr.MapItem, &mapFire}, append(pr.Flow.ScanTargets(), extra...)...)...)
	if workflowAt != nil {
		pr.WorkflowAt = *workflowAt
	}
	pr.Script = sc.Script()
	if mapFire != nil {
		pr.MapFire = *mapFire
	}
	if err == nil && render {
		// A template that fails leaves the params as written: it passed
		// when the job was saved, so only a lost zone gets here.
		if out, rerr := paramtmpl.Render(pr.Params, zone, paramtmpl.Data{ScheduledAt: pr.ScheduledAt, JobID: pr.JobID}); rerr == nil {
			pr.Params = out
		}
	}
	pr.MisfireThreshold = time.Duration(thresholdMS) * time.Millisecond
	pr.TriggerType = wire.TriggerType(typ)
	pr.Timeout = time.Duration(timeoutMS) * time.Millisecond
	return pr, err
}

// StillScheduled returns those of ids whose runs are still SCHEDULED: a
// wheel checks what it holds against the table with it.
func StillScheduled(ctx context.Context, db DB, ids []int64) ([]int64, error) {
	rows, _ := db.Query(ctx, `SELECT id FROM job_runs WHERE id = ANY($1) AND status = 'SCHEDULED'`, ids)
	still, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read which of %d runs are still scheduled: %w", len(ids), err)
	}
	return still, nil
}
