package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
)

// Schedule operations of a job (issue #14): its own misfire threshold and
// catch-up cap, jitter, start/end bounds, and the note of a pause. They
// live beside the job's other columns but are written by setSchedOps, so
// that the long INSERT/UPDATE statements of jobs.go stay as they were.

const schedOpsColumns = `misfire_threshold_ms, max_catchup, jitter_ms, start_at, end_at, paused_note, paused_at, paused_by`

// schedOpsScan holds the nullable columns while a job row is scanned.
type schedOpsScan struct {
	thresholdMS *int64
	maxCatchup  *int
	jitterMS    int64
}

func (o schedOpsScan) into(j *Job) {
	if o.thresholdMS != nil {
		j.MisfireThreshold = time.Duration(*o.thresholdMS) * time.Millisecond
	}
	if o.maxCatchup != nil {
		j.MaxCatchup = *o.maxCatchup
	}
	j.Jitter = time.Duration(o.jitterMS) * time.Millisecond
}

// setSchedOps writes a job's schedule operation fields (0 threshold and
// catch-up: NULL, the scheduler's defaults) and returns the job.
func setSchedOps(ctx context.Context, tx pgx.Tx, id int64, j *Job) (Job, error) {
	var threshold *int64
	if j.MisfireThreshold > 0 {
		ms := j.MisfireThreshold.Milliseconds()
		threshold = &ms
	}
	var catchup *int
	if j.MaxCatchup > 0 {
		catchup = &j.MaxCatchup
	}
	// An enabled job is not paused: a write that enables it (a PUT with
	// enabled, jetjob apply) drops the note of its last disable, as
	// SetEnabledWith does.
	out, err := scanJob(tx.QueryRow(ctx, `UPDATE jobs SET misfire_threshold_ms = $2, max_catchup = $3,
		jitter_ms = $4, start_at = $5, end_at = $6,
		paused_note = CASE WHEN enabled THEN '' ELSE paused_note END,
		paused_at = CASE WHEN enabled THEN NULL ELSE paused_at END,
		paused_by = CASE WHEN enabled THEN '' ELSE paused_by END
		WHERE id = $1 RETURNING `+jobColumns,
		id, threshold, catchup, j.Jitter.Milliseconds(), j.StartAt, j.EndAt))
	if err != nil {
		return out, fmt.Errorf("set schedule options: %w", err)
	}
	return out, nil
}

// Timing is the job's fire times: its schedule within start/end, with its
// jitter (package timing).
func (j *Job) Timing() (timing.Plan, error) {
	sched, err := j.Schedule()
	if err != nil {
		return timing.Plan{}, err
	}
	tp := timing.Plan{Sched: sched, JobID: j.ID, Jitter: j.Jitter}
	if j.StartAt != nil {
		tp.Start = *j.StartAt
	}
	if j.EndAt != nil {
		tp.End = *j.EndAt
	}
	return tp, nil
}

// CatchUp says what a re-enabled job does with the fires it missed while
// disabled.
type CatchUp string

const (
	// CatchUpPolicy replays them through the job's misfire policy (skip,
	// fire_once, fire_all), as after any other outage: the default.
	CatchUpPolicy CatchUp = "policy"
	// CatchUpNone resumes the schedule from now: no missed fire is run
	// or recorded.
	CatchUpNone CatchUp = "none"
)

// EnableOptions are what POST /jobs/{id}/enable and /disable carry.
type EnableOptions struct {
	Enabled bool
	// Note says why a job is disabled (kept until it is enabled again).
	Note string
	// CatchUp applies when enabling; "" is CatchUpPolicy.
	CatchUp CatchUp
}

// SetEnabledWith enables or disables a job. Disabling removes its
// planned, not yet triggered runs, rewinds next_fire_at to the first of
// them and records the note, when and by whom; so that, enabled again with
// CatchUpPolicy, the fires it missed meanwhile go through its misfire
// policy. Enabling clears the note.
//
// A change is recorded as job.enable or job.disable by a; asking for the
// state the job is already in changes nothing and records nothing.
func (s *Store) SetEnabledWith(ctx context.Context, a Actor, id int64, o EnableOptions) (Job, error) {
	var out Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = setEnabled(ctx, tx, a, id, o)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("set job %d enabled=%t: %w", id, o.Enabled, err)
	}
	return out, nil
}

// DisableJobTx disables a job in tx, as SetEnabledWith does, with note:
// for the alert engine's pause after consecutive failures, which must
// happen in the transaction that counts the failure.
func DisableJobTx(ctx context.Context, tx pgx.Tx, a Actor, id int64, note string) (Job, error) {
	out, err := setEnabled(ctx, tx, a, id, EnableOptions{Note: note})
	if err != nil {
		return out, fmt.Errorf("disable job %d: %w", id, err)
	}
	return out, nil
}

// setEnabled is SetEnabledWith in tx.
func setEnabled(ctx context.Context, tx pgx.Tx, a Actor, id int64, o EnableOptions) (Job, error) {
	var out Job
	err := func() error {
		cur, err := lockJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := notInline(cur); err != nil {
			return err
		}
		if cur.Enabled == o.Enabled {
			out = cur
			return nil
		}
		next := cur.NextFireAt
		switch {
		case !o.Enabled:
			if next, err = suspendPlanned(ctx, tx, &cur, false); err != nil {
				return err
			}
		case next == nil || o.CatchUp == CatchUpNone:
			// A job that never had a next fire (e.g. created disabled),
			// or resumed without catch-up, starts from now.
			if next, _, err = firstFire(&cur, time.Now()); err != nil {
				return err
			}
		}
		var pausedAt any // NULL when enabling
		note, by := "", ""
		if !o.Enabled {
			pausedAt, note, by = time.Now(), o.Note, a.Name
		}
		out, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET enabled = $2, next_fire_at = $3,
			paused_note = $4, paused_at = $5, paused_by = $6,
			version = version + 1, updated_at = now() WHERE id = $1 RETURNING `+jobColumns,
			id, o.Enabled, next, note, pausedAt, by))
		if err != nil {
			return err
		}
		action := "job.disable"
		if o.Enabled {
			action = "job.enable"
		}
		return writeAudit(ctx, tx, a, action, JobTarget(id), out.Group, jobDoc(cur), jobDoc(out))
	}()
	return out, err
}

// suspendPlanned deletes the job's planned, not yet due runs and returns
// its next fire rewound to the first of them, so that planning it again
// (re-enabled, or its group resumed) finds them and the misfire policy
// judges them: the one catch-up path of a disabled job and a paused group.
// For a group's pause (pause) the job's retries not yet due are kept: they
// wait for the resume (runs.DeletePlannedForPause).
func suspendPlanned(ctx context.Context, tx pgx.Tx, cur *Job, pause bool) (*time.Time, error) {
	next := cur.NextFireAt
	del := runs.DeletePlanned
	if pause {
		del = runs.DeletePlannedForPause
	}
	first, err := notifyDeleted(ctx, tx, cur.ID, del)
	if err != nil {
		return nil, err
	}
	if first != nil {
		if first, err = nominalOf(cur, *first); err != nil {
			return nil, err
		}
	}
	if first != nil && (next == nil || first.Before(*next)) {
		next = first
	}
	return next, nil
}

// nominalOf turns a planned run's scheduled_at (an actual, jittered time)
// back into a nominal fire to resume from: the first nominal fire after
// at-jitter, which is the run's own fire or an earlier one. An earlier one
// was due already and has its run; planning it again writes the same
// scheduled_at, which the runs' unique key ignores.
func nominalOf(j *Job, at time.Time) (*time.Time, error) {
	if j.Jitter <= 0 {
		return &at, nil
	}
	tp, err := j.Timing()
	if err != nil {
		return nil, err
	}
	t, ok := tp.Next(at.Add(-j.Jitter))
	if !ok || t.After(at) {
		return &at, nil
	}
	return &t, nil
}

// NextFires returns up to n times the job fires after now, as its runs'
// scheduled_at will read: its planned runs not yet due, then its schedule
// walked from next_fire_at, the planner's own anchor (walking from now
// instead shifts the phase of an "@every" schedule). A disabled job fires
// no more (none); an enabled one without a next fire is shown from now.
func (s *Store) NextFires(ctx context.Context, j Job, now time.Time, n int) ([]time.Time, error) {
	tp, err := j.Timing()
	if err != nil {
		return nil, err
	}
	if !j.Enabled {
		return nil, nil
	}
	if j.NextFireAt == nil {
		return tp.NextN(time.Time{}, now, n), nil
	}
	// The planned runs and the anchor come from one statement, so from one
	// snapshot: read apart, a planning pass in between moves next_fire_at
	// past fires it just planned, and those fires would be listed twice.
	rows, _ := s.pool.Query(ctx, `SELECT j.next_fire_at, r.scheduled_at FROM jobs j
		LEFT JOIN LATERAL (SELECT scheduled_at FROM job_runs
			WHERE job_id = j.id AND trigger_type IN ('schedule', 'misfire')
			  AND (status = 'SCHEDULED' OR status = 'SKIPPED' AND message LIKE 'excluded by calendar %')
			  AND scheduled_at > $2 ORDER BY scheduled_at LIMIT $3) r ON true
		WHERE j.id = $1 ORDER BY r.scheduled_at`, j.ID, now, n)
	var (
		anchor   = *j.NextFireAt
		next, at *time.Time
		out      []time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&next, &at}, func() error {
		if next != nil {
			anchor = *next
		}
		if at != nil {
			out = append(out, at.UTC())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read planned fires of job %d: %w", j.ID, err)
	}
	for _, t := range tp.NextN(anchor, time.Time{}, n) {
		if len(out) == n {
			break
		}
		if t.After(now) {
			out = append(out, t.UTC())
		}
	}
	return out, nil
}

// errNoCatchUp guards a CatchUp value the API did not validate.
var errNoCatchUp = errors.New("catch_up: want none or policy")

// ParseCatchUp reads a catch-up mode; "" is CatchUpPolicy.
func ParseCatchUp(v string) (CatchUp, error) {
	switch CatchUp(v) {
	case "", CatchUpPolicy:
		return CatchUpPolicy, nil
	case CatchUpNone:
		return CatchUpNone, nil
	}
	return "", fmt.Errorf("%w, not %q", errNoCatchUp, v)
}

// FiredBy sets the LastFireAt of each job of js to its last fire at or
// before now. The planner writes last_fire_at when it plans a fire, up to
// its window ahead: a fire planned but not yet due has not fired, and the
// job's last fire is then its newest scheduled run due by now (nil if it
// has none). Jobs whose last_fire_at is not after now are left alone, so
// a page of jobs costs one statement, and none when none fires soon.
func (s *Store) FiredBy(ctx context.Context, js []Job, now time.Time) error {
	var ids []int64
	at := map[int64][]*Job{}
	for i := range js {
		if j := &js[i]; j.LastFireAt != nil && j.LastFireAt.After(now) {
			if at[j.ID] == nil {
				ids = append(ids, j.ID)
			}
			at[j.ID] = append(at[j.ID], j)
			j.LastFireAt = nil
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, _ := s.pool.Query(ctx, `SELECT u.id, r.scheduled_at FROM unnest($1::bigint[]) AS u(id)
		CROSS JOIN LATERAL (SELECT scheduled_at FROM job_runs WHERE job_id = u.id AND scheduled_at <= $2
			AND trigger_type IN ('schedule', 'misfire') ORDER BY scheduled_at DESC LIMIT 1) r`, ids, now)
	var (
		id    int64
		fired time.Time
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &fired}, func() error {
		for _, j := range at[id] {
			t := fired.UTC()
			j.LastFireAt = &t
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the last fires of jobs %v: %w", ids, err)
	}
	return nil
}
