package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// markTriggeredSQL records published runs. It never moves a run backwards:
// a fast worker's RUNNING or final status may already be applied when this
// write lands, and then only the trigger's time and sequence are added.
const markTriggeredSQL = `UPDATE job_runs r SET
		status = CASE WHEN r.status = 'SCHEDULED' THEN 'TRIGGERED' ELSE r.status END,
		triggered_at = u.at, stream_seq = u.seq
	FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[]) AS u(id, seq, at)
	WHERE r.id = u.id`

// markFailedSQL ends runs that could not be published at all.
const markFailedSQL = `UPDATE job_runs r SET status = 'FAILED', finished_at = u.at, message = u.message
	FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS u(id, at, message)
	WHERE r.id = u.id AND r.status = 'SCHEDULED'`

func markTriggered(ctx context.Context, pool *pgxpool.Pool, marks []mark) error {
	var (
		ids, fids []int64
		seqs      []int64
		ats, fats []time.Time
		fmsgs     []string
	)
	for _, m := range marks {
		if m.failed {
			fids, fats, fmsgs = append(fids, m.runID), append(fats, m.at), append(fmsgs, m.message)
			continue
		}
		ids, seqs, ats = append(ids, m.runID), append(seqs, int64(m.seq)), append(ats, m.at)
	}
	b := &pgx.Batch{}
	if len(ids) > 0 {
		b.Queue(markTriggeredSQL, ids, seqs, ats)
	}
	if len(fids) > 0 {
		b.Queue(markFailedSQL, fids, fats, fmsgs)
	}
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("mark %d runs triggered: %w", len(marks), err)
	}
	return nil
}
