package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// The API's writes of a run's status: a user's kill, a cancelled backfill.
// They carry no fence. A fence keeps a scheduler that lost a shard from
// writing for it; these writes are not made for a shard but for a user,
// through whichever scheduler serves the call, and they hold no lease. They
// need none: they move a run only from SCHEDULED to CANCELLED, terminal,
// and every write the shard's owner makes (Record, ApplyEvents) only moves
// a run up in rank, so whichever commits second finds the run past it and
// changes nothing. A run that was published before the cancel committed
// reads SCHEDULED all the same (the deferred TRIGGERED write, in the
// package doc): it ends CANCELLED here, its worker's events cannot move it
// back, and the caller sends the kill that stops it.

// Cancel ends run id, partition key scheduledAt, CANCELLED with message if
// it is still SCHEDULED, and reports whether it did. The API calls it in
// the transaction that locked the run and records the kill.
func Cancel(ctx context.Context, tx pgx.Tx, id int64, scheduledAt time.Time, message string) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE job_runs SET status = 'CANCELLED', finished_at = now(), recorded_at = now(), message = $3
		WHERE id = $1 AND scheduled_at = $2 AND status = 'SCHEDULED'`, id, scheduledAt, wire.TruncateMessage(message))
	if err != nil {
		return false, fmt.Errorf("cancel run %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// CancelBackfill ends CANCELLED the runs of backfill operation id that are
// still SCHEDULED, and returns their ids (some may sit in a wheel, or be
// out already: the caller sends them a kill). The API calls it in the
// transaction that marked the operation cancelled: that row lock orders it
// against the backfill stepper, which writes an operation's runs only
// while holding its row (store.StepBackfills), so no run of the operation
// is written after this.
func CancelBackfill(ctx context.Context, tx pgx.Tx, id int64) ([]int64, error) {
	rows, _ := tx.Query(ctx, `UPDATE job_runs SET status = 'CANCELLED', finished_at = now(), recorded_at = now(),
		message = $2 WHERE backfill_id = $1 AND status = 'SCHEDULED' RETURNING id`,
		id, fmt.Sprintf("backfill %d cancelled before this run was published", id))
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("cancel the runs of backfill %d: %w", id, err)
	}
	return ids, nil
}

// DeletePlanned deletes job jobID's runs that are SCHEDULED and not yet
// due, when the job is edited, disabled or deleted, and returns the
// database's now (the cutoff after which schedulers drop the job's runs
// from their wheels) and the earliest scheduled or catch-up fire deleted
// (nil if none: where a disabled job's schedule resumes).
//
// Runs already due are left to go ahead: they were due under the job as it
// was, and one may be out already while it still reads SCHEDULED (the
// deferred TRIGGERED write, in the package doc); deleting it would leave
// its trigger running with no row to record it. Node runs (and their
// retries) are left too: they belong to their workflow run, which waits
// for their ends (a deleted one would leave it running forever), not to
// the job's schedule.
//
// No fence: the API deletes for a user, not for a shard. The caller holds
// the job's row lock in tx, and the planner writes a job's runs only in a
// transaction that holds that lock too (it reads due jobs FOR UPDATE SKIP
// LOCKED): a planning that committed first has its runs deleted here, one
// that comes after reads the job as edited.
func DeletePlanned(ctx context.Context, tx pgx.Tx, jobID int64) (cutoff time.Time, first *time.Time, err error) {
	return deletePlanned(ctx, tx, jobID, false)
}

// DeletePlannedForPause is DeletePlanned for a pause of the job's group:
// the job's runs that wait for the resume instead (Waits, held.go: its
// retries not yet due) are kept, and start after the resume. The others
// go as for a disable: schedule fires are planned again by the misfire
// policy at the resume, and a manual trigger for later is deleted (a
// manual run never waits: whether it may run in a paused group was
// decided when it was asked for).
func DeletePlannedForPause(ctx context.Context, tx pgx.Tx, jobID int64) (cutoff time.Time, first *time.Time, err error) {
	return deletePlanned(ctx, tx, jobID, true)
}

func deletePlanned(ctx context.Context, tx pgx.Tx, jobID int64, keepWaiting bool) (cutoff time.Time, first *time.Time, err error) {
	err = tx.QueryRow(ctx, `WITH d AS (
			DELETE FROM job_runs WHERE job_id = $1 AND status = 'SCHEDULED' AND scheduled_at > now()
				AND workflow_run IS NULL AND NOT ($2 AND trigger_type IN `+waitsTypesSQL+`)
			RETURNING scheduled_at, trigger_type)
		SELECT now(), (SELECT min(scheduled_at) FROM d WHERE trigger_type IN ('schedule', 'misfire'))`,
		jobID, keepWaiting).Scan(&cutoff, &first)
	if err != nil {
		return cutoff, nil, fmt.Errorf("delete the planned runs of job %d: %w", jobID, err)
	}
	return cutoff, first, nil
}
