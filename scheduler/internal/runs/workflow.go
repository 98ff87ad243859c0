package runs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/alertoutbox"
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

// markWorkflowRunsSQL is markWorkflowRunSQL for many runs at once, each
// with its status, message and epoch; it returns the runs it moved.
var markWorkflowRunsSQL = `UPDATE job_runs r SET status = u.status, triggered_at = now(),
		started_at = CASE WHEN u.status = 'RUNNING' THEN now() END,
		finished_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN now() END,
		recorded_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN now() END,
		message = u.message
	FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::bigint[]) AS u(id, scheduled_at, status, message, epoch)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND ` + stillScheduled("r") + ` AND ` + fenced("r.shard", "$6", "u.epoch") + `
	RETURNING r.id`

// WorkflowMark is a workflow job's run (still SCHEDULED) to move out of
// SCHEDULED to Status: MarkWorkflowRun for many.
type WorkflowMark struct {
	Run     *Planned
	Status  wire.Status
	Message string
}

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

// MarkWorkflowRuns is MarkWorkflowRun for many runs in one statement, in
// id order: it returns the ids of those it moved. The runs must be
// distinct.
func MarkWorkflowRuns(ctx context.Context, tx pgx.Tx, owner string, marks []WorkflowMark) (map[int64]bool, error) {
	if len(marks) == 0 {
		return nil, nil
	}
	marks = slices.Clone(marks)
	slices.SortFunc(marks, func(a, b WorkflowMark) int { return cmp.Compare(a.Run.RunID, b.Run.RunID) })
	ids, ats := make([]int64, len(marks)), make([]time.Time, len(marks))
	sts, msgs, epochs := make([]string, len(marks)), make([]string, len(marks)), make([]int64, len(marks))
	for i, m := range marks {
		ids[i], ats[i], sts[i], msgs[i], epochs[i] = m.Run.RunID, m.Run.ScheduledAt, string(m.Status), wire.TruncateMessage(m.Message), m.Run.Epoch
	}
	rows, _ := tx.Query(ctx, markWorkflowRunsSQL, ids, ats, sts, msgs, epochs, owner)
	moved, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("start %d workflow runs: %w", len(marks), err)
	}
	out := make(map[int64]bool, len(moved))
	for _, id := range moved {
		out[id] = true
	}
	return out, nil
}

// WorkflowMove is a move of a workflow job's run (MoveWorkflowRun).
type WorkflowMove struct {
	RunID       int64
	ScheduledAt time.Time
	Status      wire.Status
	Message     string
}

// moveWorkflowRunsSQL moves workflow jobs' runs up to their statuses
// (MoveWorkflowRuns), and writes the ends alert rules follow to their
// outbox in the same statement (a FAILED workflow is workflow_failed).
var moveWorkflowRunsSQL = `WITH r AS (UPDATE job_runs r SET status = u.status,
		started_at = COALESCE(r.started_at, CASE WHEN u.status = 'RUNNING' THEN now() END),
		finished_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN now() ELSE r.finished_at END,
		recorded_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN now() ELSE r.recorded_at END,
		message = CASE WHEN u.message <> '' THEN u.message ELSE r.message END
	FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[]) AS u(id, scheduled_at, status, message)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND jetjob_status_rank(u.status) > jetjob_status_rank(r.status)
	` + alertoutbox.Returning + `)
` + alertoutbox.InsertFrom(alertoutbox.Run)

// MoveWorkflowRun moves a workflow job's run up to status (RUNNING when a
// queued run starts, a terminal status when it ends); a run already at or
// past it is left alone.
func MoveWorkflowRun(ctx context.Context, tx pgx.Tx, id int64, scheduledAt time.Time, status wire.Status, message string) error {
	return MoveWorkflowRuns(ctx, tx, []WorkflowMove{{RunID: id, ScheduledAt: scheduledAt, Status: status, Message: message}})
}

// MoveWorkflowRuns is MoveWorkflowRun for many runs in one statement. The
// runs must be distinct (an UPDATE changes a row once, however many rows
// of its FROM match it); they are written in id order, the order of every
// writer of job_runs.
func MoveWorkflowRuns(ctx context.Context, tx pgx.Tx, moves []WorkflowMove) error {
	if len(moves) == 0 {
		return nil
	}
	moves = slices.Clone(moves)
	slices.SortFunc(moves, func(a, b WorkflowMove) int { return cmp.Compare(a.RunID, b.RunID) })
	ids, ats := make([]int64, len(moves)), make([]time.Time, len(moves))
	sts, msgs := make([]string, len(moves)), make([]string, len(moves))
	for i, m := range moves {
		ids[i], ats[i], sts[i], msgs[i] = m.RunID, m.ScheduledAt, string(m.Status), wire.TruncateMessage(m.Message)
	}
	if _, err := tx.Exec(ctx, moveWorkflowRunsSQL, ids, ats, sts, msgs); err != nil {
		if len(moves) == 1 {
			return fmt.Errorf("move workflow run %d to %s: %w", moves[0].RunID, moves[0].Status, err)
		}
		return fmt.Errorf("move %d workflow runs: %w", len(moves), err)
	}
	return nil
}

// NodeKey is a node run's key and the run it names from now on: the last
// of its job's retries (SetNodeRuns).
type NodeKey struct {
	WorkflowRun int64
	Node        string
	Attempt     int
	Item        int
	RunID       int64
	ScheduledAt time.Time
}

// SetNodeRuns points node keys at their runs, in one statement. The keys
// must be distinct.
func SetNodeRuns(ctx context.Context, tx pgx.Tx, keys []NodeKey) error {
	if len(keys) == 0 {
		return nil
	}
	wrs, nodes := make([]int64, len(keys)), make([]string, len(keys))
	attempts, items := make([]int32, len(keys)), make([]int32, len(keys))
	ids, ats := make([]int64, len(keys)), make([]time.Time, len(keys))
	for i, k := range keys {
		wrs[i], nodes[i], attempts[i], items[i], ids[i], ats[i] = k.WorkflowRun, k.Node, int32(k.Attempt), int32(k.Item), k.RunID, k.ScheduledAt
	}
	if _, err := tx.Exec(ctx, `UPDATE workflow_node_runs k SET run_id = u.run_id, scheduled_at = u.at
		FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[], $5::bigint[], $6::timestamptz[]) AS u(wr, node, attempt, item, run_id, at)
		WHERE k.workflow_run = u.wr AND k.node = u.node AND k.node_attempt = u.attempt AND k.item = u.item`,
		wrs, nodes, attempts, items, ids, ats); err != nil {
		return fmt.Errorf("name the runs of %d node keys: %w", len(keys), err)
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
//
// It returns each run created as dispatch takes it (plannedSelect), so
// that the caller hands it over after commit without reading it back.
var insertNodeRunsSQL = `WITH u AS (
		SELECT u.*, nextval('job_runs_id_seq') AS id, clock_timestamp() + u.ord * interval '1 microsecond' AS at
		FROM unnest($1::bigint[], $2::text[], $3::int[], $4::int[], $5::bigint[], $6::text[], $7::bigint[], $8::int[])
			WITH ORDINALITY AS u(wr, node, attempt, item, job_id, params, timeout_ms, max_retries, ord)),
	k AS (INSERT INTO workflow_node_runs (workflow_run, node, node_attempt, item, run_id, scheduled_at)
		SELECT u.wr, u.node, u.attempt, u.item, u.id, u.at FROM u JOIN jobs j ON j.id = u.job_id
		ON CONFLICT DO NOTHING
		RETURNING run_id),
	r AS (INSERT INTO job_runs (id, job_id, group_name, shard, trigger_type, status, scheduled_at, params,
		workflow_run, node, node_attempt, item, chain_root, run_timeout_ms, run_max_retries)
	OVERRIDING SYSTEM VALUE
	SELECT u.id, j.id, j.group_name, j.shard, 'workflow', 'SCHEDULED', u.at, u.params,
		u.wr, u.node, u.attempt, u.item, u.wr, u.timeout_ms, u.max_retries
	FROM u JOIN k ON k.run_id = u.id JOIN jobs j ON j.id = u.job_id
	RETURNING *)
	` + plannedSelect + `, r.node, r.item
	FROM r JOIN jobs j ON j.id = r.job_id` + plannedGroupJoin

// CreatedNodeRun is a node run InsertNodeRuns created: its key, and the
// run as dispatch fires it.
type CreatedNodeRun struct {
	Planned
	Node string
	Item int
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
		var err error
		c.Planned, err = scanPlanned(r, &c.Node, &c.Item)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("create %d node runs: %w", len(nrs), err)
	}
	return out, nil
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
		WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND `+stillScheduled("r")+`
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

// PlanGeneric makes the statements of tx run on their generic plans, built
// once per connection, until the returned restore puts the plan mode back
// (or tx ends). The workflow engine's statements join job_runs, which is
// partitioned by scheduled_at, on keys that come in arrays: a custom plan,
// made anew at every call, considers every partition, and its planning
// cost more than its execution (the workflow benchmark: 1.2 ms planning
// against 0.2 ms running for the read of outputs); the generic plan prunes
// the partitions at run time. See genericPlanSQL for the precedent.
func PlanGeneric(ctx context.Context, tx pgx.Tx) (restore func(context.Context) error, err error) {
	var was string
	if err := tx.QueryRow(ctx, `SELECT current_setting('plan_cache_mode'), set_config('plan_cache_mode', 'force_generic_plan', true)`).
		Scan(&was, new(string)); err != nil {
		return nil, fmt.Errorf("plan mode: %w", err)
	}
	return func(ctx context.Context) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('plan_cache_mode', $1, true)`, was); err != nil {
			return fmt.Errorf("plan mode: %w", err)
		}
		return nil
	}, nil
}
