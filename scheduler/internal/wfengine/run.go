package wfengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/workflow"
)

// Statuses of a workflow run (workflow_runs.status).
const (
	RunQueued    = "QUEUED"
	RunRunning   = "RUNNING"
	RunSucceeded = "SUCCEEDED"
	RunFailed    = "FAILED"
	RunCancelled = "CANCELLED"
	RunTimedOut  = "TIMED_OUT"
	RunDiscarded = "DISCARDED"
)

// ErrNotFound is a workflow run that does not exist.
var ErrNotFound = errors.New("no such workflow run")

// run is a workflow run's row, locked by the transaction that holds it.
type run struct {
	ID, WorkflowID int64
	Group          string
	ScheduledAt    time.Time
	Status         string
	Params         *string
	Spec           Spec
	State          State
	NodeRuns       int
	EndAs          string
	Message        string
	StartedAt      *time.Time
	TimeoutAt      *time.Time

	graph *workflow.Graph
}

const runColumns = `id, workflow_id, group_name, scheduled_at, status, params, spec, state, node_runs, end_as, message, started_at, timeout_at`

func scanRun(row pgx.Row) (*run, error) {
	r := &run{}
	var spec, state []byte
	if err := row.Scan(&r.ID, &r.WorkflowID, &r.Group, &r.ScheduledAt, &r.Status, &r.Params, &spec, &state,
		&r.NodeRuns, &r.EndAs, &r.Message, &r.StartedAt, &r.TimeoutAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(spec, &r.Spec); err != nil {
		return nil, fmt.Errorf("workflow run %d: spec: %w", r.ID, err)
	}
	if err := json.Unmarshal(state, &r.State); err != nil {
		return nil, fmt.Errorf("workflow run %d: state: %w", r.ID, err)
	}
	r.graph = r.Spec.Graph()
	return r, nil
}

// lockRuns locks the rows of the workflow runs ids, first their
// workflows' rows (the package's lock order), and returns them by id;
// a run that does not exist is missing from the result.
func lockRuns(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]*run, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM workflows w
		WHERE w.job_id IN (SELECT workflow_id FROM workflow_runs WHERE id = ANY($1::bigint[]))
		ORDER BY w.job_id FOR UPDATE`, ids); err != nil {
		return nil, fmt.Errorf("lock the workflows of %d runs: %w", len(ids), err)
	}
	rows, _ := tx.Query(ctx, `SELECT `+runColumns+` FROM workflow_runs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, ids)
	out := make(map[int64]*run, len(ids))
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock %d workflow runs: %w", len(ids), err)
	}
	return out, nil
}

// lockRun locks one workflow run (lockRuns).
func lockRun(ctx context.Context, tx pgx.Tx, id int64) (*run, error) {
	rs, err := lockRuns(ctx, tx, []int64{id})
	if err != nil {
		return nil, err
	}
	r, ok := rs[id]
	if !ok {
		return nil, fmt.Errorf("workflow run %d: %w", id, ErrNotFound)
	}
	return r, nil
}

// save writes r's status, state and counters.
func (r *run) save(ctx context.Context, tx pgx.Tx) error {
	state, err := json.Marshal(&r.State)
	if err != nil {
		return fmt.Errorf("workflow run %d: state: %w", r.ID, err)
	}
	_, err = tx.Exec(ctx, `UPDATE workflow_runs SET status = $2, state = $3, node_runs = $4, end_as = $5, message = $6,
			started_at = $7, timeout_at = $8,
			finished_at = CASE WHEN $2 IN ('QUEUED', 'RUNNING') THEN NULL ELSE COALESCE(finished_at, now()) END
		WHERE id = $1`, r.ID, r.Status, state, r.NodeRuns, r.EndAs, r.Message, r.StartedAt, r.TimeoutAt)
	if err != nil {
		return fmt.Errorf("write workflow run %d: %w", r.ID, err)
	}
	return nil
}

// insert writes r as a new row; false when a row of its id exists already.
func (r *run) insert(ctx context.Context, tx pgx.Tx) (bool, error) {
	spec, err := r.Spec.Marshal()
	if err != nil {
		return false, err
	}
	state, err := json.Marshal(&r.State)
	if err != nil {
		return false, err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO workflow_runs (id, workflow_id, group_name, scheduled_at, status, params, spec, state,
			message, started_at, timeout_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, CASE WHEN $5 = 'DISCARDED' THEN now() END)
		ON CONFLICT (id) DO NOTHING`,
		r.ID, r.WorkflowID, r.Group, r.ScheduledAt, r.Status, r.Params, spec, state, r.Message, r.StartedAt, r.TimeoutAt)
	if err != nil {
		return false, fmt.Errorf("create workflow run %d: %w", r.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// active reports whether r still runs or waits to.
func (r *run) active() bool { return r.Status == RunQueued || r.Status == RunRunning }
