package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// RunKept refuses the deletion of a run, saying why in words a user acts
// on ("run 7 is RUNNING: kill it first"). The API answers it 409.
type RunKept struct{ Reason string }

func (e *RunKept) Error() string { return e.Reason }

// DeleteRun deletes run id with what is keyed by it (runs.Delete), and
// records a run.delete by a whose before holds the run's job, status and
// scheduled time. It refuses (*RunKept) a run not yet terminal and a run
// of a workflow run: a node run, or a workflow job's run that started a
// workflow run, whose record needs its node runs.
//
// purge is called with the run, after the checks and before the commit,
// to delete what lives outside the database (its log lines): if it fails
// the run stays, and the call can be repeated; if the commit fails after
// it, the run stays without its lines, and a repeated call finishes.
func (s *Store) DeleteRun(ctx context.Context, a Actor, id int64, purge func(context.Context, Run) error) (Run, error) {
	var out Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			workflowRun *int64
			node        *string
			isWorkflow  bool
		)
		r, err := rowOf(ctx, tx, "run", `SELECT `+runColumns+`, workflow_run, node,
				EXISTS (SELECT 1 FROM workflow_runs w WHERE w.id = job_runs.id)
			FROM job_runs WHERE id = $1 FOR UPDATE`, id, func(row pgx.Row) (Run, error) {
			var r Run
			err := row.Scan(&r.ID, &r.JobID, &r.Group, &r.Shard, &r.TriggerType, &r.Status, &r.ScheduledAt,
				&r.TriggeredAt, &r.StartedAt, &r.FinishedAt, &r.Attempt, &r.RetryOf, &r.ShardIndex,
				&r.ShardTotal, &r.WorkerID, &r.Params, &r.Message, &r.StreamSeq, &r.ParentRun, &r.AlarmStatus, &r.AlarmError,
				&r.Priority, &workflowRun, &node, &isWorkflow)
			return r, err
		})
		if err != nil {
			return err
		}
		switch {
		case !r.Status.Terminal():
			return &RunKept{Reason: fmt.Sprintf("run %d is %s: kill it first", id, r.Status)}
		case workflowRun != nil:
			return &RunKept{Reason: fmt.Sprintf("run %d is node %s of workflow run %d: a workflow run's record needs its node runs",
				id, deref(node), *workflowRun)}
		case isWorkflow:
			return &RunKept{Reason: fmt.Sprintf("run %d is a workflow run: its record needs its node runs", id)}
		}
		if err := purge(ctx, r); err != nil {
			return err
		}
		deleted, err := runs.Delete(ctx, tx, id, r.ScheduledAt)
		if err != nil {
			return err
		}
		if !deleted {
			// The checks above hold under the row lock: not reached
			// unless runs.Delete and they disagree.
			return fmt.Errorf("run %d: %w", id, ErrNotFound)
		}
		out = r
		at := r.ScheduledAt
		return writeAudit(ctx, tx, a, "run.delete", runTarget(id), r.Group,
			runAudit{ID: r.ID, JobID: r.JobID, Status: string(r.Status), ScheduledAt: &at}, nil)
	})
	if err != nil {
		if kept := (*RunKept)(nil); errors.As(err, &kept) {
			return out, err
		}
		return out, fmt.Errorf("delete run %d: %w", id, err)
	}
	return out, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
