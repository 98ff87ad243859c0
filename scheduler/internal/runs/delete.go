package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Delete removes a finished run a user deleted through the API (DELETE
// /runs/{id}, store.DeleteRun): the row of run id, partition key
// scheduledAt, and what is keyed by it in the database — the idempotency
// keys that answer with it (a trigger repeating the key makes a new run
// rather than answering with one that is gone) and the SLA events raised
// for it. Its log lines live in JETJOB_LOGS, which the caller purges.
//
// It deletes only a terminal run that belongs to no workflow run: neither
// a node run (workflow_run set) nor a workflow job's run that started one
// (a workflow_runs row with its id) — a workflow run's record needs its
// node runs. The caller checks both under the run's row lock to say why
// it refuses; the predicates are repeated here so that this statement
// alone can never delete a run something still acts on. It reports
// whether the row was deleted.
//
// Left alone on purpose: alert_outbox rows (the end happened; the alert
// engine consumes it without reading the run), alerts' last_run_id and
// other runs' retry_of, parent_run and chain_root (references to history,
// which may be gone: runs outlive their job, and days their retention),
// and run_chains (the cap on a chain's runs must not be reset by deleting
// its root while its children still run; retention deletes idle chains).
//
// No fence, no lock beyond the row's: a terminal run never changes
// (rank 3 is final), so no writer of the state machine touches it again.
func Delete(ctx context.Context, tx pgx.Tx, id int64, scheduledAt time.Time) (bool, error) {
	var jobID int64
	err := tx.QueryRow(ctx, `DELETE FROM job_runs r WHERE r.id = $1 AND r.scheduled_at = $2
			AND jetjob_status_rank(r.status) = 3 AND r.workflow_run IS NULL
			AND NOT EXISTS (SELECT 1 FROM workflow_runs w WHERE w.id = r.id)
		RETURNING r.job_id`, id, scheduledAt).Scan(&jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete run %d: %w", id, err)
	}
	// The job's keys, through the primary key's prefix (trigger_keys has
	// no index on run_id).
	if _, err := tx.Exec(ctx, `DELETE FROM trigger_keys WHERE job_id = $1 AND run_id = $2`, jobID, id); err != nil {
		return false, fmt.Errorf("delete run %d: its idempotency keys: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM alert_sla WHERE run_id = $1`, id); err != nil {
		return false, fmt.Errorf("delete run %d: its SLA events: %w", id, err)
	}
	return true, nil
}
