package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// recordEndsSQL writes to the outbox the ends a rule may care about: a
// failed, timed-out, lost or expired run of a job some enabled rule
// covers, and a success only where it can matter (the job has a live
// alert to close, or a rule covering it subscribes to succeeded), so that
// the results path pays for alerting only where someone is listening.
// final is the test ApplyEvents uses to mark a run's alarm pending: no
// retry follows.
const recordEndsSQL = `INSERT INTO alert_outbox (run_id, job_id, group_name, status, attempt, final, message, at)
	SELECT r.id, r.job_id, r.group_name, r.status, r.attempt,
		r.attempt >= COALESCE(r.run_max_retries, j.max_retries, 0), left(r.message, 2000), COALESCE(r.finished_at, now())
	FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, scheduled_at)
		JOIN job_runs r ON r.id = u.id AND r.scheduled_at = u.scheduled_at
		LEFT JOIN jobs j ON j.id = r.job_id
	WHERE (EXISTS (SELECT 1 FROM alert_rules WHERE enabled) OR EXISTS (SELECT 1 FROM alerts WHERE state <> 'closed'))
	  AND (EXISTS (SELECT 1 FROM alert_rules ru WHERE ru.enabled
			AND (ru.job_id = r.job_id OR (ru.job_id IS NULL AND (ru.group_name = r.group_name OR ru.group_name IS NULL)))
			AND (r.status <> 'SUCCEEDED' OR 'succeeded' = ANY (ru.events)))
	   OR (r.status = 'SUCCEEDED' AND EXISTS (SELECT 1 FROM alerts a WHERE a.job_id = r.job_id AND a.state <> 'closed')))
	ORDER BY r.id`

// alertable are the statuses whose ends go to the outbox.
var alertable = map[wire.Status]bool{
	wire.StatusFailed: true, wire.StatusTimedOut: true, wire.StatusLost: true,
	wire.StatusExpired: true, wire.StatusSucceeded: true,
}

// RecordEnds writes the ends among moved that a rule may follow from to
// the outbox, in tx: the results applier's transaction, which records
// them, so that an end is in the outbox exactly when it is recorded.
func RecordEnds(ctx context.Context, tx pgx.Tx, moved []runs.Moved) error {
	var ids []int64
	var scheds []time.Time
	for _, m := range moved {
		if alertable[m.Status] {
			ids, scheds = append(ids, m.RunID), append(scheds, m.ScheduledAt)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, recordEndsSQL, ids, scheds); err != nil {
		return fmt.Errorf("record %d run ends for alerts: %w", len(ids), err)
	}
	return nil
}
