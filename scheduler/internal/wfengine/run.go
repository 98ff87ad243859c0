package wfengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
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
	ds, err := decodeSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("workflow run %d: spec: %w", r.ID, err)
	}
	r.Spec, r.graph = ds.spec, ds.graph
	if err := json.Unmarshal(state, &r.State); err != nil {
		return nil, fmt.Errorf("workflow run %d: state: %w", r.ID, err)
	}
	return r, nil
}

// decodedSpec is a spec as stored, decoded, and its graph: shared by the
// runs that store the same text, and never written to.
type decodedSpec struct {
	spec  Spec
	graph *workflow.Graph
}

// specs caches decoded specs by their stored text, at most maxSpecs of
// them (cleared when full). Every run of a workflow stores the spec it
// started with, and every applier batch reads each run it advances: the
// decoding was a tenth of the scheduler's CPU in the workflow benchmark.
var specs = struct {
	sync.Mutex
	m map[string]*decodedSpec
}{m: map[string]*decodedSpec{}}

const maxSpecs = 4096

// decodeSpec decodes text, a stored spec, or returns its decoding from
// the cache.
func decodeSpec(text []byte) (*decodedSpec, error) {
	specs.Lock()
	ds := specs.m[string(text)]
	specs.Unlock()
	if ds != nil {
		return ds, nil
	}
	ds = &decodedSpec{}
	if err := json.Unmarshal(text, &ds.spec); err != nil {
		return nil, err
	}
	ds.graph = ds.spec.Graph()
	specs.Lock()
	if len(specs.m) >= maxSpecs {
		clear(specs.m)
	}
	specs.m[string(text)] = ds
	specs.Unlock()
	return ds, nil
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

// saveRunsSQL writes runs' statuses, states and counters.
const saveRunsSQL = `UPDATE workflow_runs w SET status = u.status, state = u.state::jsonb, node_runs = u.node_runs,
		end_as = u.end_as, message = u.message, started_at = u.started_at, timeout_at = u.timeout_at,
		finished_at = CASE WHEN u.status IN ('QUEUED', 'RUNNING') THEN NULL ELSE COALESCE(w.finished_at, now()) END
	FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[])
		AS u(id, status, state, node_runs, end_as, message, started_at, timeout_at)
	WHERE w.id = u.id`

// saveRuns writes rs, distinct runs, in one statement.
func saveRuns(ctx context.Context, tx pgx.Tx, rs []*run) error {
	if len(rs) == 0 {
		return nil
	}
	n := len(rs)
	ids, nodeRuns := make([]int64, n), make([]int32, n)
	sts, states, endAs, msgs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	started, timeouts := make([]*time.Time, n), make([]*time.Time, n)
	for i, r := range rs {
		state, err := json.Marshal(&r.State)
		if err != nil {
			return fmt.Errorf("workflow run %d: state: %w", r.ID, err)
		}
		ids[i], sts[i], states[i], nodeRuns[i], endAs[i], msgs[i] = r.ID, r.Status, string(state), int32(r.NodeRuns), r.EndAs, r.Message
		started[i], timeouts[i] = r.StartedAt, r.TimeoutAt
	}
	if _, err := tx.Exec(ctx, saveRunsSQL, ids, sts, states, nodeRuns, endAs, msgs, started, timeouts); err != nil {
		if n == 1 {
			return fmt.Errorf("write workflow run %d: %w", ids[0], err)
		}
		return fmt.Errorf("write %d workflow runs: %w", n, err)
	}
	return nil
}

// insertRunsSQL writes new runs; a run whose id exists is left out.
const insertRunsSQL = `INSERT INTO workflow_runs (id, workflow_id, group_name, scheduled_at, status, params, spec, state,
		message, started_at, timeout_at, finished_at)
	SELECT u.id, u.workflow_id, u.group_name, u.scheduled_at, u.status, u.params, u.spec::jsonb, u.state::jsonb,
		u.message, u.started_at, u.timeout_at, CASE WHEN u.status = 'DISCARDED' THEN now() END
	FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[],
		$9::text[], $10::timestamptz[], $11::timestamptz[])
		AS u(id, workflow_id, group_name, scheduled_at, status, params, spec, state, message, started_at, timeout_at)
	ORDER BY u.id
	ON CONFLICT (id) DO NOTHING
	RETURNING id`

// insertRuns writes rs as new rows in one statement, and returns the ids
// of those it wrote: a run whose id exists already is left out.
func insertRuns(ctx context.Context, tx pgx.Tx, rs []*run) (map[int64]bool, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	n := len(rs)
	ids, wfs := make([]int64, n), make([]int64, n)
	groups, sts, specs, states, msgs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	params := make([]*string, n)
	ats := make([]time.Time, n)
	started, timeouts := make([]*time.Time, n), make([]*time.Time, n)
	for i, r := range rs {
		spec, err := r.Spec.Marshal()
		if err != nil {
			return nil, err
		}
		state, err := json.Marshal(&r.State)
		if err != nil {
			return nil, err
		}
		ids[i], wfs[i], groups[i], ats[i], sts[i], params[i] = r.ID, r.WorkflowID, r.Group, r.ScheduledAt, r.Status, r.Params
		specs[i], states[i], msgs[i], started[i], timeouts[i] = string(spec), string(state), r.Message, r.StartedAt, r.TimeoutAt
	}
	rows, _ := tx.Query(ctx, insertRunsSQL, ids, wfs, groups, ats, sts, params, specs, states, msgs, started, timeouts)
	created, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("create %d workflow runs: %w", n, err)
	}
	out := make(map[int64]bool, len(created))
	for _, id := range created {
		out[id] = true
	}
	return out, nil
}

// active reports whether r still runs or waits to.
func (r *run) active() bool { return r.Status == RunQueued || r.Status == RunRunning }
