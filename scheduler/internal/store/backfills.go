package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Backfill is one backfill operation (package scheduler/internal/backfill).
type Backfill struct {
	ID, JobID int64
	Group     string
	From, To  time.Time
	// Planned fires in the range, Triggered runs written, Existing fires
	// that had a run already, Done runs ended (counted when read).
	Planned, Triggered, Existing, Done int
	// InFlight is the operation's runs not yet ended (counted when read).
	InFlight int
	// Cursor is the last nominal fire written; nil before the first.
	Cursor     *time.Time
	State      string // running, completed, cancelled
	CreatedBy  string
	CreatedAt  time.Time
	FinishedAt *time.Time
}

// backfillColumns reads an operation with its live counts.
const backfillColumns = `b.id, b.job_id, b.group_name, b.range_from, b.range_to, b.planned, b.triggered,
	b.existing, b.cursor_at, b.state, b.created_by, b.created_at, b.finished_at,
	(SELECT count(*) FILTER (WHERE r.status NOT IN ('SCHEDULED', 'TRIGGERED', 'RUNNING'))
		FROM job_runs r WHERE r.backfill_id = b.id),
	(SELECT count(*) FILTER (WHERE r.status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING'))
		FROM job_runs r WHERE r.backfill_id = b.id)`

func scanBackfill(row pgx.Row) (Backfill, error) {
	var b Backfill
	err := row.Scan(&b.ID, &b.JobID, &b.Group, &b.From, &b.To, &b.Planned, &b.Triggered, &b.Existing,
		&b.Cursor, &b.State, &b.CreatedBy, &b.CreatedAt, &b.FinishedAt, &b.Done, &b.InFlight)
	return b, err
}

func backfillTarget(id int64) string { return "backfill:" + strconv.FormatInt(id, 10) }

// CreateBackfill records a running backfill of job over [from, to) with
// planned fires, recording a job.backfill by a.
func (s *Store) CreateBackfill(ctx context.Context, a Actor, j Job, from, to time.Time, planned int) (Backfill, error) {
	var out Backfill
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO backfills (job_id, group_name, range_from, range_to, planned, created_by)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, j.ID, j.Group, from, to, planned, a.Name).Scan(&id); err != nil {
			if pgerr.ForeignKey(err) {
				return fmt.Errorf("job %d: %w", j.ID, ErrNotFound)
			}
			return err
		}
		var err error
		if out, err = scanBackfill(tx.QueryRow(ctx, `SELECT `+backfillColumns+` FROM backfills b WHERE b.id = $1`, id)); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "job.backfill", JobTarget(j.ID), j.Group, nil,
			map[string]any{"backfill": id, "from": from, "to": to, "planned": planned})
	})
	if err != nil {
		return out, fmt.Errorf("create backfill of job %d: %w", j.ID, err)
	}
	return out, nil
}

// GetBackfill returns one operation.
func (s *Store) GetBackfill(ctx context.Context, id int64) (Backfill, error) {
	return rowOf(ctx, s.pool, "backfill", `SELECT `+backfillColumns+` FROM backfills b WHERE b.id = $1`, id, scanBackfill)
}

// BackfillGroup is the group of an operation's job (for permissions).
func (s *Store) BackfillGroup(ctx context.Context, id int64) (string, error) {
	return columnOf[string](ctx, s.pool, "backfill", `SELECT group_name FROM backfills WHERE id = $1`, id)
}

// ListBackfills returns a job's latest operations, newest first.
func (s *Store) ListBackfills(ctx context.Context, jobID int64, limit int) ([]Backfill, error) {
	bs, err := s.SearchBackfills(ctx, BackfillFilter{JobID: jobID, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("of job %d: %w", jobID, err)
	}
	return bs, nil
}

// BackfillFilter selects operations: of one job, one group, the groups a
// caller may read (Groups; nil for all), in one state; the zero value of a
// field selects everything. Limit is required.
type BackfillFilter struct {
	JobID  int64
	Group  string
	Groups []string
	State  string
	Limit  int
}

// SearchBackfills returns the operations f selects, newest first: the
// console's list of every backfill, and a job's.
func (s *Store) SearchBackfills(ctx context.Context, f BackfillFilter) ([]Backfill, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+backfillColumns+` FROM backfills b
		WHERE ($1 = 0 OR b.job_id = $1) AND ($2 = '' OR b.group_name = $2)
		  AND ($3::text[] IS NULL OR b.group_name = ANY($3)) AND ($4 = '' OR b.state = $4)
		ORDER BY b.id DESC LIMIT $5`, f.JobID, f.Group, f.Groups, f.State, f.Limit)
	bs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Backfill, error) { return scanBackfill(r) })
	if err != nil {
		return nil, fmt.Errorf("list backfills: %w", err)
	}
	return bs, nil
}

// CancelBackfill stops a running operation: no further run is written,
// and its runs written but not yet published end CANCELLED; it returns
// the operation and those runs (which may sit in a wheel already: the
// caller sends them a kill). Cancelling an operation that ended changes
// nothing.
func (s *Store) CancelBackfill(ctx context.Context, a Actor, id int64) (Backfill, []int64, error) {
	var (
		out       Backfill
		cancelled []int64
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var group string
		err := tx.QueryRow(ctx, `UPDATE backfills SET state = 'cancelled', finished_at = now()
			WHERE id = $1 AND state = 'running' RETURNING group_name`, id).Scan(&group)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			out, err = scanBackfill(tx.QueryRow(ctx, `SELECT `+backfillColumns+` FROM backfills b WHERE b.id = $1`, id))
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("backfill %d: %w", id, ErrNotFound)
			}
			return err
		case err != nil:
			return err
		}
		if cancelled, err = runs.CancelBackfill(ctx, tx, id); err != nil {
			return err
		}
		if out, err = scanBackfill(tx.QueryRow(ctx, `SELECT `+backfillColumns+` FROM backfills b WHERE b.id = $1`, id)); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "backfill.cancel", backfillTarget(id), group, nil,
			map[string]any{"backfill": id, "cancelled_runs": len(cancelled)})
	})
	if err != nil {
		return out, nil, fmt.Errorf("cancel backfill %d: %w", id, err)
	}
	return out, cancelled, nil
}

// BackfillStep decides the next fires of a running operation to write:
// nominal fire times, their actual scheduled_at, and whether the range
// holds no more after them.
type BackfillStep func(b Backfill, j Job) (nominal, at []time.Time, exhausted bool, err error)

// StepBackfills advances up to limit running operations, each claimed
// (FOR UPDATE SKIP LOCKED) so that schedulers share them without waiting
// on each other: it writes the runs step chooses, moves the cursor,
// completes an exhausted operation once its runs have ended, and returns
// the runs written, for the caller to fire.
func (s *Store) StepBackfills(ctx context.Context, limit int, step BackfillStep) ([]runs.Planned, error) {
	var out []runs.Planned
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+backfillColumns+` FROM backfills b WHERE b.state = 'running'
			ORDER BY b.id LIMIT $1 FOR UPDATE OF b SKIP LOCKED`, limit)
		ops, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Backfill, error) { return scanBackfill(r) })
		if err != nil {
			return fmt.Errorf("read running backfills: %w", err)
		}
		for _, b := range ops {
			j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, b.JobID))
			if err != nil {
				return fmt.Errorf("backfill %d: read job %d: %w", b.ID, b.JobID, err)
			}
			nominal, at, exhausted, err := step(b, j)
			if err != nil {
				return fmt.Errorf("backfill %d: %w", b.ID, err)
			}
			written, err := insertBackfillRuns(ctx, tx, b, j, at)
			if err != nil {
				return err
			}
			out = append(out, written...)
			cursor := b.Cursor
			if len(nominal) > 0 {
				cursor = &nominal[len(nominal)-1]
			}
			state := "running"
			if exhausted && b.InFlight == 0 && len(written) == 0 {
				state = "completed"
			}
			if _, err := tx.Exec(ctx, `UPDATE backfills SET cursor_at = $2, triggered = triggered + $3,
				existing = existing + $4, state = $5, finished_at = CASE WHEN $5 = 'completed' THEN now() END
				WHERE id = $1`, b.ID, cursor, len(written), len(at)-len(written), state); err != nil {
				return fmt.Errorf("backfill %d: advance: %w", b.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("step backfills: %w", err)
	}
	return out, nil
}

// insertBackfillRuns writes the runs of an operation at the given times;
// a fire that already has a run is left alone.
func insertBackfillRuns(ctx context.Context, tx pgx.Tx, b Backfill, j Job, at []time.Time) ([]runs.Planned, error) {
	var params []*string
	if j.ParamsTemplate {
		// Each covered fire gets its own params: its own day.
		params = make([]*string, len(at))
		for i, t := range at {
			p, err := j.RenderParams(t)
			if err != nil {
				return nil, fmt.Errorf("backfill %d: %w", b.ID, err)
			}
			params[i] = p
		}
	}
	g, err := readGroupRow(ctx, tx, j.Group, false)
	if err != nil {
		return nil, fmt.Errorf("backfill %d: %w", b.ID, err)
	}
	return runs.InsertBackfill(ctx, tx, b.ID, runs.Planned{JobID: j.ID, Group: j.Group, Shard: j.Shard, Handler: j.Handler, Params: j.Params,
		TriggerType: wire.TriggerBackfill, Timeout: j.Timeout, MisfirePolicy: policy.Misfire(j.MisfirePolicy),
		RouteStrategy: policy.Route(j.RouteStrategy), BlockStrategy: policy.Block(j.BlockStrategy), MisfireThreshold: j.MisfireThreshold,
		MaxConcurrency: j.MaxConcurrency, Shards: j.Shards, Workflow: j.Kind == KindWorkflow, Script: j.Script, Secrets: len(j.SecretNames) > 0,
		Flow: runFlow(&j, g, nil)}, at, params)
}
