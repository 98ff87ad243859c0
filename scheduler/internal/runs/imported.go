package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// Imported is a finished run of another scheduler, with its job's fields
// (Group, Shard), for InsertImported.
type Imported struct {
	JobID                              int64
	Group                              string
	Shard                              int
	ScheduledAt, StartedAt, FinishedAt time.Time // StartedAt, FinishedAt zero: unknown
	Status                             wire.Status
	ShardIndex, ShardTotal             int
	WorkerID, Params, Message          string
}

// InsertImported writes finished runs of another scheduler in tx, trigger
// type wire.TriggerImport, born terminal (no transition ever touches them).
// A run of the same job, time and shard part is left as it is (the unique
// key), so importing twice writes nothing twice. It returns the job ids of
// the runs written, one per run.
func InsertImported(ctx context.Context, tx pgx.Tx, in []Imported) ([]int64, error) {
	if len(in) == 0 {
		return nil, nil
	}
	n := len(in)
	var (
		jobIDs, shardNo, shardIndex, shardTotal = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		groups, statuses, workers, msgs         = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		params                                  = make([]*string, n)
		at, started, finished                   = make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	)
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	for i, r := range in {
		jobIDs[i], groups[i], shardNo[i] = r.JobID, r.Group, int64(r.Shard)
		statuses[i], workers[i], msgs[i] = string(r.Status), r.WorkerID, wire.TruncateMessage(r.Message)
		if r.Params != "" {
			p := r.Params
			params[i] = &p
		}
		at[i], started[i], finished[i] = opt(r.ScheduledAt), opt(r.StartedAt), opt(r.FinishedAt)
		shardIndex[i], shardTotal[i] = int64(r.ShardIndex), int64(r.ShardTotal)
	}
	rows, _ := tx.Query(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at,
			triggered_at, started_at, finished_at, recorded_at, shard_index, shard_total, worker_id, params, message)
		SELECT j, g, s, $1, st, a, a, sa, fa, now(), si, stt, w, p, m
		FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::timestamptz[], $7::timestamptz[],
			$8::timestamptz[], $9::bigint[], $10::bigint[], $11::text[], $12::text[], $13::text[])
			AS t(j, g, s, st, a, sa, fa, si, stt, w, p, m)
		ON CONFLICT (job_id, scheduled_at, shard_index, attempt) DO NOTHING
		RETURNING job_id`,
		string(wire.TriggerImport), jobIDs, groups, shardNo, statuses, at, started, finished, shardIndex, shardTotal, workers, params, msgs)
	written, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("write the imported runs: %w", err)
	}
	return written, nil
}
