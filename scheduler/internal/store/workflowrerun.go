package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// RerunWorkflowRun writes a manual run of the workflow of workflow run id
// with that run's params, SCHEDULED now, for the caller to fire: a re-run
// of the whole run is a trigger like any other (the same overlap policy,
// cap and job.trigger audit entry, which names the run re-run), so that no
// second way of starting a workflow run exists. Its message names the run
// it re-runs. The workflow's definition is read when the new run starts:
// an edit since the old run applies. The old run is left as it is.
func (s *Store) RerunWorkflowRun(ctx context.Context, a Actor, id int64) (runs.Planned, error) {
	var (
		workflowID int64
		params     *string
	)
	err := s.pool.QueryRow(ctx, `SELECT workflow_id, params FROM workflow_runs WHERE id = $1`, id).Scan(&workflowID, &params)
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.Planned{}, fmt.Errorf("workflow run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return runs.Planned{}, fmt.Errorf("re-run workflow run %d: %w", id, err)
	}
	if _, err := s.GetWorkflow(ctx, workflowID); errors.Is(err, ErrNotFound) {
		return runs.Planned{}, fmt.Errorf("re-run workflow run %d: its workflow %d was deleted: %w", id, workflowID, wfengine.ErrNotAllowed)
	} else if err != nil {
		return runs.Planned{}, err
	}
	// The old run's params exactly: none stored means it ran with none,
	// not with what the workflow's params are now.
	same := ""
	if params != nil {
		same = *params
	}
	p, _, err := s.TriggerRun(ctx, a, workflowID, Trigger{Params: &same,
		note: manualNote{Message: fmt.Sprintf("re-run of workflow run %d", id), RerunOf: id}})
	return p, err
}
