package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// Run is one trigger attempt of a job.
type Run struct {
	ID          int64
	JobID       int64
	Group       string
	Shard       int
	TriggerType string
	Status      wire.Status
	ScheduledAt time.Time
	TriggeredAt *time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
	Attempt     int
	RetryOf     *int64
	ShardIndex  int
	ShardTotal  int
	WorkerID    string
	Params      *string
	Message     string
	StreamSeq   *int64
	ParentRun   *int64
	AlarmStatus string
	AlarmError  string
}

const runColumns = `id, job_id, group_name, shard, trigger_type, status, scheduled_at, triggered_at,
	started_at, finished_at, attempt, retry_of, shard_index, shard_total, worker_id, params, message, stream_seq,
	parent_run, alarm_status, alarm_error`

func scanRun(row pgx.Row) (Run, error) {
	var r Run
	err := row.Scan(&r.ID, &r.JobID, &r.Group, &r.Shard, &r.TriggerType, &r.Status, &r.ScheduledAt,
		&r.TriggeredAt, &r.StartedAt, &r.FinishedAt, &r.Attempt, &r.RetryOf, &r.ShardIndex,
		&r.ShardTotal, &r.WorkerID, &r.Params, &r.Message, &r.StreamSeq, &r.ParentRun, &r.AlarmStatus, &r.AlarmError)
	return r, err
}

// GetRun returns one run.
func (s *Store) GetRun(ctx context.Context, id int64) (Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("get run %d: %w", id, err)
	}
	return r, nil
}

// ListRuns returns up to limit runs of a job, newest first, with id < before
// (0 for the first page).
func (s *Store) ListRuns(ctx context.Context, jobID, before int64, limit int) ([]Run, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE job_id = $1 AND ($2 = 0 OR id < $2) ORDER BY id DESC LIMIT $3`, jobID, before, limit)
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Run, error) { return scanRun(r) })
	if err != nil {
		return nil, fmt.Errorf("list runs of job %d: %w", jobID, err)
	}
	return rs, nil
}

// PlannedRun is a run written as SCHEDULED together with what a trigger
// needs from its job: what the planner hands the wheel and the wheel hands
// dispatch.
type PlannedRun struct {
	RunID int64
	JobID int64
	Group string
	Shard int
	// Epoch is the lease epoch of Shard under which the run was planned
	// or recovered: it may be published, and recorded, only while this
	// scheduler still holds the shard at that epoch. 0 for a manual run,
	// which its API call publishes directly (its Msg-Id de-duplicates a
	// later recovery).
	Epoch int64
	// Recovered marks a run found SCHEDULED in the table rather than
	// planned by this process: it may already have been published.
	Recovered     bool
	Handler       string
	Params        string
	TriggerType   wire.TriggerType
	ScheduledAt   time.Time
	Attempt       int
	ShardIndex    int
	ShardTotal    int
	Timeout       time.Duration
	MisfirePolicy string
	RouteStrategy string
	BlockStrategy string
	// Target is the worker a directed trigger goes to, "" for the group's
	// shared queue. Dispatch sets it when it routes the run; a part of a
	// sharding broadcast keeps it in job_runs.worker_id, so that a
	// recovered part goes back to its worker (or to the shared queue if
	// that worker is gone).
	Target string
}

// Trigger is the wire message of a planned run.
func (p *PlannedRun) Trigger(misfireThreshold time.Duration) *wire.Trigger {
	return &wire.Trigger{
		V:                  wire.Version,
		RunID:              p.RunID,
		JobID:              p.JobID,
		Group:              p.Group,
		Handler:            p.Handler,
		Params:             p.Params,
		TriggerType:        p.TriggerType,
		ScheduledAt:        p.ScheduledAt,
		Attempt:            p.Attempt,
		ShardIndex:         p.ShardIndex,
		ShardTotal:         p.ShardTotal,
		TimeoutMS:          p.Timeout.Milliseconds(),
		MisfirePolicy:      p.MisfirePolicy,
		MisfireThresholdMS: misfireThreshold.Milliseconds(),
		BlockStrategy:      p.BlockStrategy,
	}
}

// InsertManualRun writes a manual ("trigger now") run of a job as SCHEDULED
// at now. params, when non-nil, replace the job's params for this run.
func (s *Store) InsertManualRun(ctx context.Context, jobID int64, params *string) (PlannedRun, error) {
	j, err := s.GetJob(ctx, jobID)
	if err != nil {
		return PlannedRun{}, err
	}
	p := PlannedRun{
		JobID: j.ID, Group: j.Group, Shard: j.Shard, Handler: j.Handler, Params: j.Params,
		TriggerType: wire.TriggerManual, Timeout: j.Timeout, MisfirePolicy: j.MisfirePolicy,
		RouteStrategy: j.RouteStrategy, BlockStrategy: j.BlockStrategy,
	}
	if params != nil {
		p.Params = *params
	}
	err = s.pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, params)
		VALUES ($1, $2, $3, $4, 'SCHEDULED', clock_timestamp(), $5) RETURNING id, scheduled_at`,
		j.ID, j.Group, j.Shard, string(wire.TriggerManual), params).Scan(&p.RunID, &p.ScheduledAt)
	if err != nil {
		return p, fmt.Errorf("insert manual run of job %d: %w", jobID, err)
	}
	return p, nil
}

// ErrRunEnded is returned when killing a run that already ended.
var ErrRunEnded = errors.New("run already ended")

// CancelRun records a kill of a run. A run not yet published ends
// CANCELLED at once; a published or running one is left to its worker,
// which reports CANCELLED when it stops it (the caller sends the kill
// request). It returns the run as it is after the call.
func (s *Store) CancelRun(ctx context.Context, id int64, reason string) (Run, error) {
	var out Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return fmt.Errorf("run %d: %w (%s)", id, ErrRunEnded, r.Status)
		}
		if r.Status == wire.StatusScheduled {
			r, err = scanRun(tx.QueryRow(ctx, `UPDATE job_runs SET status = 'CANCELLED', finished_at = now(), recorded_at = now(), message = $2
				WHERE id = $1 AND scheduled_at = $3 RETURNING `+runColumns, id, wire.TruncateMessage(reason), r.ScheduledAt))
		}
		out = r
		return err
	})
	if err != nil {
		return out, fmt.Errorf("cancel run %d: %w", id, err)
	}
	return out, nil
}
