package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
)

// Actor is who makes a change. Every store function that changes what the
// API manages takes one and writes an audit_log row in the transaction of
// the change: the row exists exactly when the change does.
type Actor struct {
	// Name is the user, or "bootstrap", "anonymous-admin", "system".
	Name string
	// Auth is the credential: "key:<prefix>", "session:<id>", "bootstrap",
	// "none", "internal".
	Auth string
	// Client is the request's remote address ("" for internal changes).
	Client string
	// Refs is which jobs the actor may name in the references a change
	// adds (child jobs): package refs decides, inside the change's
	// transaction. Nil names none.
	Refs refs.Authority
}

// System is the actor of changes jetjob makes itself (dev's demo jobs): it
// may name any job.
var System = Actor{Name: "system", Auth: "internal", Refs: refs.Unrestricted}

// AuditEntry is one row of the audit log.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Actor  string
	Auth   string
	Action string
	Target string
	Group  string
	// Before and After are JSON documents, nil when absent.
	Before, After []byte
	Client        string
}

// writeAudit records a change inside its transaction. before and after are
// marshalled to JSON; nil leaves the column NULL.
func writeAudit(ctx context.Context, tx pgx.Tx, a Actor, action, target, group string, before, after any) error {
	if a.Name == "" {
		return fmt.Errorf("audit %s %s: no actor", action, target)
	}
	doc := func(v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	}
	b, err := doc(before)
	if err != nil {
		return fmt.Errorf("audit %s %s: %w", action, target, err)
	}
	af, err := doc(after)
	if err != nil {
		return fmt.Errorf("audit %s %s: %w", action, target, err)
	}
	var g *string
	if group != "" {
		g = &group
	}
	if _, err := tx.Exec(ctx, `INSERT INTO audit_log (actor, auth, action, target, group_name, before, after, client)
		VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8)`, a.Name, a.Auth, action, target, g, b, af, a.Client); err != nil {
		return fmt.Errorf("audit %s %s: %w", action, target, err)
	}
	return nil
}

// JobTarget, RunTarget, … name audit targets.
func JobTarget(id int64) string     { return "job:" + strconv.FormatInt(id, 10) }
func runTarget(id int64) string     { return "run:" + strconv.FormatInt(id, 10) }
func keyTarget(id int64) string     { return "key:" + strconv.FormatInt(id, 10) }
func userTarget(n string) string    { return "user:" + n }
func groupTarget(n string) string   { return "group:" + n }
func sessionTarget(u string) string { return "user:" + u }

// JobRevisionActions are the actions that change a job's definition: its
// history.
var JobRevisionActions = []string{"job.create", "job.update", "job.enable", "job.disable", "job.delete",
	"workflow.create", "workflow.update", "workflow.delete"}

// AuditFilter selects audit rows; zero fields do not filter.
type AuditFilter struct {
	Actor   string
	Target  string
	Group   string
	Actions []string
	// From (inclusive) and To (exclusive) bound the time.
	From, To time.Time
	// Before resumes a listing: only rows with a smaller id.
	Before int64
	Limit  int
}

// ListAudit returns up to f.Limit rows, newest (highest id) first, and
// whether more follow. Ids grow with time, so paging by id is keyset
// paging that neither skips nor repeats.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, bool, error) {
	if f.Limit <= 0 {
		return nil, false, fmt.Errorf("list audit: limit %d: want a positive page size", f.Limit)
	}
	var conds []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	if f.Actor != "" {
		conds = append(conds, "actor = "+arg(f.Actor))
	}
	if f.Target != "" {
		conds = append(conds, "target = "+arg(f.Target))
	}
	if f.Group != "" {
		conds = append(conds, "group_name = "+arg(f.Group))
	}
	if len(f.Actions) > 0 {
		conds = append(conds, "action = ANY("+arg(f.Actions)+")")
	}
	if !f.From.IsZero() {
		conds = append(conds, "at >= "+arg(f.From))
	}
	if !f.To.IsZero() {
		conds = append(conds, "at < "+arg(f.To))
	}
	if f.Before > 0 {
		conds = append(conds, "id < "+arg(f.Before))
	}
	q := `SELECT id, at, actor, auth, action, target, coalesce(group_name, ''), before, after, client FROM audit_log`
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	q += " ORDER BY id DESC LIMIT " + arg(f.Limit+1)
	rows, _ := s.pool.Query(ctx, q, args...)
	return pageOf(rows, f.Limit, "list audit", func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Auth, &e.Action, &e.Target, &e.Group, &e.Before, &e.After, &e.Client)
		return e, err
	})
}

// pageOf collects rows, read with LIMIT limit+1, into the page of their
// first limit and whether there are more: the one extra row of every
// listing that pages. what names the listing in an error.
func pageOf[T any](rows pgx.Rows, limit int, what string, scan pgx.RowToFunc[T]) ([]T, bool, error) {
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", what, err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// jobAudit is a job as the audit log keeps it: the API's field names.
type jobAudit struct {
	ID            int64    `json:"id"`
	Group         string   `json:"group"`
	Name          string   `json:"name"`
	Description   string   `json:"description,omitempty"`
	Handler       string   `json:"handler"`
	Params        string   `json:"params,omitempty"`
	ScheduleType  string   `json:"schedule_type"`
	ScheduleExpr  string   `json:"schedule_expr,omitempty"`
	Timezone      string   `json:"timezone"`
	MisfirePolicy string   `json:"misfire_policy"`
	RouteStrategy string   `json:"route_strategy"`
	BlockStrategy string   `json:"block_strategy"`
	MaxConc       int      `json:"max_concurrency,omitempty"`
	Shards        int      `json:"shards,omitempty"` // the fixed shard count (sharding.total)
	Timeout       string   `json:"timeout"`
	MaxRetries    int      `json:"max_retries"`
	RetryBackoff  string   `json:"retry_backoff"`
	RetryInitial  string   `json:"retry_initial"`
	RetryMax      string   `json:"retry_max"`
	ChildJobIDs   []int64  `json:"child_job_ids,omitempty"`
	AlarmWebhook  string   `json:"alarm_webhook,omitempty"`
	AlarmEmails   []string `json:"alarm_emails,omitempty"`
	Source        string   `json:"source,omitempty"`
	Enabled       bool     `json:"enabled"`
	Version       int64    `json:"version"`
	// The schedule operations (0 and nil: the defaults, left out).
	MisfireThreshold string     `json:"misfire_threshold,omitempty"`
	MaxCatchup       int        `json:"max_catchup,omitempty"`
	Jitter           string     `json:"jitter,omitempty"`
	StartAt          *time.Time `json:"start_at,omitempty"`
	EndAt            *time.Time `json:"end_at,omitempty"`
	// PausedNote is why the job is disabled: a disable's entry shows it.
	PausedNote string `json:"paused_note,omitempty"`
	// A script job's language and current script version (its versions'
	// own entries, script.save and script.rollback, hold the sources).
	ScriptLanguage string `json:"script_language,omitempty"`
	ScriptVersion  int    `json:"script_version,omitempty"`
	// Issue #34's fields (jobext.go).
	ExtraSchedules   []timing.Part     `json:"extra_schedules,omitempty"`
	ExcludeCalendars []string          `json:"exclude_calendars,omitempty"`
	IncludeCalendars []string          `json:"include_calendars,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Owner            string            `json:"owner,omitempty"`
	ParamsTemplate   bool              `json:"params_template,omitempty"`
	// SecretEnv names the secrets the job's commands get (never values).
	SecretEnv map[string]string `json:"secret_env,omitempty"`
	// Issue #33's flow controls (jobflow.go), left out when unset.
	Priority       int    `json:"priority,omitempty"`
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	KeyCap         int    `json:"key_cap,omitempty"`
	RateLimit      string `json:"rate_limit,omitempty"`
	KeyRateLimit   string `json:"key_rate_limit,omitempty"`
}

// optDuration is d as the audit log writes it, "" for 0 (the default).
func optDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func jobDoc(j Job) *jobAudit {
	return &jobAudit{ID: j.ID, Group: j.Group, Name: j.Name, Description: j.Description, Handler: j.Handler,
		Params: j.Params, ScheduleType: j.ScheduleType, ScheduleExpr: j.ScheduleExpr, Timezone: j.Timezone,
		MisfirePolicy: j.MisfirePolicy, RouteStrategy: j.RouteStrategy, BlockStrategy: j.BlockStrategy,
		MaxConc: j.MaxConcurrency, Shards: j.Shards, Timeout: j.Timeout.String(), MaxRetries: j.MaxRetries, RetryBackoff: j.RetryBackoff,
		RetryInitial: j.RetryInitial.String(), RetryMax: j.RetryMax.String(), ChildJobIDs: j.ChildJobIDs,
		AlarmWebhook: j.AlarmWebhook, AlarmEmails: j.AlarmEmails, Source: j.Source, Enabled: j.Enabled, Version: j.Version,
		MisfireThreshold: optDuration(j.MisfireThreshold), MaxCatchup: j.MaxCatchup, Jitter: optDuration(j.Jitter),
		StartAt: j.StartAt, EndAt: j.EndAt, PausedNote: j.PausedNote, ScriptLanguage: j.scriptLanguage(), ScriptVersion: j.scriptVersion(),
		ExtraSchedules: j.ExtraSchedules, ExcludeCalendars: j.ExcludeCalendars, IncludeCalendars: j.IncludeCalendars,
		Labels: j.Labels, Owner: j.Owner, ParamsTemplate: j.ParamsTemplate, SecretEnv: j.SecretEnv,
		Priority: j.Flow.Priority, ConcurrencyKey: j.Flow.ConcurrencyKey, KeyCap: j.Flow.KeyCap,
		RateLimit: j.Flow.Rate.String(), KeyRateLimit: j.Flow.KeyRate.String()}
}

// runAudit is a run as the audit log keeps it.
type runAudit struct {
	ID     int64   `json:"id"`
	JobID  int64   `json:"job_id"`
	Status string  `json:"status"`
	Params *string `json:"params,omitempty"`
	// RerunOf is the workflow run a re-run re-runs.
	RerunOf int64 `json:"rerun_of,omitempty"`
	// At is the time of a run triggered for later; Key the trigger's
	// idempotency key.
	At  *time.Time `json:"at,omitempty"`
	Key string     `json:"idempotency_key,omitempty"`
	// ScheduledAt is a deleted run's scheduled time (its day in the
	// statistics).
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"`
	// Priority is a manual trigger's own priority.
	Priority *int `json:"priority,omitempty"`
}

// Audit records a change of another package's tables (the alerts') inside
// its transaction, as the store's own writes are recorded.
func Audit(ctx context.Context, tx pgx.Tx, a Actor, action, target, group string, before, after any) error {
	return writeAudit(ctx, tx, a, action, target, group, before, after)
}
