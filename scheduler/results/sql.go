package results

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/shared/wire"
)

// applySQL applies one coalesced update per run. The status only moves up
// in rank; started_at, finished_at and the message are filled once and
// never overwritten by a later, lower or repeated event.
//
// A fix_delay job's next fire is planned here, in the same statement: the
// delay after its scheduled run ended.
const applySQL = `WITH applied AS (UPDATE job_runs r SET
		status = CASE WHEN jetjob_status_rank(u.status) > jetjob_status_rank(r.status) THEN u.status ELSE r.status END,
		started_at = COALESCE(r.started_at, u.started_at),
		finished_at = CASE WHEN jetjob_status_rank(r.status) < 3 AND jetjob_status_rank(u.status) = 3 THEN u.finished_at ELSE r.finished_at END,
		message = CASE WHEN jetjob_status_rank(r.status) < 3 AND jetjob_status_rank(u.status) = 3 THEN u.message ELSE r.message END,
		worker_id = CASE WHEN u.worker_id <> '' AND jetjob_status_rank(u.status) > jetjob_status_rank(r.status) THEN u.worker_id ELSE r.worker_id END
	FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[])
		AS u(id, status, started_at, finished_at, message, worker_id)
	WHERE r.id = u.id
	  AND (jetjob_status_rank(u.status) > jetjob_status_rank(r.status)
	       OR (r.started_at IS NULL AND u.started_at IS NOT NULL))
	RETURNING r.id, r.job_id, r.status, r.finished_at, r.trigger_type),
	chained AS (UPDATE jobs j SET next_fire_at = a.finished_at + j.delay_ms * interval '1 millisecond'
		FROM applied a
		WHERE j.id = a.job_id AND j.schedule_type = 'fix_delay' AND j.enabled AND j.next_fire_at IS NULL
		  AND jetjob_status_rank(a.status) = 3 AND a.trigger_type IN ('schedule', 'misfire'))
	SELECT id, job_id, status FROM applied`

// runUpdate is the coalesced effect of a batch's events on one run.
type runUpdate struct {
	status     wire.Status
	startedAt  *time.Time
	finishedAt *time.Time
	message    string
	workerID   string
}

// coalesce folds the events of one batch per run, so a run that started and
// finished within one batch costs one row update, not two.
func coalesce(events []wire.Event) map[int64]*runUpdate {
	out := make(map[int64]*runUpdate, len(events))
	for i := range events {
		e := &events[i]
		u := out[e.RunID]
		if u == nil {
			u = &runUpdate{}
			out[e.RunID] = u
		}
		at := e.At
		if e.Kind == wire.EventStarted && (u.startedAt == nil || at.Before(*u.startedAt)) {
			u.startedAt = &at
		}
		if e.Status.Rank() > u.status.Rank() {
			u.status = e.Status
			u.workerID = e.WorkerID
			if e.Status.Terminal() {
				u.finishedAt = &at
				u.message = wire.TruncateMessage(e.Message)
			}
		}
	}
	return out
}

func apply(ctx context.Context, pool *pgxpool.Pool, events []wire.Event) ([]Change, error) {
	ups := coalesce(events)
	var (
		ids                 = make([]int64, 0, len(ups))
		statuses, msgs, wks = make([]string, 0, len(ups)), make([]string, 0, len(ups)), make([]string, 0, len(ups))
		starts, ends        = make([]*time.Time, 0, len(ups)), make([]*time.Time, 0, len(ups))
	)
	for id, u := range ups {
		ids = append(ids, id)
		statuses = append(statuses, string(u.status))
		starts = append(starts, u.startedAt)
		ends = append(ends, u.finishedAt)
		msgs = append(msgs, u.message)
		wks = append(wks, u.workerID)
	}
	rows, _ := pool.Query(ctx, applySQL, ids, statuses, starts, ends, msgs, wks)
	changes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Change, error) {
		var c Change
		err := r.Scan(&c.RunID, &c.JobID, &c.Status)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("apply %d events to %d runs: %w", len(events), len(ups), err)
	}
	return changes, nil
}
