package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/shared/wire"
)

// WorkflowRun is a run of a workflow (workflow_runs), with its nodes when
// read one at a time.
type WorkflowRun struct {
	ID, WorkflowID int64
	Group          string
	ScheduledAt    time.Time
	Status         string
	Params         *string
	Message        string
	NodeRuns       int
	CreatedAt      time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
	TimeoutAt      *time.Time
	// Nodes are the run's nodes in the order of its graph (GetWorkflowRun).
	Nodes []WorkflowNode
}

// WorkflowNode is one node of a workflow run: its state and every run it
// had, all attempts.
type WorkflowNode struct {
	Name    string
	JobID   int64
	Status  string
	Reason  string
	Attempt int
	Bypass  bool
	// Output is an output given by hand (mark succeeded).
	Output json.RawMessage
	Runs   []NodeRun
}

// NodeRun is one run of a node.
type NodeRun struct {
	RunID       int64
	Attempt     int // the node's attempt
	Item        int
	Status      wire.Status
	Message     string
	Output      json.RawMessage
	ScheduledAt time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
}

const workflowRunColumns = `id, workflow_id, group_name, scheduled_at, status, params, message, node_runs,
	created_at, started_at, finished_at, timeout_at`

func scanWorkflowRun(row pgx.Row) (WorkflowRun, error) {
	var r WorkflowRun
	err := row.Scan(&r.ID, &r.WorkflowID, &r.Group, &r.ScheduledAt, &r.Status, &r.Params, &r.Message, &r.NodeRuns,
		&r.CreatedAt, &r.StartedAt, &r.FinishedAt, &r.TimeoutAt)
	return r, err
}

// ListWorkflowRuns returns up to limit runs of workflow id, newest first,
// with an id below before (0: from the newest).
func (s *Store) ListWorkflowRuns(ctx context.Context, workflowID, before int64, limit int) ([]WorkflowRun, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+workflowRunColumns+` FROM workflow_runs
		WHERE workflow_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, workflowID, before, limit)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WorkflowRun, error) { return scanWorkflowRun(r) })
	if err != nil {
		return nil, fmt.Errorf("list runs of workflow %d: %w", workflowID, err)
	}
	return out, nil
}

// WorkflowOfRun is the workflow of workflow run id.
func (s *Store) WorkflowOfRun(ctx context.Context, id int64) (int64, error) {
	return columnOf[int64](ctx, s.pool, "workflow run", `SELECT workflow_id FROM workflow_runs WHERE id = $1`, id)
}

// WorkflowRunGroup is the group of workflow run id, for permission checks.
func (s *Store) WorkflowRunGroup(ctx context.Context, id int64) (string, error) {
	return groupOfWorkflowRun(ctx, s.pool, id)
}

// GetWorkflowRun returns workflow run id with its nodes, each with its
// runs (all attempts, and the last of each one's retries) and their
// outputs.
func (s *Store) GetWorkflowRun(ctx context.Context, id int64) (WorkflowRun, error) {
	var spec, state []byte
	row := s.pool.QueryRow(ctx, `SELECT `+workflowRunColumns+`, spec, state FROM workflow_runs WHERE id = $1`, id)
	var r WorkflowRun
	err := row.Scan(&r.ID, &r.WorkflowID, &r.Group, &r.ScheduledAt, &r.Status, &r.Params, &r.Message, &r.NodeRuns,
		&r.CreatedAt, &r.StartedAt, &r.FinishedAt, &r.TimeoutAt, &spec, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("workflow run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("get workflow run %d: %w", id, err)
	}
	var sp wfengine.Spec
	var st wfengine.State
	if err := json.Unmarshal(spec, &sp); err != nil {
		return r, fmt.Errorf("workflow run %d: spec: %w", id, err)
	}
	if err := json.Unmarshal(state, &st); err != nil {
		return r, fmt.Errorf("workflow run %d: state: %w", id, err)
	}
	byNode := map[string][]NodeRun{}
	rows, _ := s.pool.Query(ctx, `SELECT k.node, k.node_attempt, k.item, r.id, r.status, r.message, r.output,
			r.scheduled_at, r.started_at, r.finished_at
		FROM workflow_node_runs k JOIN job_runs r ON r.id = k.run_id AND r.scheduled_at = k.scheduled_at
		WHERE k.workflow_run = $1 ORDER BY k.node, k.node_attempt, k.item`, id)
	var (
		node   string
		nr     NodeRun
		output *string
	)
	if _, err := pgx.ForEachRow(rows, []any{&node, &nr.Attempt, &nr.Item, &nr.RunID, &nr.Status, &nr.Message, &output,
		&nr.ScheduledAt, &nr.StartedAt, &nr.FinishedAt}, func() error {
		n := nr
		if output != nil {
			n.Output = json.RawMessage(*output)
		}
		byNode[node] = append(byNode[node], n)
		return nil
	}); err != nil {
		return r, fmt.Errorf("workflow run %d: node runs: %w", id, err)
	}
	for _, n := range sp.Nodes {
		wn := WorkflowNode{Name: n.Name, JobID: n.JobID, Status: "PENDING", Runs: byNode[n.Name]}
		if ns := st.Nodes[n.Name]; ns != nil {
			wn.Status, wn.Reason, wn.Attempt, wn.Bypass, wn.Output = string(ns.Status), ns.Reason, ns.Attempt, ns.Bypass, ns.Output
		}
		r.Nodes = append(r.Nodes, wn)
	}
	return r, nil
}

// WorkflowOp names an operation on a workflow run (its audit action is
// "workflow_run.<op>").
type WorkflowOp struct {
	// Op is cancel, retry, mark_succeeded or skip.
	Op     string
	Node   string
	Output json.RawMessage
	Reason string
}

// OperateWorkflowRun runs op on workflow run id in one transaction that
// also records it (workflow_run.<op>, by a), and returns the node runs it
// created (to fire) and the node runs to kill.
func (s *Store) OperateWorkflowRun(ctx context.Context, a Actor, id int64, op WorkflowOp) (wfengine.Done, error) {
	var done wfengine.Done
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		switch op.Op {
		case "cancel":
			done, err = wfengine.Cancel(ctx, tx, id, op.Reason, s.maxChainRuns)
		case "retry":
			done, err = wfengine.Retry(ctx, tx, id, s.maxChainRuns)
		case "mark_succeeded":
			done, err = wfengine.MarkSucceeded(ctx, tx, id, op.Node, op.Output, op.Reason, s.maxChainRuns)
		case "skip":
			done, err = wfengine.Skip(ctx, tx, id, op.Node, op.Reason, s.maxChainRuns)
		default:
			return fmt.Errorf("workflow run operation %q: %w", op.Op, ErrInvalid)
		}
		if err != nil {
			return err
		}
		g, err := groupOfWorkflowRun(ctx, tx, id)
		if err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "workflow_run."+op.Op, workflowRunTarget(id), g, nil, op)
	})
	if err != nil {
		return wfengine.Done{}, fmt.Errorf("workflow run %d: %s: %w", id, op.Op, err)
	}
	s.endedWorkflows(done.Ended)
	return done, nil
}

func groupOfWorkflowRun(ctx context.Context, q querier, id int64) (string, error) {
	return columnOf[string](ctx, q, "workflow run", `SELECT group_name FROM workflow_runs WHERE id = $1`, id)
}

func workflowRunTarget(id int64) string { return fmt.Sprintf("workflow_run:%d", id) }

// LoadScheduled returns those of runs ids that are still SCHEDULED, as the
// firing path takes them: node runs an operation created.
func (s *Store) LoadScheduled(ctx context.Context, ids []int64) ([]runs.Planned, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return runs.LoadScheduled(ctx, s.pool, ids)
}

// WorkflowRunsCommands reports whether a node of workflow id runs a job
// whose handler runs commands: a trigger's params, or an output given by
// hand, may then reach a command through a params template.
func (s *Store) WorkflowRunsCommands(ctx context.Context, id int64) (bool, error) {
	w, err := s.GetWorkflow(ctx, id)
	if err != nil {
		return false, err
	}
	ts, err := refTargets(ctx, s.pool, w.Spec.JobIDs())
	if err != nil {
		return false, err
	}
	for _, t := range ts {
		if t.Commands {
			return true, nil
		}
	}
	return false, nil
}
