package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
	"github.com/jetjob/jetjob/shared/schedule"
)

// Job is a stored job. The API validates a job before it reaches the store.
type Job struct {
	ID            int64
	Group         string
	Name          string
	Description   string
	Handler       string
	Params        string
	ScheduleType  string
	ScheduleExpr  string
	Timezone      string
	MisfirePolicy string
	RouteStrategy string
	BlockStrategy string
	Timeout       time.Duration
	MaxRetries    int
	RetryBackoff  string // fixed or exponential
	RetryInitial  time.Duration
	RetryMax      time.Duration
	ChildJobIDs   []int64
	AlarmWebhook  string
	AlarmEmails   []string
	Enabled       bool
	Shard         int
	NextFireAt    *time.Time
	LastFireAt    *time.Time
	Version       int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Schedule operations (see schedops.go): 0 / nil mean unset.
	MisfireThreshold time.Duration
	MaxCatchup       int
	Jitter           time.Duration
	StartAt, EndAt   *time.Time
	// Why, when and by whom the job was disabled (POST .../disable).
	PausedNote string
	PausedAt   *time.Time
	PausedBy   string

	// MaxConcurrency caps the overlapping runs of a concurrent job (0: none).
	MaxConcurrency int
}

const jobColumns = `id, group_name, name, description, handler, params, schedule_type, schedule_expr,
	timezone, misfire_policy, route_strategy, block_strategy, timeout_ms, max_retries, enabled,
	shard, next_fire_at, last_fire_at, version, created_at, updated_at,
	retry_backoff, retry_initial_ms, retry_max_ms, child_job_ids, alarm_webhook, alarm_emails,
	max_concurrency, ` + schedOpsColumns

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	var timeoutMS, initialMS, maxMS int64
	var ops schedOpsScan
	err := row.Scan(&j.ID, &j.Group, &j.Name, &j.Description, &j.Handler, &j.Params,
		&j.ScheduleType, &j.ScheduleExpr, &j.Timezone, &j.MisfirePolicy, &j.RouteStrategy,
		&j.BlockStrategy, &timeoutMS, &j.MaxRetries, &j.Enabled, &j.Shard, &j.NextFireAt,
		&j.LastFireAt, &j.Version, &j.CreatedAt, &j.UpdatedAt,
		&j.RetryBackoff, &initialMS, &maxMS, &j.ChildJobIDs, &j.AlarmWebhook, &j.AlarmEmails,
		&j.MaxConcurrency,
		&ops.thresholdMS, &ops.maxCatchup, &ops.jitterMS, &j.StartAt, &j.EndAt, &j.PausedNote, &j.PausedAt, &j.PausedBy)
	ops.into(&j)
	j.Timeout = time.Duration(timeoutMS) * time.Millisecond
	j.RetryInitial = time.Duration(initialMS) * time.Millisecond
	j.RetryMax = time.Duration(maxMS) * time.Millisecond
	return j, err
}

// firstFire is the first (nominal) fire of a job's schedule after now
// (nil for none), within its start/end bounds, and for fix_delay the
// delay in milliseconds.
func firstFire(j *Job, now time.Time) (next *time.Time, delayMS int64, err error) {
	tp, err := j.Timing()
	if err != nil {
		return nil, 0, err
	}
	t, ok := tp.Next(now)
	if !ok {
		return nil, 0, nil
	}
	if tp.Sched.Type() == schedule.FixDelay {
		if d, ok := tp.Sched.Next(now); ok {
			delayMS = d.Sub(now).Milliseconds()
		}
	}
	return &t, delayMS, nil
}

// CreateJob stores a new job, assigns its shard and plans its first fire,
// recording a job.create by a. An unknown group is ErrNotFound; a taken
// (group, name) ErrConflict.
func (s *Store) CreateJob(ctx context.Context, a Actor, j Job) (Job, error) {
	next, delayMS, err := firstFire(&j, time.Now())
	if err != nil {
		return j, err
	}
	var out Job
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkChildren(ctx, tx, 0, j.ChildJobIDs); err != nil {
			return err
		}
		// The shard derives from the id, so the id is drawn first and the row
		// written with OVERRIDING SYSTEM VALUE, in one statement.
		row := tx.QueryRow(ctx, `
			WITH n AS (SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id)
			INSERT INTO jobs (id, shard, group_name, name, description, handler, params, schedule_type,
				schedule_expr, timezone, misfire_policy, route_strategy, block_strategy, timeout_ms,
				max_retries, enabled, next_fire_at, delay_ms, retry_backoff, retry_initial_ms, retry_max_ms,
				child_job_ids, alarm_webhook, alarm_emails, max_concurrency)
			OVERRIDING SYSTEM VALUE
			SELECT n.id, n.id % $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
				$18, $19, $20, $21, $22, $23, $24 FROM n
			RETURNING `+jobColumns,
			s.shardCount, j.Group, j.Name, j.Description, j.Handler, j.Params, j.ScheduleType,
			j.ScheduleExpr, j.Timezone, j.MisfirePolicy, j.RouteStrategy, j.BlockStrategy,
			j.Timeout.Milliseconds(), j.MaxRetries, j.Enabled, next, delayMS, j.retryBackoff(),
			j.RetryInitial.Milliseconds(), j.RetryMax.Milliseconds(), nonNil(j.ChildJobIDs), j.AlarmWebhook,
			nonNil(j.AlarmEmails), j.MaxConcurrency)
		out, err = scanJob(row)
		switch {
		case pgerr.ForeignKey(err):
			return fmt.Errorf("group %q: %w", j.Group, ErrNotFound)
		case pgerr.Unique(err):
			return fmt.Errorf("job %q in group %q: %w", j.Name, j.Group, ErrConflict)
		case err != nil:
			return fmt.Errorf("create job: %w", err)
		}
		if out, err = setSchedOps(ctx, tx, out.ID, &j); err != nil {
			return fmt.Errorf("create job: %w", err)
		}
		return writeAudit(ctx, tx, a, "job.create", JobTarget(out.ID), out.Group, nil, jobDoc(out))
	})
	if err != nil {
		return j, err
	}
	return out, nil
}

// GetJob returns one job.
func (s *Store) GetJob(ctx context.Context, id int64) (Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("get job %d: %w", id, err)
	}
	return j, nil
}

// ListJobs returns up to limit jobs with id > after, by id, optionally of
// one group, and only of groups when it is not nil (a caller's readable
// groups): SearchJobs' first use.
func (s *Store) ListJobs(ctx context.Context, group string, groups []string, after int64, limit int) ([]Job, error) {
	js, _, err := s.SearchJobs(ctx, JobFilter{Group: group, Groups: groups, After: &JobKey{ID: after}, Limit: limit})
	return js, err
}

// ErrStaleVersion is returned (as a *StaleVersionError) when a job was
// changed since the version an update was based on.
var ErrStaleVersion = errors.New("job was changed since the version given")

// StaleVersionError carries the job's current version.
type StaleVersionError struct {
	ID, Given, Current int64
}

func (e *StaleVersionError) Error() string {
	return fmt.Sprintf("job %d is at version %d, not %d: it was changed meanwhile; re-read it, re-apply your change and send version %d",
		e.ID, e.Current, e.Given, e.Current)
}

// Is makes errors.Is(err, ErrStaleVersion) hold.
func (e *StaleVersionError) Is(target error) bool { return target == ErrStaleVersion }

// UpdateJob replaces a job's definition if the job is still at j.Version
// (else a *StaleVersionError: two editors never overwrite each other
// silently), recording a job.update by a with both versions. In the same
// transaction it removes the job's planned, not yet triggered runs and
// re-plans its next fire from now, so the change holds for every fire
// after the commit.
func (s *Store) UpdateJob(ctx context.Context, a Actor, j Job) (Job, error) {
	var out Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockJob(ctx, tx, j.ID)
		if err != nil {
			return err
		}
		if cur.Version != j.Version {
			return &StaleVersionError{ID: j.ID, Given: j.Version, Current: cur.Version}
		}
		next, delayMS, err := firstFire(&j, time.Now())
		if err != nil {
			return err
		}
		if !j.Enabled {
			next = nil
		}
		if err := checkChildren(ctx, tx, j.ID, j.ChildJobIDs); err != nil {
			return err
		}
		if _, err := deletePlanned(ctx, tx, j.ID); err != nil {
			return err
		}
		row := tx.QueryRow(ctx, `UPDATE jobs SET group_name = $2, name = $3, description = $4,
			handler = $5, params = $6, schedule_type = $7, schedule_expr = $8, timezone = $9,
			misfire_policy = $10, route_strategy = $11, block_strategy = $12, timeout_ms = $13,
			max_retries = $14, enabled = $15, next_fire_at = $16, delay_ms = $17,
			retry_backoff = $18, retry_initial_ms = $19, retry_max_ms = $20, child_job_ids = $21,
			alarm_webhook = $22, alarm_emails = $23, max_concurrency = $24,
			version = version + 1, updated_at = now()
			WHERE id = $1 RETURNING `+jobColumns,
			j.ID, j.Group, j.Name, j.Description, j.Handler, j.Params, j.ScheduleType,
			j.ScheduleExpr, j.Timezone, j.MisfirePolicy, j.RouteStrategy, j.BlockStrategy,
			j.Timeout.Milliseconds(), j.MaxRetries, j.Enabled, next, delayMS, j.retryBackoff(),
			j.RetryInitial.Milliseconds(), j.RetryMax.Milliseconds(), nonNil(j.ChildJobIDs), j.AlarmWebhook,
			nonNil(j.AlarmEmails), j.MaxConcurrency)
		out, err = scanJob(row)
		switch {
		case pgerr.ForeignKey(err):
			return fmt.Errorf("group %q: %w", j.Group, ErrNotFound)
		case pgerr.Unique(err):
			return fmt.Errorf("job %q in group %q: %w", j.Name, j.Group, ErrConflict)
		case err != nil:
			return err
		}
		if out, err = setSchedOps(ctx, tx, j.ID, &j); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "job.update", JobTarget(j.ID), out.Group, jobDoc(cur), jobDoc(out))
	})
	if err != nil {
		return out, fmt.Errorf("update job %d: %w", j.ID, err)
	}
	return out, nil
}

// SetEnabled enables or disables a job with the default options (no
// note; catch-up by the misfire policy). See SetEnabledWith.
func (s *Store) SetEnabled(ctx context.Context, a Actor, id int64, enabled bool) (Job, error) {
	return s.SetEnabledWith(ctx, a, id, EnableOptions{Enabled: enabled})
}

// DeleteJob removes a job and its planned runs not yet due, recording a
// job.delete by a with the job as it was. The runs it already had stay as
// history.
func (s *Store) DeleteJob(ctx context.Context, a Actor, id int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanJob(tx.QueryRow(ctx, `DELETE FROM jobs WHERE id = $1 RETURNING `+jobColumns, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("job %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err = deletePlanned(ctx, tx, id); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "job.delete", JobTarget(id), cur.Group, jobDoc(cur), nil)
	})
	if err != nil {
		return fmt.Errorf("delete job %d: %w", id, err)
	}
	return nil
}

func lockJob(ctx context.Context, tx pgx.Tx, id int64) (Job, error) {
	j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return j, err
}

// JobsChannel is the PostgreSQL NOTIFY channel on which a job's planned
// runs that were removed (edit, disable, delete) are announced, as
// "<job id> <cutoff, Unix µs>": schedulers drop that job's runs due after
// the cutoff from their wheels (a bare "<job id>", from older schedulers:
// all of them).
const JobsChannel = "jetjob_jobs"

// deletePlanned removes a job's planned runs that are not due yet and, at
// commit, tells every scheduler to drop them from memory too. It returns
// the earliest removed scheduled (or catch-up) fire, nil if none: where a
// disabled job's schedule resumes.
//
// Runs already due are left to go ahead: they were due under the job as it
// was, and one may be published already while it still reads SCHEDULED
// (the deferred TRIGGERED write, see package runs). Deleting such a run
// would leave its trigger running with no row to record it.
func deletePlanned(ctx context.Context, tx pgx.Tx, jobID int64) (*time.Time, error) {
	var (
		cutoff time.Time
		first  *time.Time
	)
	if err := tx.QueryRow(ctx, `WITH d AS (
			DELETE FROM job_runs WHERE job_id = $1 AND status = 'SCHEDULED' AND scheduled_at > now()
			RETURNING scheduled_at, trigger_type)
		SELECT now(), (SELECT min(scheduled_at) FROM d WHERE trigger_type IN ('schedule', 'misfire'))`,
		jobID).Scan(&cutoff, &first); err != nil {
		return nil, err
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, JobsChannel, fmt.Sprintf("%d %d", jobID, cutoff.UnixMicro()))
	return first, err
}

// ParseJobsNotification reads a JobsChannel payload: the job and the
// cutoff after which its wheel-held runs are dropped (zero: all of them).
func ParseJobsNotification(payload string) (int64, time.Time, error) {
	idText, cutText, hasCutoff := strings.Cut(payload, " ")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		return 0, time.Time{}, fmt.Errorf("job notification %q: want \"<job id> <cutoff µs>\"", payload)
	}
	if !hasCutoff {
		return id, time.Time{}, nil
	}
	us, err := strconv.ParseInt(cutText, 10, 64)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("job notification %q: cutoff: %w", payload, err)
	}
	return id, time.UnixMicro(us), nil
}

var (
	// ErrCycle is returned when a job's children would lead back to it.
	ErrCycle = errors.New("child jobs form a cycle")
	// ErrUnknownChild is returned when a child job does not exist.
	ErrUnknownChild = errors.New("unknown child job")
)

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// checkChildren verifies that every child job exists and that following
// child_job_ids from the children never leads back to job id (0 for a new
// job, which nothing can point to yet).
func checkChildren(ctx context.Context, q querier, id int64, children []int64) error {
	if len(children) == 0 {
		return nil
	}
	var missing []int64
	if err := q.QueryRow(ctx, `SELECT COALESCE(array_agg(c), '{}') FROM unnest($1::bigint[]) AS c
		WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = c)`, children).Scan(&missing); err != nil {
		return fmt.Errorf("check child jobs: %w", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %v", ErrUnknownChild, missing)
	}
	if id == 0 {
		return nil
	}
	var cycle bool
	if err := q.QueryRow(ctx, `WITH RECURSIVE reach(id) AS (
			SELECT unnest($2::bigint[])
			UNION
			SELECT unnest(j.child_job_ids) FROM jobs j JOIN reach ON j.id = reach.id)
		SELECT EXISTS (SELECT 1 FROM reach WHERE id = $1)`, id, children).Scan(&cycle); err != nil {
		return fmt.Errorf("check child jobs: %w", err)
	}
	if cycle {
		return fmt.Errorf("job %d with children %v: %w (a child, or one of its descendants, triggers job %d again)", id, children, ErrCycle, id)
	}
	return nil
}

func (j *Job) retryBackoff() string {
	if j.RetryBackoff == "" {
		return "exponential"
	}
	return j.RetryBackoff
}

// nonNil turns a nil slice into an empty one: the columns are NOT NULL.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
