package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// A group's cap and rate limit (issue #33, docs/flow-control.md, "Caps,
// keys, rates and priority"): stored on its row (migration 0030), carried
// to the workers in each run's trigger (wire.Flow), enforced there through
// JETJOB_LOCKS. They are capacity settings, like a job's max_concurrency:
// set by the group's operators, declared in a jobs file's groups.

// GroupLimits are a group's cap and rate limit; zero values mean none.
type GroupLimits struct {
	// MaxRunning: at most this many runs of the group execute at once
	// across its workers (0 to wire.MaxConcurrencyLimit; 0: no cap).
	MaxRunning int
	// Rate limits the starts of all the group's runs (Count 0: none).
	Rate wire.Rate
}

// limitsAudit is a group's limits as the audit log keeps them.
type limitsAudit struct {
	MaxRunning int    `json:"max_running,omitempty"`
	RateLimit  string `json:"rate_limit,omitempty"`
}

func (l GroupLimits) audit() limitsAudit {
	a := limitsAudit{MaxRunning: l.MaxRunning}
	if l.Rate.Count > 0 {
		a.RateLimit = l.Rate.String()
	}
	return a
}

// GroupLimitsChange is what SetGroupLimits changes: a nil field is kept.
type GroupLimitsChange struct {
	MaxRunning *int
	Rate       *wire.Rate
}

// SetGroupLimits changes a group's cap and rate limit, recorded as
// group.update by a with the limits before and after; a change to what
// the group already has records nothing. ErrNotFound for no such group.
// The caller validates the values (the table's checks hold them too).
func (s *Store) SetGroupLimits(ctx context.Context, a Actor, name string, c GroupLimitsChange) (Group, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var cur GroupLimits
		err := tx.QueryRow(ctx, `SELECT max_running, rate_count, rate_period_ms FROM job_groups WHERE name = $1 FOR UPDATE`,
			name).Scan(&cur.MaxRunning, &cur.Rate.Count, &cur.Rate.PeriodMS)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("group %q: %w", name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		next := cur
		if c.MaxRunning != nil {
			next.MaxRunning = *c.MaxRunning
		}
		if c.Rate != nil {
			next.Rate = wire.Rate{Count: c.Rate.Count, PeriodMS: c.Rate.PeriodMS}
		}
		if next == cur {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE job_groups SET max_running = $2, rate_count = $3, rate_period_ms = $4 WHERE name = $1`,
			name, next.MaxRunning, next.Rate.Count, next.Rate.PeriodMS); err != nil {
			return fmt.Errorf("set limits: %w", err)
		}
		return writeAudit(ctx, tx, a, "group.update", groupTarget(name), name,
			groupAudit{Name: name, limitsAudit: cur.audit()}, groupAudit{Name: name, limitsAudit: next.audit()})
	})
	if err != nil {
		return Group{}, fmt.Errorf("set the limits of group %q: %w", name, err)
	}
	return s.GetGroup(ctx, name)
}

// QueuedRun is a run of a group's queue view: a run in flight, or one
// that JETJOB_LOCKS names as holding or waiting for the group's slots.
type QueuedRun struct {
	ID          int64
	JobID       int64
	JobName     string // "" when the job was deleted
	Status      string
	ScheduledAt time.Time
	WorkerID    string
}

// maxInFlightListed bounds the runs in flight a queue view lists.
const maxInFlightListed = 500

// GroupInFlight returns the group's runs in flight, as a drain counts
// them (inFlightSQL: runs waiting for a resume are not), oldest
// fire first, at most 500, and whether there were more.
func (s *Store) GroupInFlight(ctx context.Context, group string) ([]QueuedRun, bool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT r.id, r.job_id, coalesce(j.name, ''), r.status, r.scheduled_at, r.worker_id
		FROM job_runs r LEFT JOIN jobs j ON j.id = r.job_id LEFT JOIN job_groups g ON g.name = r.group_name
		WHERE r.group_name = $1 AND `+inFlightSQL+`
		ORDER BY r.scheduled_at, r.id LIMIT $2`, group, maxInFlightListed+1)
	rs, err := pgx.CollectRows(rows, scanQueuedRun)
	if err != nil {
		return nil, false, fmt.Errorf("runs in flight of group %q: %w", group, err)
	}
	more := len(rs) > maxInFlightListed
	if more {
		rs = rs[:maxInFlightListed]
	}
	return rs, more, nil
}

// GroupRuns returns the runs of group among ids, by id, in one query: what
// a queue view names its lock holders and waiters with. A run of another
// group (a key naming it would be garbage) is left out.
func (s *Store) GroupRuns(ctx context.Context, group string, ids []int64) (map[int64]QueuedRun, error) {
	out := make(map[int64]QueuedRun, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := s.pool.Query(ctx, `SELECT r.id, r.job_id, coalesce(j.name, ''), r.status, r.scheduled_at, r.worker_id
		FROM job_runs r LEFT JOIN jobs j ON j.id = r.job_id
		WHERE r.id = ANY($2) AND r.group_name = $1`, group, ids)
	rs, err := pgx.CollectRows(rows, scanQueuedRun)
	if err != nil {
		return nil, fmt.Errorf("runs of group %q: %w", group, err)
	}
	for _, r := range rs {
		out[r.ID] = r
	}
	return out, nil
}

func scanQueuedRun(r pgx.CollectableRow) (QueuedRun, error) {
	var q QueuedRun
	err := r.Scan(&q.ID, &q.JobID, &q.JobName, &q.Status, &q.ScheduledAt, &q.WorkerID)
	return q, err
}
