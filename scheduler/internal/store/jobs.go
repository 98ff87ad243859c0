package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
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
	// Source is where an importer took the job from ("xxl-job db#7"),
	// "" otherwise.
	Source     string
	Enabled    bool
	Shard      int
	NextFireAt *time.Time
	LastFireAt *time.Time
	Version    int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
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
	// Shards is the job's fixed shard count: each fire runs as that many
	// parts on the group's shared queue (2..wire.MaxShards; 0: one run).
	Shards int

	// SecretEnv gives the job's commands its group's secrets as
	// environment variables (variable: secret name); SecretNames is, as
	// read, every secret the job references (SecretEnv's and its params'
	// ${secret:NAME} placeholders), written from them (secretNames).
	SecretEnv   map[string]string
	SecretNames []string

	// Kind is KindJob (also for "") or KindWorkflow: a workflow's own row
	// (package wfengine), whose fires start workflow runs; or KindNode, the
	// job of an inline node, owned by workflow OwnerWorkflow's node
	// OwnerNode (inline.go).
	Kind          string
	OwnerWorkflow int64
	OwnerNode     string

	// Script is a script job's current version (handler "script"; nil
	// for other jobs). On a create or an update, a Script differing from
	// the stored one is saved as a new version with ScriptRemark
	// (scripts.go); its Version is then ignored.
	Script       *wire.Script
	ScriptRemark string
	// ScriptSourceGiven: Script.Source is the edit's; false keeps the
	// stored source (an edit of the job's other fields).
	ScriptSourceGiven bool
	// ExtraSchedules are the job's schedules after the first (jobext.go):
	// the job fires at the union of all of them.
	ExtraSchedules []timing.Part
	// ExcludeCalendars and IncludeCalendars name calendars (package
	// calendar): a fire on a day of the first is skipped unless the day is
	// in the second.
	ExcludeCalendars, IncludeCalendars []string
	// Labels are key=value pairs that selectors pick jobs by (package
	// labels); Owner says who to ask about the job.
	Labels map[string]string
	Owner  string
	// ParamsTemplate: Params is a template over each fire (package
	// paramtmpl), rendered into the run's own params.
	ParamsTemplate bool
	// Flow is the job's flow controls (jobflow.go): priority, concurrency
	// key and its cap, rate limits.
	Flow JobFlow
}

// Kinds of jobs rows.
const (
	KindJob      = "job"
	KindWorkflow = "workflow"
	KindNode     = "node"
)

// UpcomingFire is the job's next fire as a user sees it: none while it is
// disabled (next_fire_at then only keeps the planner's place, for the
// catch-up of an enable).
func (j *Job) UpcomingFire() *time.Time {
	if !j.Enabled {
		return nil
	}
	return j.NextFireAt
}

func (j *Job) kind() string {
	if j.Kind == "" {
		return KindJob
	}
	return j.Kind
}

const jobColumns = `id, group_name, name, description, handler, params, schedule_type, schedule_expr,
	timezone, misfire_policy, route_strategy, block_strategy, timeout_ms, max_retries, enabled,
	shard, next_fire_at, last_fire_at, version, created_at, updated_at,
	retry_backoff, retry_initial_ms, retry_max_ms, child_job_ids, alarm_webhook, alarm_emails,
	max_concurrency, source, ` + schedOpsColumns + `, kind, COALESCE(owner_workflow, 0), COALESCE(owner_node, ''),
	script_language, script_version, script_source, secret_env, secret_names, ` + jobExtColumns + `, ` + jobFlowColumns

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	var timeoutMS, initialMS, maxMS int64
	var ops schedOpsScan
	var sc runs.ScriptColumns
	var ext jobExtScan
	err := row.Scan(append([]any{&j.ID, &j.Group, &j.Name, &j.Description, &j.Handler, &j.Params,
		&j.ScheduleType, &j.ScheduleExpr, &j.Timezone, &j.MisfirePolicy, &j.RouteStrategy,
		&j.BlockStrategy, &timeoutMS, &j.MaxRetries, &j.Enabled, &j.Shard, &j.NextFireAt,
		&j.LastFireAt, &j.Version, &j.CreatedAt, &j.UpdatedAt,
		&j.RetryBackoff, &initialMS, &maxMS, &j.ChildJobIDs, &j.AlarmWebhook, &j.AlarmEmails,
		&j.MaxConcurrency, &j.Source,
		&ops.thresholdMS, &ops.maxCatchup, &ops.jitterMS, &j.StartAt, &j.EndAt, &j.PausedNote, &j.PausedAt, &j.PausedBy, &j.Kind,
		&j.OwnerWorkflow, &j.OwnerNode, &sc.Language, &sc.Version, &sc.Source, &j.SecretEnv, &j.SecretNames},
		append(ext.targets(), j.Flow.targets()...)...)...)
	j.Script = sc.Script()
	ops.into(&j)
	if err == nil {
		err = ext.into(&j)
	}
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

// jobWriteColumns are the columns a create or an update writes, each
// filled by the named argument of its name (writeArgs): one list for both
// statements, so that a new column cannot be written by one and forgotten
// by the other.
var jobWriteColumns = append([]string{"group_name", "name", "description", "handler", "params", "schedule_type",
	"schedule_expr", "timezone", "misfire_policy", "route_strategy", "block_strategy", "timeout_ms",
	"max_retries", "enabled", "next_fire_at", "delay_ms", "retry_backoff", "retry_initial_ms", "retry_max_ms",
	"child_job_ids", "alarm_webhook", "alarm_emails", "max_concurrency", "source", "kind", "owner_workflow", "owner_node",
	"secret_env", "secret_names"},
	append(slices.Clone(jobExtWriteColumns), jobFlowWriteColumns...)...)

// insertJob and updateJob write jobWriteColumns. The shard derives from
// the id, so a create draws the id first and writes the row with
// OVERRIDING SYSTEM VALUE, in one statement.
var (
	insertJob = `WITH n AS (SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id)
		INSERT INTO jobs (id, shard, ` + strings.Join(jobWriteColumns, ", ") + `)
		OVERRIDING SYSTEM VALUE
		SELECT n.id, n.id % @shard_count, @` + strings.Join(jobWriteColumns, ", @") + ` FROM n
		RETURNING ` + jobColumns
	updateJob = `UPDATE jobs SET ` + setColumns(jobWriteColumns) + `, version = version + 1, updated_at = now()
		WHERE id = @id RETURNING ` + jobColumns
)

func setColumns(cols []string) string {
	sets := make([]string, len(cols))
	for i, c := range cols {
		sets[i] = c + " = @" + c
	}
	return strings.Join(sets, ", ")
}

// writeArgs are the values of jobWriteColumns for j, with the planned
// first fire (next, delayMS) a create or an update computed.
func (j *Job) writeArgs(next *time.Time, delayMS int64) pgx.NamedArgs {
	args := pgx.NamedArgs{
		"group_name": j.Group, "name": j.Name, "description": j.Description, "handler": j.Handler,
		"params": j.Params, "schedule_type": j.ScheduleType, "schedule_expr": j.ScheduleExpr,
		"timezone": j.Timezone, "misfire_policy": j.MisfirePolicy, "route_strategy": j.RouteStrategy,
		"block_strategy": j.BlockStrategy, "timeout_ms": j.Timeout.Milliseconds(), "max_retries": j.MaxRetries,
		"enabled": j.Enabled, "next_fire_at": next, "delay_ms": delayMS, "retry_backoff": j.retryBackoff(),
		"retry_initial_ms": j.RetryInitial.Milliseconds(), "retry_max_ms": j.RetryMax.Milliseconds(),
		"child_job_ids": nonNil(j.ChildJobIDs), "alarm_webhook": j.AlarmWebhook,
		"alarm_emails": nonNil(j.AlarmEmails), "max_concurrency": j.MaxConcurrency, "source": j.Source, "kind": j.kind(),
		"owner_workflow": nilIfZero(j.OwnerWorkflow), "owner_node": nilIfZero(j.OwnerNode),
		"secret_env": nonNilMap(jobSecretEnv(j)), "secret_names": nonNil(secretNames(j)),
	}
	j.extArgs(args)
	j.flowArgs(args)
	return args
}

// CreateJob stores a new job, assigns its shard and plans its first fire,
// recording a job.create by a. An unknown group is ErrNotFound; a taken
// (group, name) ErrConflict.
func (s *Store) CreateJob(ctx context.Context, a Actor, j Job) (Job, error) {
	var out Job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.checkChildren(ctx, tx, a, 0, nil, j.ChildJobIDs); err != nil {
			return err
		}
		if err := checkSecrets(ctx, tx, a, j.Group, nil, secretNames(&j)); err != nil {
			return err
		}
		var err error
		if out, err = s.insertJobRow(ctx, tx, &j); err != nil {
			return err
		}
		if j.Script != nil {
			remark := cmp.Or(j.ScriptRemark, "created")
			if out.Script, err = s.saveScriptVersion(ctx, tx, a, out.ID, j.Script.Language, j.Script.Source, remark); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, a, "job.create", JobTarget(out.ID), out.Group, nil, jobDoc(out))
	})
	if err != nil {
		return j, err
	}
	return out, nil
}

// insertJobRow writes j as a new row of jobs in tx, with its shard and
// first fire: a job's, or a workflow's own row.
func (s *Store) insertJobRow(ctx context.Context, tx pgx.Tx, j *Job) (Job, error) {
	next, delayMS, err := firstFire(j, time.Now())
	if err != nil {
		return *j, err
	}
	if err := checkCalendars(ctx, tx, j); err != nil {
		return *j, err
	}
	args := j.writeArgs(next, delayMS)
	args["shard_count"] = s.shardCount
	out, err := scanJob(tx.QueryRow(ctx, insertJob, args))
	if err != nil {
		return out, j.rowErr(fmt.Errorf("create %s: %w", j.kind(), err))
	}
	if out, err = setSchedOps(ctx, tx, out.ID, j); err != nil {
		return out, fmt.Errorf("create %s: %w", j.kind(), err)
	}
	return out, nil
}

// GetJob returns one job.
func (s *Store) GetJob(ctx context.Context, id int64) (Job, error) {
	return rowOf(ctx, s.pool, "job", `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id, scanJob)
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
		if err := notInline(cur); err != nil {
			return err
		}
		if cur.kind() != j.kind() {
			return fmt.Errorf("job %d is a %s, not a %s: edit it as one (/api/v1/workflows for a workflow): %w", j.ID, cur.kind(), j.kind(), ErrInvalid)
		}
		// Moving a job to another group hands its links to other people
		// (the new group's operators trigger it): all are checked anew.
		kept := cur.ChildJobIDs
		if cur.Group != j.Group {
			kept = nil
		}
		if err := s.checkChildren(ctx, tx, a, j.ID, kept, j.ChildJobIDs); err != nil {
			return err
		}
		keptSecrets := cur.SecretNames
		if cur.Group != j.Group {
			keptSecrets = nil
		}
		if err := checkSecrets(ctx, tx, a, j.Group, keptSecrets, secretNames(&j)); err != nil {
			return err
		}
		if j.Source == "" {
			// An edit that does not name the source (the console, a job
			// file) keeps it: only an importer sets it.
			j.Source = cur.Source
		}
		if out, err = updateJobRow(ctx, tx, &j); err != nil {
			return err
		}
		if j.Script != nil && !j.ScriptSourceGiven && cur.Script != nil {
			j.Script.Source = cur.Script.Source
		}
		if j.Script == nil && cur.Script != nil {
			// No longer a script job: it runs no script (its versions
			// stay, for a change back).
			if _, err := tx.Exec(ctx, `UPDATE jobs SET script_language = NULL, script_version = NULL, script_source = NULL WHERE id = $1`, j.ID); err != nil {
				return fmt.Errorf("clear job %d's script: %w", j.ID, err)
			}
			out.Script = nil
		}
		if scriptChanged(cur.Script, j.Script) {
			remark := cmp.Or(j.ScriptRemark, "edited with the job")
			if out.Script, err = s.saveScriptVersion(ctx, tx, a, j.ID, j.Script.Language, j.Script.Source, remark); err != nil {
				return err
			}
		}
		return writeAudit(ctx, tx, a, "job.update", JobTarget(j.ID), out.Group, jobDoc(cur), jobDoc(out))
	})
	if err != nil {
		return out, fmt.Errorf("update job %d: %w", j.ID, err)
	}
	return out, nil
}

// updateJobRow rewrites job row j (locked in tx), deleting its planned
// runs not yet due and re-planning its next fire from now.
func updateJobRow(ctx context.Context, tx pgx.Tx, j *Job) (Job, error) {
	next, delayMS, err := firstFire(j, time.Now())
	if err != nil {
		return *j, err
	}
	if err := checkCalendars(ctx, tx, j); err != nil {
		return *j, err
	}
	if !j.Enabled {
		next = nil
	}
	if _, err := deletePlanned(ctx, tx, j.ID); err != nil {
		return *j, err
	}
	args := j.writeArgs(next, delayMS)
	args["id"] = j.ID
	out, err := scanJob(tx.QueryRow(ctx, updateJob, args))
	if err != nil {
		return out, j.rowErr(err)
	}
	return setSchedOps(ctx, tx, j.ID, j)
}

// rowErr is what a failed write of j's row (insertJobRow, updateJobRow)
// says: its group does not exist, its name is taken in the group, or err.
func (j *Job) rowErr(err error) error {
	switch {
	case pgerr.ForeignKey(err):
		return fmt.Errorf("group %q: %w", j.Group, ErrNotFound)
	case pgerr.Unique(err):
		return fmt.Errorf("%s %q in group %q: %w", j.kind(), j.Name, j.Group, ErrConflict)
	}
	return err
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
		cur, err := lockJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := notInline(cur); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, id); err != nil {
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
	return rowOf(ctx, tx, "job", `SELECT `+jobColumns+` FROM jobs WHERE id = $1 FOR UPDATE`, id, scanJob)
}

// JobsChannel is the PostgreSQL NOTIFY channel on which a job's planned
// runs that were removed (edit, disable, delete) are announced, as
// "<job id> <cutoff, Unix µs>": schedulers drop that job's runs due after
// the cutoff from their wheels (a bare "<job id>", from older schedulers:
// all of them).
const JobsChannel = "jetjob_jobs"

// deletePlanned removes a job's planned runs that are not due yet
// (runs.DeletePlanned, which says which and why) and, at commit, tells
// every scheduler to drop them from memory too. It returns the earliest
// removed scheduled (or catch-up) fire, nil if none: where a disabled
// job's schedule resumes.
func deletePlanned(ctx context.Context, tx pgx.Tx, jobID int64) (*time.Time, error) {
	return notifyDeleted(ctx, tx, jobID, runs.DeletePlanned)
}

// notifyDeleted runs del (runs.DeletePlanned, or its variant for a
// group's pause) for jobID and announces the cutoff on JobsChannel.
func notifyDeleted(ctx context.Context, tx pgx.Tx, jobID int64,
	del func(context.Context, pgx.Tx, int64) (time.Time, *time.Time, error)) (*time.Time, error) {
	cutoff, first, err := del(ctx, tx, jobID)
	if err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, JobsChannel, fmt.Sprintf("%d %d", jobID, cutoff.UnixMicro()))
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

// refsLockClass is the advisory lock (two-key form, a key space of its
// own) that serializes the writes adding references: each is checked
// against the graph as it is, so two links made at once must not be
// checked each without the other (together they could close a cycle or
// pass the cap). Only writes that add a reference take it.
const refsLockClass = 0x6a6a7266 // "jjrf"

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// rowOf reads with scan the row id of a kind ("run", "backfill") that
// query selects by $1: a missing row is ErrNotFound, named as "kind id".
func rowOf[T any](ctx context.Context, q querier, kind, query string, id int64, scan func(pgx.Row) (T, error)) (T, error) {
	v, err := scan(q.QueryRow(ctx, query, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, fmt.Errorf("%s %d: %w", kind, id, ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("get %s %d: %w", kind, id, err)
	}
	return v, nil
}

// columnOf is rowOf for a query that selects one column.
func columnOf[T any](ctx context.Context, q querier, kind, query string, id int64) (T, error) {
	return rowOf(ctx, q, kind, query, id, func(row pgx.Row) (T, error) {
		var v T
		err := row.Scan(&v)
		return v, err
	})
}

// checkChildren decides whether job id (0 for a new job) may have the
// children next where it had cur (nil when the write moves it to another
// group). Only the references the write adds are checked (package refs
// explains why kept ones are not): each must name a
// job that a may name (refs.Check: a missing job and one a may not trigger
// are refused alike), and with them no child may lead back to id nor any
// fire reach past the cap (refs.Graph.Link).
func (s *Store) checkChildren(ctx context.Context, tx pgx.Tx, a Actor, id int64, cur, next []int64) error {
	added := refs.Added(cur, next)
	if len(added) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, refsLockClass); err != nil {
		return fmt.Errorf("check child jobs: lock: %w", err)
	}
	targets, err := refTargets(ctx, tx, added)
	if err != nil {
		return err
	}
	// An inline node's job is its workflow's: no job names it.
	targets = slices.DeleteFunc(targets, func(t refs.Target) bool { return t.Inline })
	if err := refs.Check(a.Refs, "child_job_ids", added, targets); err != nil {
		return err
	}
	g, err := childGraph(ctx, tx, id)
	if err != nil {
		return err
	}
	// A kept child that no longer exists triggers nothing: not counted.
	var existing []int64
	rows, _ := tx.Query(ctx, `SELECT id FROM jobs WHERE id = ANY($1::bigint[])`, next)
	if existing, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return fmt.Errorf("check child jobs: %w", err)
	}
	return g.Link(id, existing, s.maxChainRuns)
}

// refTargets reads the jobs of ids that exist, as references see them.
func refTargets(ctx context.Context, q querier, ids []int64) ([]refs.Target, error) {
	rows, _ := q.Query(ctx, `SELECT j.id, j.group_name, j.handler, COALESCE(g.command_handlers, '{}'), j.kind = 'node'
		FROM jobs j LEFT JOIN job_groups g ON g.name = j.group_name
		WHERE j.id = ANY($1::bigint[])`, ids)
	var (
		t        refs.Target
		handler  string
		commands []string
		out      []refs.Target
	)
	_, err := pgx.ForEachRow(rows, []any{&t.ID, &t.Group, &handler, &commands, &t.Inline}, func() error {
		t.Commands = auth.RunsCommands(handler, commands)
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read child jobs: %w", err)
	}
	return out, nil
}

// childGraph reads every job's children but job except's, each child a job
// that exists (the jobs_parents index holds the few jobs that have any).
func childGraph(ctx context.Context, q querier, except int64) (refs.Graph, error) {
	rows, _ := q.Query(ctx, `SELECT p.id, ARRAY(SELECT c FROM unnest(p.child_job_ids) AS c
			WHERE EXISTS (SELECT 1 FROM jobs k WHERE k.id = c))
		FROM jobs p WHERE p.child_job_ids <> '{}' AND p.id <> $1`, except)
	var (
		id       int64
		children []int64
	)
	g := refs.Graph{}
	_, err := pgx.ForEachRow(rows, []any{&id, &children}, func() error {
		g[id] = children
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the child job graph: %w", err)
	}
	return g, nil
}

func (j *Job) retryBackoff() string {
	if j.RetryBackoff == "" {
		return "exponential"
	}
	return j.RetryBackoff
}

// nonNil turns a nil slice into an empty one: the columns are NOT NULL.
// nilIfZero is v, or NULL for its zero value.
func nilIfZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
