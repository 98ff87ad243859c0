package dispatch

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/shared/wire"
)

// fenced is the condition under which this scheduler may still write a
// run: it holds the run's shard at the epoch the run was planned under
// (epoch 0: a manual run, written by whichever scheduler served the call).
const fenced = `(u.epoch = 0 OR EXISTS (SELECT 1 FROM scheduler_shards s
		WHERE s.shard = r.shard AND s.owner = $1 AND s.epoch = u.epoch AND s.expires_at > now()))`

// markTriggeredSQL records published runs. It never moves a run backwards,
// and leaves alone a run the results applier already moved with the
// trigger's sequence from its worker's events (the common case, see
// Config.TriggeredDelay): no row version is written for it. A run moved by
// events without a sequence (an older worker) gets the trigger's time and
// sequence added.
//
// Both statements match a run by (id, scheduled_at): job_runs is
// partitioned by scheduled_at, and the pair lets run-time pruning take each
// row straight to its one partition instead of probing every day's.
const markTriggeredSQL = `UPDATE job_runs r SET
		status = CASE WHEN r.status = 'SCHEDULED' THEN 'TRIGGERED' ELSE r.status END,
		triggered_at = u.at, stream_seq = u.seq
	FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[], $5::bigint[], $6::timestamptz[]) AS u(id, seq, at, epoch, scheduled_at)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND (r.status = 'SCHEDULED' OR r.stream_seq IS NULL)
	  AND ` + fenced

// markEndedSQL ends runs that were not published: SKIPPED by the misfire
// policy, or FAILED because they could not be encoded.
const markEndedSQL = `UPDATE job_runs r SET status = u.status, finished_at = u.at, message = u.message, recorded_at = now()
	FROM unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[], $7::timestamptz[])
		AS u(id, status, at, message, epoch, scheduled_at)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND r.status = 'SCHEDULED' AND ` + fenced

// record writes a batch of marks: one statement per kind.
func record(ctx context.Context, pool *pgxpool.Pool, owner string, marks []mark) error {
	var (
		tIDs, tSeqs, tEpochs []int64
		tAts, tScheds        []time.Time
		eIDs, eEpochs        []int64
		eStatuses, eMsgs     []string
		eAts, eScheds        []time.Time
	)
	// In id order, like the results applier: no deadlock between them.
	slices.SortFunc(marks, func(a, b mark) int { return cmp.Compare(a.runID, b.runID) })
	for _, m := range marks {
		if m.status == wire.StatusTriggered {
			tIDs, tSeqs, tAts, tEpochs = append(tIDs, m.runID), append(tSeqs, int64(m.seq)), append(tAts, m.at), append(tEpochs, m.epoch)
			tScheds = append(tScheds, m.scheduledAt)
			continue
		}
		eIDs, eStatuses, eAts, eMsgs, eEpochs = append(eIDs, m.runID), append(eStatuses, string(m.status)), append(eAts, m.at), append(eMsgs, m.message), append(eEpochs, m.epoch)
		eScheds = append(eScheds, m.scheduledAt)
	}
	b := &pgx.Batch{}
	if len(tIDs) > 0 {
		b.Queue(markTriggeredSQL, owner, tIDs, tSeqs, tAts, tEpochs, tScheds)
	}
	if len(eIDs) > 0 {
		b.Queue(markEndedSQL, owner, eIDs, eStatuses, eAts, eMsgs, eEpochs, eScheds)
	}
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record %d runs: %w", len(marks), err)
	}
	return nil
}
