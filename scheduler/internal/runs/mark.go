package runs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/alertoutbox"
	"github.com/jetjob/jetjob/shared/wire"
)

// Mark is an outcome dispatch records for a run it took from the wheel:
// TRIGGERED with its trigger's stream sequence, or an end without a
// publish — SKIPPED by the misfire policy, FAILED when the run could not
// even be encoded.
type Mark struct {
	RunID int64
	// ScheduledAt is the run's partition key.
	ScheduledAt time.Time
	// Epoch is the lease epoch the run was planned under (Planned.Epoch):
	// the write is fenced by it.
	Epoch   int64
	Status  wire.Status
	Seq     uint64 // TRIGGERED: the trigger's sequence in JETJOB_TRIGGERS
	At      time.Time
	Message string // SKIPPED, FAILED: why
}

// markTriggeredSQL records published runs (deferred, see the package doc).
// It never moves a run backwards, and leaves alone a run the results
// applier already moved with the trigger's sequence from its worker's
// events: no row version is written for it. A run moved by events without
// a sequence (an older worker) gets the trigger's time and sequence added.
var markTriggeredSQL = `UPDATE job_runs r SET
		status = CASE WHEN r.status = 'SCHEDULED' THEN 'TRIGGERED' ELSE r.status END,
		triggered_at = u.at, stream_seq = u.seq
	FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[], $5::bigint[], $6::timestamptz[]) AS u(id, seq, at, epoch, scheduled_at)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND (r.status = 'SCHEDULED' OR r.stream_seq IS NULL)
	  AND ` + fenced("r.shard", "$1", "u.epoch")

// markEndedSQL ends runs that were not published: SKIPPED by the misfire
// policy, or FAILED because they could not be encoded. The same statement
// writes the ends alert rules follow to their outbox (missed, failed).
var markEndedSQL = `WITH r AS (UPDATE job_runs r SET status = u.status, finished_at = u.at, message = u.message, recorded_at = now()
	FROM unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[], $7::timestamptz[])
		AS u(id, status, at, message, epoch, scheduled_at)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND ` + stillScheduled("r") + ` AND ` + fenced("r.shard", "$1", "u.epoch") + `
	` + alertoutbox.Returning + `)
` + alertoutbox.InsertFrom(alertoutbox.Run)

// Record writes a batch of marks for owner, one statement per kind in one
// round trip. A mark whose run's shard owner no longer holds at the mark's
// epoch writes nothing, and so does one for a run already past it. It sorts
// marks by run id (in place), like the results applier: rows are locked in
// the same order and the two never deadlock.
func Record(ctx context.Context, db DB, owner string, marks []Mark) error {
	var (
		tIDs, tSeqs, tEpochs []int64
		tAts, tScheds        []time.Time
		eIDs, eEpochs        []int64
		eStatuses, eMsgs     []string
		eAts, eScheds        []time.Time
	)
	slices.SortFunc(marks, func(a, b Mark) int { return cmp.Compare(a.RunID, b.RunID) })
	for _, m := range marks {
		if m.Status == wire.StatusTriggered {
			tIDs, tSeqs, tAts, tEpochs = append(tIDs, m.RunID), append(tSeqs, int64(m.Seq)), append(tAts, m.At), append(tEpochs, m.Epoch)
			tScheds = append(tScheds, m.ScheduledAt)
			continue
		}
		eIDs, eStatuses, eAts, eMsgs, eEpochs = append(eIDs, m.RunID), append(eStatuses, string(m.Status)), append(eAts, m.At), append(eMsgs, m.Message), append(eEpochs, m.Epoch)
		eScheds = append(eScheds, m.ScheduledAt)
	}
	b := &pgx.Batch{}
	if len(tIDs) > 0 {
		b.Queue(markTriggeredSQL, owner, tIDs, tSeqs, tAts, tEpochs, tScheds)
	}
	if len(eIDs) > 0 {
		b.Queue(markEndedSQL, owner, eIDs, eStatuses, eAts, eMsgs, eEpochs, eScheds)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record %d runs: %w", len(marks), err)
	}
	return nil
}
