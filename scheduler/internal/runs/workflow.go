package runs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// The writes of workflow runs (docs/workflows.md, package wfengine). A
// workflow's fire is a run of its jobs row (kind workflow), never
// published: MarkWorkflowRun moves it out of SCHEDULED when the run starts
// (fenced like every write for a planned run), MoveWorkflowRun as it goes
// on and ends. Node runs are ordinary runs, created by InsertNodeRuns in
// the transaction that decided they start.

// NodeEnd is a node run whose status became final: terminal, and no retry
// of its job follows. ApplyEvents reports them; the workflow engine
// advances their workflow runs in the same transaction.
type NodeEnd struct {
	RunID       int64
	ScheduledAt time.Time
	Status      wire.Status
	WorkflowRun int64
	Node        string
	NodeAttempt int
	Item        int
	// Output is the JSON the run's handler set (nil: none).
	Output []byte
}

// markWorkflowRunSQL moves a workflow job's run out of SCHEDULED, fenced
// like dispatch's marks: only the transaction that moves it starts its
// workflow run, so a recovered or re-fired copy of the run starts nothing.
var markWorkflowRunSQL = `UPDATE job_runs r SET status = $4, triggered_at = now(),
		started_at = CASE WHEN $4 = 'RUNNING' THEN now() END,
		finished_at = CASE WHEN jetjob_status_rank($4) = 3 THEN now() END,
		recorded_at = CASE WHEN jetjob_status_rank($4) = 3 THEN now() END,
		message = $5
	WHERE r.id = $1 AND r.scheduled_at = $2 AND r.status = 'SCHEDULED' AND ` + fenced("r.shard", "$3", "$6::bigint")

// MarkWorkflowRun moves run p (a workflow job's, still SCHEDULED) to
// status for owner, the scheduler holding p's shard at p.Epoch (any, for
// epoch 0), and reports whether it did: false when the run was started
// already or the lease moved on.
func MarkWorkflowRun(ctx context.Context, tx pgx.Tx, owner string, p *Planned, status wire.Status, message string) (bool, error) {
	tag, err := tx.Exec(ctx, markWorkflowRunSQL, p.RunID, p.ScheduledAt, owner, string(status),
		wire.TruncateMessage(message), p.Epoch)
	if err != nil {
		return false, fmt.Errorf("start workflow run %d: %w", p.RunID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// MoveWorkflowRun moves a workflow job's run up to status (RUNNING when a
// queued run starts, a terminal status when it ends); a run already at or
// past it is left alone.
func MoveWorkflowRun(ctx context.Context, tx pgx.Tx, id int64, scheduledAt time.Time, status wire.Status, message string) error {
	_, err := tx.Exec(ctx, `UPDATE job_runs SET status = $3,
			started_at = COALESCE(started_at, CASE WHEN $3 = 'RUNNING' THEN now() END),
			finished_at = CASE WHEN jetjob_status_rank($3) = 3 THEN now() ELSE finished_at END,
			recorded_at = CASE WHEN jetjob_status_rank($3) = 3 THEN now() ELSE recorded_at END,
			message = CASE WHEN $4 <> '' THEN $4 ELSE message END
		WHERE id = $1 AND scheduled_at = $2 AND jetjob_status_rank($3) > jetjob_status_rank(status)`,
		id, scheduledAt, string(status), wire.TruncateMessage(message))
	if err != nil {
		return fmt.Errorf("move workflow run %d to %s: %w", id, status, err)
	}
	return nil
}

// NodeRun is a node run to create: (WorkflowRun, Node, Attempt, Item) is
// its key, JobID the job it runs, Params its rendered params (nil: the
// job's own); TimeoutMS and MaxRetries override the job's (nil: the
// job's), for the run and its retries.
type NodeRun struct {
	WorkflowRun int64
	Node        string
	Attempt     int
	Item        int
	JobID       int64
	Params      *string
	TimeoutMS   *int64
	MaxRetries  *int
}

// insertNodeRunsSQL creates node runs, each at most once: its key goes
// into workflow_node_runs first (ON CONFLICT DO NOTHING), and only a key
// written here gets its run. A node run's chain root is its workflow run,
// so child jobs of its job count against the same cap.
//
// A node run is due now: scheduled_at is the statement's clock plus the
// row's ordinal in microseconds, so that runs of one job started together
// (for_each items, two nodes running the same job) keep distinct keys in
// job_runs' (job, scheduled_at, shard index, attempt).
const insertNodeRunsSQL = `WITH u AS (
		SELECT u.*, nextval('job_runs_id_seq') AS id, clock_timestamp() + u.ord * interval '1 microsecond' AS at
		FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[], $5::bigint[], $6::text[], $7::bigint[], $8::int[])
			WITH ORDINALITY AS u(wr, node, attempt, item, job_id, params, timeout_ms, max_retries, ord)),
	k AS (INSERT INTO workflow_node_runs (workflow_run, node, node_attempt, item, run_id, scheduled_at)
		SELECT u.wr, u.node, u.attempt, u.item, u.id, u.at FROM u JOIN jobs j ON j.id = u.job_id
		ON CONFLICT DO NOTHING
		RETURNING run_id)
	INSERT INTO job_runs (id, job_id, group_name, shard, trigger_type, status, scheduled_at, params,
		workflow_run, node, node_attempt, item, chain_root, run_timeout_ms, run_max_retries)
	OVERRIDING SYSTEM VALUE
	SELECT u.id, j.id, j.group_name, j.shard, 'workflow', 'SCHEDULED', u.at, u.params,
		u.wr, u.node, u.attempt, u.item, u.wr, u.timeout_ms, u.max_retries
	FROM u JOIN k ON k.run_id = u.id JOIN jobs j ON j.id = u.job_id
	RETURNING id, scheduled_at, node, item`

// CreatedNodeRun is a node run InsertNodeRuns created.
type CreatedNodeRun struct {
	RunID       int64
	ScheduledAt time.Time
	Node        string
	Item        int
}

// InsertNodeRuns creates the node runs nrs in tx, SCHEDULED and due now,
// and returns those it created; a node run whose key exists already, or
// whose job is gone, is left out.
func InsertNodeRuns(ctx context.Context, tx pgx.Tx, nrs []NodeRun) ([]CreatedNodeRun, error) {
	if len(nrs) == 0 {
		return nil, nil
	}
	wrs, jobs := make([]int64, len(nrs)), make([]int64, len(nrs))
	nodes, params := make([]string, len(nrs)), make([]*string, len(nrs))
	attempts, items := make([]int32, len(nrs)), make([]int32, len(nrs))
	timeouts, retries := make([]*int64, len(nrs)), make([]*int32, len(nrs))
	for i, n := range nrs {
		wrs[i], nodes[i], attempts[i], items[i], jobs[i], params[i] = n.WorkflowRun, n.Node, int32(n.Attempt), int32(n.Item), n.JobID, n.Params
		timeouts[i] = n.TimeoutMS
		if n.MaxRetries != nil {
			r := int32(*n.MaxRetries)
			retries[i] = &r
		}
	}
	rows, _ := tx.Query(ctx, insertNodeRunsSQL, wrs, nodes, attempts, items, jobs, params, timeouts, retries)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CreatedNodeRun, error) {
		var c CreatedNodeRun
		return c, r.Scan(&c.RunID, &c.ScheduledAt, &c.Node, &c.Item)
	})
	if err != nil {
		return nil, fmt.Errorf("create %d node runs: %w", len(nrs), err)
	}
	return out, nil
}

// nodeKeysSQL reads the node keys and outputs of ended node runs.
const nodeKeysSQL = `SELECT r.id, r.node, r.node_attempt, r.item, r.output
	FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, scheduled_at)
	JOIN job_runs r ON r.id = u.id AND r.scheduled_at = u.scheduled_at`

// fillNodeKeys completes ends with their node keys and outputs.
func fillNodeKeys(ctx context.Context, tx pgx.Tx, ends []NodeEnd) error {
	ids, ats := make([]int64, len(ends)), make([]time.Time, len(ends))
	at := make(map[int64]int, len(ends))
	for i, e := range ends {
		ids[i], ats[i], at[e.RunID] = e.RunID, e.ScheduledAt, i
	}
	var (
		id            int64
		node          string
		attempt, item int
		output        *string
	)
	rows, _ := tx.Query(ctx, nodeKeysSQL, ids, ats)
	_, err := pgx.ForEachRow(rows, []any{&id, &node, &attempt, &item, &output}, func() error {
		e := &ends[at[id]]
		e.Node, e.NodeAttempt, e.Item = node, attempt, item
		if output != nil {
			e.Output = []byte(*output)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the node keys of %d runs: %w", len(ends), err)
	}
	return nil
}

// CancelNodeRuns ends CANCELLED, with message, those of the given runs
// that are still SCHEDULED, and returns the node runs among them as ended:
// their workflow runs record them at once, in the caller's transaction
// (the caller also sends their kills: one may be out already, see the
// deferred TRIGGERED write in the package doc). Like Cancel, it moves a
// run only from SCHEDULED to a terminal status, and needs no fence.
func CancelNodeRuns(ctx context.Context, tx pgx.Tx, ids []int64, scheduledAt []time.Time, message string) ([]NodeEnd, error) {
	rows, _ := tx.Query(ctx, `UPDATE job_runs r SET status = 'CANCELLED', finished_at = now(), recorded_at = now(), message = $3
		FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, scheduled_at)
		WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND r.status = 'SCHEDULED'
		RETURNING r.id, r.scheduled_at, COALESCE(r.workflow_run, 0), COALESCE(r.node, ''), COALESCE(r.node_attempt, 0), COALESCE(r.item, 0)`,
		ids, scheduledAt, wire.TruncateMessage(message))
	ends, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (NodeEnd, error) {
		e := NodeEnd{Status: wire.StatusCancelled}
		return e, r.Scan(&e.RunID, &e.ScheduledAt, &e.WorkflowRun, &e.Node, &e.NodeAttempt, &e.Item)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel %d runs: %w", len(ids), err)
	}
	return slices.DeleteFunc(ends, func(e NodeEnd) bool { return e.WorkflowRun == 0 }), nil
}

// NodeOutputs reads the outputs of the given runs (nil for a run that set
// none), by run id.
func NodeOutputs(ctx context.Context, db DB, ids []int64, scheduledAt []time.Time) (map[int64][]byte, error) {
	rows, _ := db.Query(ctx, `SELECT r.id, r.output FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, scheduled_at)
		JOIN job_runs r ON r.id = u.id AND r.scheduled_at = u.scheduled_at`, ids, scheduledAt)
	var (
		id  int64
		out *string
	)
	found := make(map[int64][]byte, len(ids))
	if _, err := pgx.ForEachRow(rows, []any{&id, &out}, func() error {
		if out != nil {
			found[id] = []byte(*out)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the outputs of %d runs: %w", len(ids), err)
	}
	return found, nil
}
