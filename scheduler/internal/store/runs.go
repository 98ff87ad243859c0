package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
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
	// Priority is the run's own (job_runs.priority), nil for its job's.
	Priority *int
	// MapFire is the root of the map/reduce fire the run is of (its own
	// id for the root; runs/mapreduce.go), nil for any other run.
	MapFire *int64
}

// runColumns are a run's columns as Run holds them. map_fire reads a
// run's map/reduce fire: a part's (map_item set) and the root's
// (shard_fire set, shard_total 0) shard_fire, the reduce run's map_reduce.
const runColumns = `id, job_id, group_name, shard, trigger_type, status, scheduled_at, triggered_at,
	started_at, finished_at, attempt, retry_of, shard_index, shard_total, worker_id, params, message, stream_seq,
	parent_run, alarm_status, alarm_error, priority,
	CASE WHEN map_item IS NOT NULL OR (shard_fire IS NOT NULL AND shard_total = 0) THEN shard_fire ELSE map_reduce END AS map_fire`

func scanRun(row pgx.Row) (Run, error) {
	var r Run
	err := row.Scan(r.targets()...)
	return r, err
}

// targets are the destinations of runColumns, in its order; a query that
// reads more columns after them appends their destinations.
func (r *Run) targets(more ...any) []any {
	return append([]any{&r.ID, &r.JobID, &r.Group, &r.Shard, &r.TriggerType, &r.Status, &r.ScheduledAt,
		&r.TriggeredAt, &r.StartedAt, &r.FinishedAt, &r.Attempt, &r.RetryOf, &r.ShardIndex,
		&r.ShardTotal, &r.WorkerID, &r.Params, &r.Message, &r.StreamSeq, &r.ParentRun, &r.AlarmStatus, &r.AlarmError, &r.Priority, &r.MapFire}, more...)
}

// GetRun returns one run.
func (s *Store) GetRun(ctx context.Context, id int64) (Run, error) {
	return rowOf(ctx, s.pool, "run", `SELECT `+runColumns+` FROM job_runs WHERE id = $1`, id, scanRun)
}

// RunKey is a run's place in the newest-first order of run listings:
// (scheduled_at, id), both descending. It is what keyset pagination resumes
// after.
type RunKey struct {
	ScheduledAt time.Time
	ID          int64
}

// RunFilter selects runs for SearchRuns. Zero fields do not filter.
type RunFilter struct {
	JobID int64
	Group string
	// Worker keeps the runs a worker (by id) executed (read through the
	// time index: see searchSQL).
	Worker string
	// Groups, when not nil, keeps only runs of these groups (a caller's
	// readable groups; empty: none).
	Groups []string
	// Statuses and TriggerTypes match any of their values.
	Statuses     []wire.Status
	TriggerTypes []wire.TriggerType
	// From and To bound scheduled_at: From <= scheduled_at < To.
	From, To time.Time
	// After resumes a listing: only runs after this key in the order.
	After *RunKey
	// Limit is the page size (required, positive).
	Limit int
}

// SearchRuns returns up to f.Limit runs matching f, newest first by
// (scheduled_at, id), and whether more follow.
//
// Each filter has an index in (scheduled_at DESC, id DESC) order, so a page
// is read straight off one index per partition instead of sorting the
// matches (see migrations 0004 and 0009): group, status (other than
// SCHEDULED and SUCCEEDED) and rare trigger types their own; a job the fire
// key, whose few runs per scheduled_at are put in id order by an
// incremental sort; the others (no filter, worker, SUCCEEDED, schedule) the
// time index, read newest first. A filter on several statuses (or trigger
// types) is one branch per value, each reading at most a page in order,
// merged: PostgreSQL 15 cannot read "status IN (…)" off such an index in
// scheduled order, and would otherwise sort every match. The statement is
// planned with its values (an unnamed statement, not a cached generic
// plan), so the from/to bounds prune partitions at plan time and the
// partial index of rare trigger types is usable.
func (s *Store) SearchRuns(ctx context.Context, f RunFilter) ([]Run, bool, error) {
	if f.Limit <= 0 {
		return nil, false, fmt.Errorf("search runs: limit %d: want a positive page size", f.Limit)
	}
	q, args := searchSQL(f)
	rows, _ := s.pool.Query(ctx, q, append([]any{pgx.QueryExecModeExec}, args...)...)
	return pageOf(rows, f.Limit, "search runs", func(r pgx.CollectableRow) (Run, error) { return scanRun(r) })
}

// unfilteredMarker is job_runs_time's index predicate: stating it lets a
// search use that index, and only searches without a filter of their own
// index state it (see searchSQL).
const unfilteredMarker = `scheduled_at > '-infinity'`

// searchSQL builds SearchRuns' statement; it reads Limit+1 rows, the extra
// one telling whether another page follows.
func searchSQL(f RunFilter) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var conds []string
	if f.JobID != 0 {
		conds = append(conds, "job_id = "+arg(f.JobID))
	}
	// With a job, the job drives: its runs are read off the fire key in
	// scheduled order (migration 0009), and the group only filters them.
	// The group test is written so that it is no index condition (else the
	// planner may read the group's index in exact order, filtering out the
	// group's other jobs) and is estimated to keep half the rows (a
	// boolean compared with a constant) instead of the group's share: a
	// job's runs are all of its group, and on the share the planner would
	// expect a handful of rows and sort every run of the job.
	group := func(cmp string) string { return "group_name " + cmp }
	if f.JobID != 0 {
		group = func(cmp string) string { return "(group_name " + cmp + ") IS DISTINCT FROM false" }
	}
	if f.Group != "" {
		conds = append(conds, group("= "+arg(f.Group)))
	}
	if f.Worker != "" {
		conds = append(conds, "worker_id = "+arg(f.Worker))
	}
	if f.Groups != nil {
		// A viewer of one group reads that group's index as any group
		// filter; several read it once per group and merge (no order).
		if len(f.Groups) == 1 {
			conds = append(conds, group("= "+arg(f.Groups[0])))
		} else {
			conds = append(conds, group("= ANY("+arg(f.Groups)+")"))
		}
	}
	if !f.From.IsZero() {
		conds = append(conds, "scheduled_at >= "+arg(f.From))
	}
	if !f.To.IsZero() {
		conds = append(conds, "scheduled_at < "+arg(f.To))
	}
	if f.After != nil {
		at, id := arg(f.After.ScheduledAt), arg(f.After.ID)
		// The plain bound prunes partitions; the row comparison is the
		// exact keyset condition, an index condition on each index.
		conds = append(conds, "scheduled_at <= "+at, "(scheduled_at, id) < ("+at+", "+id+")")
	}
	statuses := make([]string, len(f.Statuses))
	for i, st := range f.Statuses {
		statuses[i] = string(st)
	}
	types := make([]string, len(f.TriggerTypes))
	for i, tt := range f.TriggerTypes {
		types[i] = string(tt)
	}
	// One value: an equality like the others. Several: the list with the
	// most values becomes branches (one per value); the other stays a
	// filter.
	var branchCol string
	var branchVals []string
	anyOf := func(col string, vals []string) {
		switch {
		case len(vals) == 1:
			conds = append(conds, col+" = "+arg(vals[0]))
		case len(vals) > 1 && branchCol == "":
			branchCol, branchVals = col, vals
		case len(vals) > 1:
			conds = append(conds, col+" = ANY("+arg(vals)+")")
		}
	}
	if len(types) > len(statuses) {
		anyOf("trigger_type", types)
		anyOf("status", statuses)
	} else {
		anyOf("status", statuses)
		anyOf("trigger_type", types)
	}
	// timeOrdered tells whether a statement (or branch) with these status
	// and trigger type values is read off the time index (see
	// unfilteredMarker): when no filter of it has an index of its own.
	// Those that do: job (the fire key), group, a status other than
	// SUCCEEDED (job_runs_status, migration 0009; SCHEDULED: the few
	// planned runs) and a trigger type other than schedule (job_runs_trigger).
	// Unfiltered, by worker, by SUCCEEDED or by schedule: those runs are
	// most runs (a worker's are recent), found reading the index newest
	// first.
	byOwnIndex := f.JobID != 0 || f.Group != "" || f.Groups != nil
	timeOrdered := func(sts, tts []string) bool {
		return !byOwnIndex &&
			(len(sts) == 0 || slices.Contains(sts, string(wire.StatusSucceeded))) &&
			(len(tts) == 0 || slices.Contains(tts, string(wire.TriggerSchedule)))
	}
	limit := arg(f.Limit + 1)
	const order = " ORDER BY scheduled_at DESC, id DESC LIMIT "
	where := func(extra ...string) string {
		all := append(slices.Clone(conds), extra...)
		if len(all) == 0 {
			return ""
		}
		return " WHERE " + strings.Join(all, " AND ")
	}
	if branchCol == "" {
		if timeOrdered(statuses, types) {
			conds = append(conds, unfilteredMarker)
		}
		return `SELECT ` + runColumns + ` FROM job_runs` + where() + order + limit, args
	}
	branches := make([]string, len(branchVals))
	for i, v := range branchVals {
		extra := []string{branchCol + " = " + arg(v)}
		sts, tts := statuses, types
		if branchCol == "status" {
			sts = []string{v}
		} else {
			tts = []string{v}
		}
		if timeOrdered(sts, tts) {
			extra = append(extra, unfilteredMarker)
		}
		branches[i] = `(SELECT ` + runColumns + ` FROM job_runs` + where(extra...) + order + limit + `)`
	}
	return `SELECT r.* FROM (` + strings.Join(branches, " UNION ALL ") + `) r` + order + limit, args
}

// ListRuns returns up to limit runs of a job, newest first, after the
// given key (nil for the first page), of groups only (nil: all): the job's
// case of SearchRuns.
func (s *Store) ListRuns(ctx context.Context, jobID int64, groups []string, after *RunKey, limit int) ([]Run, bool, error) {
	return s.SearchRuns(ctx, RunFilter{JobID: jobID, Groups: groups, After: after, Limit: limit})
}

// RunKeyOf returns a run's key, for clients that page by run id.
func (s *Store) RunKeyOf(ctx context.Context, id int64) (RunKey, error) {
	at, err := columnOf[time.Time](ctx, s.pool, "run", `SELECT scheduled_at FROM job_runs WHERE id = $1`, id)
	return RunKey{ScheduledAt: at, ID: id}, err
}

// InsertManualRun writes a manual ("trigger now") run of a job as SCHEDULED
// at now, recording a job.trigger by a. params, when non-nil, replace the
// job's params for this run.
func (s *Store) InsertManualRun(ctx context.Context, a Actor, jobID int64, params *string) (runs.Planned, error) {
	p, _, err := s.TriggerRun(ctx, a, jobID, Trigger{Params: params})
	return p, err
}

// Trigger is a manual trigger of a job or workflow: POST …/trigger.
type Trigger struct {
	// Params, when non-nil, replace the job's params for this run.
	Params *string
	// At runs it once at this time; zero: After the database's now.
	At    time.Time
	After time.Duration
	// Key, when set, makes the trigger idempotent (trigger_keys): within
	// KeyWindow another trigger of the job with the key answers this one's
	// run, if its Request (a digest of what was asked) is the same, and is
	// refused (ErrKeyReused) if not.
	Key     string
	Request []byte
	// Force starts the run even while the job's group is paused or
	// draining (else ErrGroupPaused).
	Force bool
	// Priority, when set, is the run's own priority instead of its job's
	// (job_runs.priority; docs/flow-control.md).
	Priority *int

	note manualNote
}

// KeyWindow is how long an idempotency key of a trigger holds.
const KeyWindow = 24 * time.Hour

// ErrKeyReused refuses a trigger whose idempotency key was used, within
// KeyWindow, for another request.
var ErrKeyReused = errors.New("idempotency key already used for another request")

// manualNote is what a manual run says of itself: its message, and the
// workflow run it re-runs (0: none), which its audit entry names too.
type manualNote struct {
	Message string
	RerunOf int64
}

// TriggerRun writes the run of a manual trigger t of job row jobID as
// InsertManualRun does, at t.At or t.After from now. replayed is true when
// t.Key repeats a trigger of the last KeyWindow: nothing is written, and p
// is that trigger's run (only its RunID and JobID are set).
func (s *Store) TriggerRun(ctx context.Context, a Actor, jobID int64, t Trigger) (p runs.Planned, replayed bool, err error) {
	j, err := s.GetJob(ctx, jobID)
	if err != nil {
		return runs.Planned{}, false, err
	}
	if err := notInline(j); err != nil {
		return runs.Planned{}, false, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		p = runs.Planned{Message: t.note.Message,
			JobID: j.ID, Group: j.Group, Shard: j.Shard, Handler: j.Handler, Params: j.Params,
			TriggerType: wire.TriggerManual, Timeout: j.Timeout, MisfirePolicy: policy.Misfire(j.MisfirePolicy),
			RouteStrategy: policy.Route(j.RouteStrategy), BlockStrategy: policy.Block(j.BlockStrategy), MaxConcurrency: j.MaxConcurrency, Shards: j.Shards,
			Workflow: j.Kind == KindWorkflow, Script: j.Script, Secrets: len(j.SecretNames) > 0,
		}
		if t.Params == nil && j.ParamsTemplate {
			// Rendered for the time asked (now: this process's clock, a
			// moment before the database stamps the run).
			at := t.At
			if at.IsZero() {
				at = time.Now().Add(t.After)
			}
			if t.Params, err = j.RenderParams(at); err != nil {
				return err
			}
		}
		if t.Params != nil {
			p.Params = *t.Params
		}
		// One read of the group's row: its state (locked unless forced)
		// and its flow controls, which the run's trigger carries.
		g, err := readGroupRow(ctx, tx, j.Group, !t.Force)
		if err != nil {
			return err
		}
		if !t.Force && g.state != FlowActive {
			return fmt.Errorf("%w: group %q is %s; trigger with force to run the job all the same", ErrGroupPaused, j.Group, g.state)
		}
		p.Flow = runFlow(&j, g, t.Priority)
		if t.Key != "" {
			earlier, err := claimTriggerKey(ctx, tx, j.ID, t)
			if err != nil || earlier != 0 {
				p, replayed = runs.Planned{RunID: earlier, JobID: j.ID}, true
				return err
			}
		}
		if err := runs.InsertManual(ctx, tx, &p, t.Params, t.Priority, t.At, t.After); err != nil {
			return err
		}
		if t.Key != "" {
			if _, err := tx.Exec(ctx, `UPDATE trigger_keys SET run_id = $3 WHERE job_id = $1 AND key = $2`, j.ID, t.Key, p.RunID); err != nil {
				return fmt.Errorf("record idempotency key: %w", err)
			}
		}
		doc := runAudit{ID: p.RunID, JobID: j.ID, Status: string(wire.StatusScheduled), Params: t.Params, RerunOf: t.note.RerunOf, Key: t.Key,
			Priority: t.Priority}
		if !t.At.IsZero() || t.After > 0 {
			doc.At = &p.ScheduledAt
		}
		return writeAudit(ctx, tx, a, "job.trigger", JobTarget(j.ID), j.Group, nil, doc)
	})
	if err != nil {
		return p, false, fmt.Errorf("insert manual run of job %d: %w", jobID, err)
	}
	return p, replayed, nil
}

// claimTriggerKey claims t.Key for a trigger of job in tx and returns 0,
// or, when a trigger of the last KeyWindow holds it, that trigger's run
// (ErrKeyReused if it asked for something else). A key older than the
// window is taken over. Two triggers racing with one key serialise on the
// primary key: the second waits for the first to commit, then sees it.
func claimTriggerKey(ctx context.Context, tx pgx.Tx, job int64, t Trigger) (int64, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO trigger_keys (job_id, key, request) VALUES ($1, $2, $3)
		ON CONFLICT (job_id, key) DO UPDATE SET request = EXCLUDED.request, run_id = 0, created_at = clock_timestamp()
		WHERE trigger_keys.created_at < clock_timestamp() - $4 * interval '1 microsecond'`,
		job, t.Key, t.Request, KeyWindow.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("claim idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return 0, nil
	}
	var (
		request []byte
		run     int64
	)
	if err := tx.QueryRow(ctx, `SELECT request, run_id FROM trigger_keys WHERE job_id = $1 AND key = $2`, job, t.Key).Scan(&request, &run); err != nil {
		return 0, fmt.Errorf("read idempotency key: %w", err)
	}
	if !bytes.Equal(request, t.Request) {
		return 0, fmt.Errorf("key %q: %w", t.Key, ErrKeyReused)
	}
	return run, nil
}

// ForgetTriggerKeys deletes in tx the idempotency keys of triggers made
// before before (the maintenance loop, with now minus KeyWindow) and
// returns how many.
func ForgetTriggerKeys(ctx context.Context, tx pgx.Tx, before time.Time) (int64, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM trigger_keys WHERE created_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("delete trigger keys: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ErrRunEnded is returned when killing a run that already ended.
var ErrRunEnded = errors.New("run already ended")

// CancelRun records a kill of a run. A run not yet published ends
// CANCELLED at once; a published or running one is left to its worker,
// which reports CANCELLED when it stops it (the caller sends the kill
// request). It returns the run as it is after the call, and records a
// run.kill by a.
func (s *Store) CancelRun(ctx context.Context, a Actor, id int64, reason string) (Run, error) {
	var (
		out     Run
		wfEnded []wfengine.Ended
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		wfEnded = nil
		r, err := rowOf(ctx, tx, "run", `SELECT `+runColumns+` FROM job_runs WHERE id = $1 FOR UPDATE`, id, scanRun)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return fmt.Errorf("run %d: %w (%s)", id, ErrRunEnded, r.Status)
		}
		before := runAudit{ID: r.ID, JobID: r.JobID, Status: string(r.Status)}
		if r.Status == wire.StatusScheduled {
			// A node run's end advances its workflow run here, as the
			// results applier does for an end a worker reports; the node
			// runs that start are fired by the shard owners' sweep.
			ends, err := runs.CancelNodeRuns(ctx, tx, []int64{id}, []time.Time{r.ScheduledAt}, reason)
			if err != nil {
				return err
			}
			done, err := wfengine.Advance(ctx, tx, ends, s.maxChainRuns)
			if err != nil {
				return err
			}
			wfEnded = done.Ended
			if r, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs WHERE id = $1 AND scheduled_at = $2`, id, r.ScheduledAt)); err != nil {
				return err
			}
		}
		out = r
		return writeAudit(ctx, tx, a, "run.kill", runTarget(id), r.Group, before,
			runAudit{ID: r.ID, JobID: r.JobID, Status: string(r.Status)})
	})
	if err != nil {
		return out, fmt.Errorf("cancel run %d: %w", id, err)
	}
	s.endedWorkflows(wfEnded)
	return out, nil
}
