package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// A run's alarm state (job_runs.alarm_*) is written by ApplyEvents, which
// marks a run whose last attempt failed alarm_status = 'pending', and then
// only by the alarm sender, through ClaimAlarms and SetAlarm. They carry no
// fence and need none: any scheduler may send, an alarm is claimed under
// FOR UPDATE SKIP LOCKED by moving its next attempt forward, and the alarm
// columns are read by no rule of the state machine, whose statements never
// write them once the run has ended.

// DueAlarm is a run whose alarm is due, with what sending it needs from its
// job.
type DueAlarm struct {
	RunID, JobID   int64
	JobName, Group string
	Status         string
	Message        string
	Attempt        int
	TriggerType    string
	// ScheduledAt is the run's partition key; FinishedAt is now for a run
	// that has none recorded.
	ScheduledAt, FinishedAt time.Time
	// Webhook and Emails are the job's targets.
	Webhook string
	Emails  []string
	// Sent are the channels already delivered, Attempts the failed
	// attempts so far.
	Sent     []string
	Attempts int
}

// claimAlarmsSQL takes up to $1 due alarms, pushing their next attempt a
// minute ahead so that no other scheduler takes them meanwhile.
const claimAlarmsSQL = `UPDATE job_runs r SET alarm_next_at = now() + interval '1 minute'
	FROM jobs j
	WHERE r.id IN (SELECT id FROM job_runs WHERE alarm_status = 'pending' AND alarm_next_at <= now()
			ORDER BY alarm_next_at LIMIT $1 FOR UPDATE SKIP LOCKED)
	  AND j.id = r.job_id
	RETURNING r.id, r.job_id, j.name, r.group_name, r.status, r.message, r.attempt, r.trigger_type,
		r.scheduled_at, COALESCE(r.finished_at, now()), j.alarm_webhook, j.alarm_emails, r.alarm_sent, r.alarm_attempts`

// ClaimAlarms claims up to limit due alarms for this scheduler to send for
// a minute. Alarms of runs whose job was deleted are first recorded none:
// no target is left to send them to.
func ClaimAlarms(ctx context.Context, db DB, limit int) ([]DueAlarm, error) {
	if _, err := db.Exec(ctx, `UPDATE job_runs r SET alarm_status = 'none'
		WHERE alarm_status = 'pending' AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.job_id)`); err != nil {
		return nil, fmt.Errorf("settle the alarms of deleted jobs: %w", err)
	}
	rows, _ := db.Query(ctx, claimAlarmsSQL, limit)
	due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DueAlarm, error) {
		var a DueAlarm
		err := r.Scan(&a.RunID, &a.JobID, &a.JobName, &a.Group, &a.Status, &a.Message, &a.Attempt,
			&a.TriggerType, &a.ScheduledAt, &a.FinishedAt, &a.Webhook, &a.Emails, &a.Sent, &a.Attempts)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim alarms: %w", err)
	}
	return due, nil
}

// AlarmOutcome is what a delivery of a run's alarm leaves to record.
type AlarmOutcome struct {
	RunID int64
	// ScheduledAt is the run's partition key.
	ScheduledAt time.Time
	// Status is none (no target), sent, pending (a channel failed and is
	// tried again at Next) or failed (for good).
	Status string
	// Error is the channels' errors, "" when all were sent.
	Error    string
	Sent     []string
	Attempts int
	// Next is the next attempt of a pending alarm; nil keeps the one the
	// claim set.
	Next *time.Time
}

// SetAlarm records o on its run.
func SetAlarm(ctx context.Context, db DB, o AlarmOutcome) error {
	_, err := db.Exec(ctx, `UPDATE job_runs SET alarm_status = $2, alarm_error = $3,
		alarm_sent = $4, alarm_attempts = $5, alarm_next_at = COALESCE($6, alarm_next_at)
		WHERE id = $1 AND scheduled_at = $7`,
		o.RunID, o.Status, o.Error, o.Sent, o.Attempts, o.Next, o.ScheduledAt)
	if err != nil {
		return fmt.Errorf("record the alarm of run %d: %w", o.RunID, err)
	}
	return nil
}
