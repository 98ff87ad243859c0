package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
	"github.com/jetjob/jetjob/shared/wire"
)

// Fire is a row the planner writes for one fire of a job: SCHEDULED, to be
// published, or SKIPPED at once by the job's misfire policy (with
// Message saying why).
type Fire struct {
	JobID       int64
	Group       string
	TriggerType wire.TriggerType
	Status      wire.Status
	ScheduledAt time.Time
	Message     string
	// Params, when set, are the run's own (a job's params template
	// rendered for this fire); nil: the job's.
	Params *string
	// Batch numbers the trigger batch the fire joins within one
	// InsertPlanned call: the fires with the same non-zero Batch become
	// one batch (one trigger message, see Planned.Batch), and must share
	// Group and ScheduledAt (the call's shard is theirs). 0: the run is
	// published alone. The caller decides which fires may share a message
	// (package planner); the numbers mean nothing beyond the call.
	Batch int
}

// Inserted is a row InsertPlanned wrote.
type Inserted struct {
	RunID       int64
	JobID       int64
	ScheduledAt time.Time
	// Batch is the run's batch id (Planned.Batch), 0 for a run published
	// alone.
	Batch int64
}

// insertPlannedSQL writes every fire of a planning batch in one statement.
//
// Trigger batches are fixed here, in the statement that writes their
// runs, so that no later reader can see part of one: ids come from
// job_runs' identity sequence in the CTE (one nextval per fire, taken
// whether or not its row is written, as the column default would), and
// each numbered chunk's batch is the smallest id taken for it — its first
// run's id, unless that fire was planned already and left out. The id is
// unique like every id of the sequence, so it names the batch alone. Rows
// are written, and returned, in the order of fires.
//
// The sequence is named (job_runs_id_seq, the identity's, migration 0004)
// rather than looked up with pg_get_serial_sequence, which PostgreSQL
// evaluates per row: 2 µs of the statement's 10 per run.
const insertPlannedSQL = `WITH u AS (
		SELECT u.*, nextval('job_runs_id_seq') AS id
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::int[], $9::text[])
			WITH ORDINALITY AS u(job_id, group_name, trigger_type, status, scheduled_at, message, chunk, params, ord)
	)
	INSERT INTO job_runs (id, job_id, group_name, shard, trigger_type, status, scheduled_at, finished_at, recorded_at, message, batch, params)
	OVERRIDING SYSTEM VALUE
	SELECT u.id, u.job_id, u.group_name, $1, u.trigger_type, u.status, u.scheduled_at,
		CASE WHEN u.status = 'SKIPPED' THEN now() END, CASE WHEN u.status = 'SKIPPED' THEN now() END, u.message,
		CASE WHEN u.chunk <> 0 THEN min(u.id) OVER (PARTITION BY u.chunk) END, u.params
	FROM u
	ORDER BY u.ord
	%s
	RETURNING id, job_id, scheduled_at, COALESCE(batch, 0)`

// Planning is idempotent through the unique key (job_id, scheduled_at,
// shard_index, attempt): a fire that already has a run (a backfill's at the
// same time, a takeover re-planning) is one run, which keeps its own batch.
// ON CONFLICT DO NOTHING says so, but makes every row a speculative
// insertion (a probe of the key first, a confirmation after), 15 % of the
// statement. A fire meets its run rarely, so the plain insert is tried
// first, in a savepoint, and only a unique violation sends the batch
// through the idempotent one.
var (
	insertPlannedPlainSQL      = fmt.Sprintf(insertPlannedSQL, "")
	insertPlannedIdempotentSQL = fmt.Sprintf(insertPlannedSQL, "ON CONFLICT (job_id, scheduled_at, shard_index, attempt) DO NOTHING")
)

// InsertPlanned writes the fires of shard in tx, which must have passed
// Fence first, and returns the rows it wrote; a fire that already has a
// run is left out. Scheduled times come back at PostgreSQL's resolution
// (microseconds).
func InsertPlanned(ctx context.Context, tx pgx.Tx, shard int, fires []Fire) ([]Inserted, error) {
	if len(fires) == 0 {
		return nil, nil
	}
	if err := checkBatches(fires); err != nil {
		return nil, fmt.Errorf("insert %d planned runs of shard %d: %w", len(fires), shard, err)
	}
	jobIDs := make([]int64, len(fires))
	groups, types, statuses, messages := make([]string, len(fires)), make([]string, len(fires)), make([]string, len(fires)), make([]string, len(fires))
	times := make([]time.Time, len(fires))
	chunks := make([]int32, len(fires))
	params := make([]*string, len(fires))
	for i, f := range fires {
		jobIDs[i], groups[i], types[i], statuses[i] = f.JobID, f.Group, string(f.TriggerType), string(f.Status)
		times[i], messages[i], chunks[i], params[i] = f.ScheduledAt, f.Message, int32(f.Batch), f.Params
	}
	args := []any{shard, jobIDs, groups, types, statuses, times, messages, chunks, params}
	written, err := insertSavepoint(ctx, tx, insertPlannedPlainSQL, args)
	if pgerr.Unique(err) {
		written, err = collectInserted(tx.Query(ctx, insertPlannedIdempotentSQL, args...))
	}
	if err != nil {
		return nil, fmt.Errorf("insert %d planned runs of shard %d: %w", len(fires), shard, err)
	}
	return written, nil
}

// insertSavepoint runs the insert sql in a savepoint of tx, which it rolls
// back to if the insert fails, leaving tx usable.
func insertSavepoint(ctx context.Context, tx pgx.Tx, sql string, args []any) ([]Inserted, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	written, err := collectInserted(sp.Query(ctx, sql, args...))
	if err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil {
			return nil, fmt.Errorf("%w (and rolling back its savepoint: %v)", err, rerr)
		}
		return nil, err
	}
	return written, sp.Commit(ctx)
}

func collectInserted(rows pgx.Rows, _ error) ([]Inserted, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Inserted, error) {
		var in Inserted
		return in, r.Scan(&in.RunID, &in.JobID, &in.ScheduledAt, &in.Batch)
	})
}

// checkBatches refuses fires whose batch numbers would put runs of two
// groups or two instants into one message, or a SKIPPED run into one: a
// batch is published as one message on its group's subject when its
// (shared) time comes, so a mixed one would publish some runs late, or to
// the wrong group's workers.
func checkBatches(fires []Fire) error {
	first := map[int]*Fire{}
	for i := range fires {
		f := &fires[i]
		if f.Batch == 0 {
			continue
		}
		if f.Batch < 0 || f.Status != wire.StatusScheduled {
			return fmt.Errorf("fire of job %d at %s: batch %d for a %s run", f.JobID, f.ScheduledAt, f.Batch, f.Status)
		}
		b, ok := first[f.Batch]
		if !ok {
			first[f.Batch] = f
			continue
		}
		if b.Group != f.Group || b.ScheduledAt.UnixMicro() != f.ScheduledAt.UnixMicro() {
			return fmt.Errorf("batch %d mixes job %d (group %s at %s) and job %d (group %s at %s)",
				f.Batch, b.JobID, b.Group, b.ScheduledAt, f.JobID, f.Group, f.ScheduledAt)
		}
	}
	return nil
}

// InsertManual writes a manual run of p's job in tx as SCHEDULED at the
// database's clock plus after (0: now, "trigger now"; more: a run once
// after a delay), or at at when it is not zero, and sets p.RunID and
// p.ScheduledAt. p carries the job's fields (JobID, Group, Shard, and what
// the trigger needs); params, when non-nil, are stored as the run's own,
// replacing the job's for this run and for a recovery of it. p.Message is
// stored as the run's message; priority, when non-nil, as the run's own
// priority (job_runs.priority), which a recovery reads instead of its
// job's.
func InsertManual(ctx context.Context, tx pgx.Tx, p *Planned, params *string, priority *int, at time.Time, after time.Duration) error {
	var atArg *time.Time
	if !at.IsZero() {
		atArg = &at
	}
	err := tx.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, params, message, priority)
		VALUES ($1, $2, $3, $4, 'SCHEDULED', COALESCE($7::timestamptz, clock_timestamp() + $8 * interval '1 microsecond'), $5, $6, $9)
		RETURNING id, scheduled_at`,
		p.JobID, p.Group, p.Shard, string(wire.TriggerManual), params, wire.TruncateMessage(p.Message), atArg, after.Microseconds(),
		priority).Scan(&p.RunID, &p.ScheduledAt)
	if err != nil {
		return fmt.Errorf("write the run: %w", err)
	}
	return nil
}

// InsertBackfill writes the runs of backfill operation id at the given
// times in tx and returns them as copies of job (the job's fields of a
// Planned) with RunID and ScheduledAt set, and each run's own params when
// params (nil: none; else one per time, nil for none) gives them. A fire that already has a run
// is left alone (the unique key), so the result may be shorter than at.
func InsertBackfill(ctx context.Context, tx pgx.Tx, id int64, job Planned, at []time.Time, params []*string) ([]Planned, error) {
	if len(at) == 0 {
		return nil, nil
	}
	if params == nil {
		params = make([]*string, len(at))
	}
	rows, _ := tx.Query(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, backfill_id, message, params)
		SELECT $1, $2, $3, $4, 'SCHEDULED', u.t, $5, $6, u.p FROM unnest($7::timestamptz[], $8::text[]) AS u(t, p)
		ON CONFLICT (job_id, scheduled_at, shard_index, attempt) DO NOTHING
		RETURNING id, scheduled_at, params`, job.JobID, job.Group, job.Shard, string(wire.TriggerBackfill), id,
		fmt.Sprintf("backfill %d", id), at, params)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Planned, error) {
		p := job
		p.TriggerType = wire.TriggerBackfill
		var own *string
		err := r.Scan(&p.RunID, &p.ScheduledAt, &own)
		if own != nil {
			p.Params = *own
		}
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("backfill %d: write runs: %w", id, err)
	}
	return out, nil
}
