// Package apiv1 holds the JSON documents of jetjob's HTTP API (/api/v1),
// shared by the server (package api), the Go client and the CLI.
//
// Endpoints (all require "Authorization: Bearer <API key>" or a session
// cookie, unless the scheduler runs with --insecure-no-auth; who may call
// which is in access.go; signing in through identity providers in sso.go):
//
//	GET    /api/v1/groups                      → GroupList
//	POST   /api/v1/groups            Group     → 201 Group
//	POST   /api/v1/jobs              JobSpec   → 201 Job
//	GET    /api/v1/jobs?group=&q=&handler=&enabled=&schedule_type=&sort=&order=&limit=&cursor= → JobList
//	       (sort id|name|next_fire|updated, order asc|desc; the id order also pages by "after", the last id seen)
//	GET    /api/v1/jobs/{id}                   → Job
//	PUT    /api/v1/jobs/{id}         JobSpec   → Job (JobSpec.Version or If-Match required; stale: 409 Error.CurrentVersion)
//	DELETE /api/v1/jobs/{id}                   → 204
//	POST   /api/v1/jobs/{id}/enable  [EnableRequest]  → Job
//	POST   /api/v1/jobs/{id}/disable [DisableRequest] → Job
//	POST   /api/v1/jobs/{id}/backfill BackfillRequest → 201 Backfill
//	GET    /api/v1/jobs/{id}/backfills         → BackfillList (newest first)
//	GET    /api/v1/backfills?group=&state=&limit= → BackfillList (the caller's groups, newest first)
//	GET    /api/v1/backfills/{id}              → Backfill
//	POST   /api/v1/backfills/{id}/cancel       → Backfill
//	POST   /api/v1/jobs/{id}/trigger TriggerRequest → 202 Run (200: an idempotent repeat)
//	GET    /api/v1/jobs/{id}/next?n=5          → NextFires (the scheduled_at of the next runs)
//	GET    /api/v1/jobs/{id}/runs?limit=&before= → RunList (newest first by scheduled time; "before" is the last id seen)
//	GET    /api/v1/runs/{id}                   → Run
//	GET    /api/v1/runs/{id}/logs?from=&limit=&follow= → RunLogs, or with follow=true an NDJSON stream of LogLine
//	GET    /api/v1/workers?group=              → WorkerList (live workers by group and id, and each group's backlog)
//	POST   /api/v1/runs/{id}/kill              → 202 Run (409 if it already ended)
//	GET    /api/v1/runs?job=&group=&worker=&status=&trigger_type=&from=&to=&limit=&cursor= → RunList (search, newest first)
//	GET    /api/v1/stats?from=&to=&job=&group= → Stats (daily report)
//	GET    /api/v1/schedule/preview, /dashboard, /cluster → the console's documents (console.go)
//
// Errors answer with a status code and an Error document.
//
// The whole API is described by openapi.json in this package (OpenAPI
// 3.1, generated from the server's route table and these types; served
// publicly at GET /api/v1/openapi.json; see docs/api.md).
package apiv1

import (
	"encoding/json"
	"fmt"
	"time"
)

// Error is the body of every non-2xx answer.
type Error struct {
	Error string `json:"error"`
	// Permission names what a 403 lacked, e.g. "operator of group billing".
	Permission string `json:"permission,omitempty"`
	// CurrentVersion is the job's version when a PUT carried a stale one
	// (409): re-read the job, re-apply the change, send this version.
	CurrentVersion int64 `json:"current_version,omitempty"`
}

// Group is an executor group: the workers that can run its jobs.
type Group struct {
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
	// CommandHandlers are the group's handlers that run commands, besides
	// shell: creating or editing their jobs needs the scripts permission.
	CommandHandlers []string  `json:"command_handlers,omitempty"`
	CreatedAt       time.Time `json:"created_at,omitzero"`
	// MaxRunning caps the runs of the group that execute at once, across
	// all its workers (0 to 1000; 0: no cap). Set with PATCH
	// /groups/{name} (docs/flow-control.md).
	MaxRunning int `json:"max_running,omitempty"`
	// RateLimit limits the starts of all the group's runs, written
	// COUNT/PERIOD ("100/1m", "5/1s"); empty: none.
	RateLimit string `json:"rate_limit,omitempty"`
	// Flow is the group's pause or drain (answers only; set with POST
	// /groups/{name}/pause, /drain and /resume).
	Flow *GroupFlow `json:"flow,omitempty"`
}

// GroupLimitsRequest is the body of PATCH /groups/{name}: the fields
// given are changed, the others kept.
type GroupLimitsRequest struct {
	// MaxRunning is the group's cap, 0 to 1000 (0: no cap).
	MaxRunning *int `json:"max_running,omitempty"`
	// RateLimit is COUNT/PERIOD (count 1 to 100000, period 10ms to 24h),
	// "" to remove the limit.
	RateLimit *string `json:"rate_limit,omitempty"`
}

// GroupQueue answers GET /groups/{name}/queue: what holds and waits for
// the group's cap and rate limit, as JETJOB_LOCKS says, and the group's
// runs in flight, as the database says (docs/flow-control.md).
type GroupQueue struct {
	Group string `json:"group"`
	// At is when the view was read (the rate's figures are as of then).
	At time.Time `json:"at"`
	// MaxRunning and RateLimit are the group's limits (0, "": none).
	MaxRunning int    `json:"max_running"`
	RateLimit  string `json:"rate_limit,omitempty"`
	// Running are the runs holding one of the cap's slots (its use:
	// len(running) of max_running).
	Running []QueuedRun `json:"running"`
	// Waiting are the runs waiting for a slot, in the order they get one:
	// priority (higher first), then fire time, then run id.
	Waiting []QueuedRun `json:"waiting"`
	// Rate is the rate limit's state; nil without a limit.
	Rate *GroupRate `json:"rate,omitempty"`
	// InFlight are the group's runs that may be running (RUNNING,
	// TRIGGERED, or SCHEDULED and due), oldest fire first, at most 500
	// (InFlightMore: there are more). It needs no cap: it is read from
	// the runs.
	InFlight     []QueuedRun `json:"in_flight"`
	InFlightMore bool        `json:"in_flight_more,omitempty"`
	// LocksError says why JETJOB_LOCKS could not be read (running,
	// waiting and rate are then empty); the runs in flight are still
	// listed.
	LocksError string `json:"locks_error,omitempty"`
}

// QueuedRun is a run of a group's queue view.
type QueuedRun struct {
	RunID int64 `json:"run_id"`
	// JobID and JobName name the run's job (0 and "" when jetjob has no
	// such run in the group: a key naming a run it does not know).
	JobID   int64  `json:"job_id,omitempty"`
	JobName string `json:"job_name,omitempty"`
	Status  string `json:"status,omitempty"`
	// WorkerID is the worker holding or waiting (from the lock), else the
	// worker the run went to (from the run).
	WorkerID string `json:"worker_id,omitempty"`
	// Priority of a waiting run (higher goes first).
	Priority int `json:"priority,omitempty"`
	// FireAt is the run's fire time (a waiter's, as it queued).
	FireAt *time.Time `json:"fire_at,omitempty"`
}

// GroupRate is the state of a group's rate limit (docs/flow-control.md,
// "Keys in JETJOB_LOCKS and JETJOB_RATES"), read as how many runs may
// start at once now and when the next may.
type GroupRate struct {
	// TAT is when the limit's next block of starts may begin, as
	// JETJOB_RATES holds it (nil: past, the limit is idle).
	TAT *time.Time `json:"tat,omitempty"`
	// Available is how many runs may start now without waiting (0 to the
	// limit's count).
	Available int `json:"available"`
	// NextFreeAt is when the next start may go: at (now) when Available
	// is more than 0.
	NextFreeAt time.Time `json:"next_free_at"`
}

// GroupFlow is a group's flow state (docs/flow-control.md).
type GroupFlow struct {
	// State is active, paused, draining (no new run starts, some still
	// in flight) or drained (draining, none in flight).
	State string `json:"state"`
	// Note, By and At say why, who and when the state was set.
	Note string     `json:"note,omitempty"`
	By   string     `json:"by,omitempty"`
	At   *time.Time `json:"at,omitempty"`
	// Running counts the group's runs in flight (running, or published
	// and not yet started) while it is paused or draining.
	Running int `json:"running"`
}

// GroupFlowRequest is the optional body of POST /groups/{name}/pause,
// /drain and /resume.
type GroupFlowRequest struct {
	// Note says why (at most 1000 characters).
	Note string `json:"note,omitempty"`
}

// GroupList answers GET /groups.
type GroupList struct {
	Groups []Group `json:"groups"`
}

// JobSpec is what a user writes: POST /jobs and PUT /jobs/{id}. Empty
// strategy fields take their defaults.
type JobSpec struct {
	Group       string `json:"group"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Handler     string `json:"handler"`
	Params      string `json:"params,omitempty"`
	// ParamsTemplate makes Params a template over each fire, rendered
	// into the run's params when the run is written (docs/jobs.md,
	// "Params templates"): {{ .ScheduledAt | date "2006-01-02" }}.
	ParamsTemplate bool `json:"params_template,omitempty"`
	// ScheduleType is cron, quartz, fix_rate, fix_delay, once or none.
	ScheduleType string `json:"schedule_type"`
	// ScheduleExpr is a cron expression (seconds field optional,
	// descriptors like "@every 10s"), a Quartz cron expression for quartz
	// as xxl-job stores it ("0 15 10 ? * 6L": 6 or 7 fields, ? L W #,
	// day-of-week 1 = Sunday), a duration for fix_rate/fix_delay ("30s"),
	// an RFC 3339 time for once, empty for none.
	ScheduleExpr string `json:"schedule_expr,omitempty"`
	// Timezone is an IANA zone for cron and quartz (default UTC).
	Timezone string `json:"timezone,omitempty"`
	// Schedules, when given, are all the job's schedules: it fires at
	// their union, once at an instant two of them share. Several must all
	// be cron or quartz, each in its own zone. The first is also the
	// schedule_type, schedule_expr and timezone above (which may be left
	// out, or must agree); a job with one schedule answers without this
	// list, as before.
	Schedules     []Schedule `json:"schedules,omitempty"`
	MisfirePolicy string     `json:"misfire_policy,omitempty"`
	// ExcludeCalendars and IncludeCalendars name calendars (GET
	// /api/v1/calendars): a fire on a day of an exclude calendar, judged
	// in its schedule's zone, is recorded SKIPPED ("excluded by calendar
	// X") unless the day is in an include calendar. Global calendars and
	// the job's group's may be named; not with fix_delay.
	ExcludeCalendars []string `json:"exclude_calendars,omitempty"`
	IncludeCalendars []string `json:"include_calendars,omitempty"`
	// Labels are key=value pairs a label selector picks jobs by (GET
	// /jobs?labels=env=prod,team=billing, POST /jobs/bulk); Owner says
	// who to ask about the job (a person, a team), at most 200 characters.
	Labels        map[string]string `json:"labels,omitempty"`
	Owner         string            `json:"owner,omitempty"`
	RouteStrategy string            `json:"route_strategy,omitempty"`
	BlockStrategy string            `json:"block_strategy,omitempty"`
	Timeout       Duration          `json:"timeout,omitempty"`
	MaxRetries    int               `json:"max_retries,omitempty"`
	// RetryBackoff is exponential (default: initial × 2^attempt with up
	// to 20 % jitter, capped at retry_max) or fixed (retry_initial).
	RetryBackoff string   `json:"retry_backoff,omitempty"`
	RetryInitial Duration `json:"retry_initial,omitempty"` // default 1s
	RetryMax     Duration `json:"retry_max,omitempty"`     // default 5m
	// ChildJobIDs are triggered when a run of this job succeeds. A child
	// added must be a job the writer could trigger (else refused like an
	// id that does not exist); a cycle, or a reach past the scheduler's
	// --max-chain-runs runs per fire, is refused (package refs).
	ChildJobIDs []int64 `json:"child_job_ids,omitempty"`
	// SecretEnv gives the job's commands secrets of its group as
	// environment variables: {"DB_PASSWORD": "db-password"}. Params may
	// also name a secret's value as ${secret:NAME}, replaced only in the
	// params the worker's handler gets. Adding a reference needs operator
	// with scripts on the group, and the secret must be the group's
	// (docs/jobs.md, "Secrets").
	SecretEnv map[string]string `json:"secret_env,omitempty"`
	// AlarmWebhook receives a POST when the last attempt of a run fails
	// (through the scheduler's egress policy: a URL naming a loopback,
	// private, link-local or metadata address is refused with 400 unless
	// --egress-allow allows it); AlarmEmails an email (SMTP configured on
	// the scheduler).
	AlarmWebhook string   `json:"alarm_webhook,omitempty"`
	AlarmEmails  []string `json:"alarm_emails,omitempty"`

	// Source says where an importer took the job from ("xxl-job
	// xxl_job#7": database xxl_job, job 7); a re-import finds its jobs by
	// it. At most 200 characters; "" for a job made otherwise.
	Source string `json:"source,omitempty"`

	// MaxConcurrency caps the runs of a job with block_strategy concurrent
	// that execute at once (0: no cap); refused with any other strategy.
	MaxConcurrency int `json:"max_concurrency,omitempty"`

	// Sharding, with a total of 2 to 1000, runs every fire as that many
	// parts (index 0..total-1) on the group's shared queue, each retried
	// alone; the children fire once, after the last part succeeded
	// (docs/jobs.md, "Fixed shard count"). Absent, 0 or 1: one run per
	// fire. Refused with route_strategy sharding_broadcast.
	Sharding *Sharding `json:"sharding,omitempty"`

	// Flow controls (docs/flow-control.md, "Caps, keys, rates and
	// priority"), applied by the worker across the whole group. Priority
	// orders the job's runs among those waiting at their group's cap
	// (the group's max_running) or their key's cap: -100 to 100, higher
	// first, default 0. ConcurrencyKey is params or
	// params.<field>[.<field>...], evaluated over each run's params;
	// KeyCap runs of the job with the same key execute at once (0 to
	// 1000, 0: no cap; needs a key). RateLimit limits the job's starts,
	// KeyRateLimit the starts per key (needs a key), each written
	// COUNT/PERIOD: "100/1m", "5/1s" (1 to 100000 per 10ms to 24h).
	Priority       int    `json:"priority,omitempty"`
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	KeyCap         int    `json:"key_cap,omitempty"`
	RateLimit      string `json:"rate_limit,omitempty"`
	KeyRateLimit   string `json:"key_rate_limit,omitempty"`

	// A script job (handler "script", docs/jobs.md "Script jobs") runs a
	// script the scheduler stores with its versions: ScriptLanguage is
	// bash, python3, python2, nodejs, php or powershell (required with
	// handler script, refused with any other); Script its source. On a
	// create Script is the first version; on a PUT a Script (or language)
	// other than the current one is saved as a new version with
	// ScriptRemark, and a PUT without Script keeps the source. Reading a
	// job gives the current source and ScriptVersion.
	ScriptLanguage string  `json:"script_language,omitempty"`
	Script         *string `json:"script,omitempty"`
	ScriptRemark   string  `json:"script_remark,omitempty"`

	// Enabled defaults to true on create.
	Enabled *bool `json:"enabled,omitempty"`
	// Schedule operations (see schedops.go): MisfireThreshold and
	// MaxCatchup override the scheduler's --misfire-threshold and
	// --max-catchup (0: those defaults); Jitter, StartAt and EndAt shape
	// the fire times.
	MisfireThreshold Duration   `json:"misfire_threshold,omitempty"`
	MaxCatchup       int        `json:"max_catchup,omitempty"`
	Jitter           Duration   `json:"jitter,omitempty"`
	StartAt          *time.Time `json:"start_at,omitempty"`
	EndAt            *time.Time `json:"end_at,omitempty"`
	// Version is the version of the job a PUT was based on (Job.Version):
	// when the job changed since, the PUT answers 409 instead of
	// overwriting the other change. Ignored on create.
	Version int64 `json:"version,omitempty"`
}

// Sharding is a job's fixed shard count (JobSpec.Sharding).
type Sharding struct {
	Total int `json:"total"`
}

// Schedule is one of a job's schedules (JobSpec.Schedules).
type Schedule struct {
	Type     string `json:"type"`
	Expr     string `json:"expr,omitempty"`
	Timezone string `json:"timezone,omitempty"`
}

// Job is a stored job.
type Job struct {
	ID int64 `json:"id"`
	JobSpec
	Enabled bool `json:"enabled"`
	Shard   int  `json:"shard"`
	// NextFireAt is absent while the job is disabled: it fires no more.
	// LastFireAt is its newest fire due by now (one planned ahead is not
	// fired yet).
	NextFireAt *time.Time `json:"next_fire_at,omitempty"`
	LastFireAt *time.Time `json:"last_fire_at,omitempty"`
	Version    int64      `json:"version"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	// Set while the job is disabled through POST .../disable: the note
	// given, when, and by whom.
	PausedNote string     `json:"paused_note,omitempty"`
	PausedAt   *time.Time `json:"paused_at,omitempty"`
	PausedBy   string     `json:"paused_by,omitempty"`
	// ScriptVersion is a script job's current script version.
	ScriptVersion int `json:"script_version,omitempty"`
	// Secrets are the names of every secret the job references (its
	// secret_env's and its params' placeholders); never values.
	Secrets []string `json:"secrets,omitempty"`
}

// Secret is a group's secret as the API shows it: never its value
// (docs/jobs.md, "Secrets").
type Secret struct {
	ID        int64     `json:"id"`
	Group     string    `json:"group"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	KeyID     string    `json:"key_id"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedBy string    `json:"updated_by"`
	UpdatedAt time.Time `json:"updated_at"`
	// Jobs are the ids of the jobs that reference it.
	Jobs []int64 `json:"jobs"`
}

// SecretWrite is the body of POST /secrets (group, name and value) and
// PUT /secrets/{id} (value only: a new version).
type SecretWrite struct {
	Group string `json:"group,omitempty"`
	Name  string `json:"name,omitempty"`
	Value string `json:"value"`
}

// SecretList answers GET /secrets.
type SecretList struct {
	Secrets []Secret `json:"secrets"`
}

// JobList answers GET /jobs.
type JobList struct {
	Jobs []Job `json:"jobs"`
	// Next is the "after" value of the next page in the id order, 0 when
	// this is the last page.
	Next int64 `json:"next,omitempty"`
	// Cursor resumes the listing in any order (pass it as ?cursor= with
	// the same sort and order); empty on the last page.
	Cursor string `json:"cursor,omitempty"`
	// Prev, passed as ?before= with the same sort and order, lists the
	// page before this one; empty on the first page.
	Prev string `json:"prev,omitempty"`
	// Total (asked with ?total=true) is how many jobs match the filters,
	// and Offset how many of them come before this page in its order:
	// "Offset+1 to Offset+len(Jobs) of Total".
	Total  *int `json:"total,omitempty"`
	Offset int  `json:"offset,omitempty"`
}

// TriggerRequest is the body of POST /jobs/{id}/trigger (and of a
// workflow's). Params, when set, replace the job's params for this run.
type TriggerRequest struct {
	Params *string `json:"params,omitempty"`
	// At runs the job once at this time instead of now; Delay (a Go
	// duration: "90s", "2h30m") once after this long. At most one of the
	// two, at most a year ahead. The run is written at once as SCHEDULED at
	// that time: visible in the job's runs, cancelled by killing it.
	At    *time.Time `json:"at,omitempty"`
	Delay string     `json:"delay,omitempty"`
	// IdempotencyKey (or the Idempotency-Key header) makes the trigger
	// safe to repeat: another trigger of the job with the key within 24
	// hours answers 200 with this one's run instead of making a run, and
	// 409 if it asks for something else (other params, at or delay).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Force runs the job even while its group is paused or draining
	// (refused with 409 otherwise).
	Force bool `json:"force,omitempty"`
	// Priority, when set, is this run's priority instead of its job's
	// (-100 to 100; docs/flow-control.md): its retries keep it. A job
	// trigger's only.
	Priority *int `json:"priority,omitempty"`
}

// BulkRequest is the body of POST /jobs/bulk: one action on every job a
// label selector picks (of Group, when given), or on the jobs IDs names,
// each as if asked of the job alone (its group's permission, its audit
// entry).
type BulkRequest struct {
	// Selector is "key=value[,key=value...]"; IDs, instead, names the jobs
	// (at most max of them). One of the two is required.
	Selector string  `json:"selector,omitempty"`
	IDs      []int64 `json:"ids,omitempty"`
	Group    string  `json:"group,omitempty"`
	// Kind is what the request acts on: job (default) or workflow.
	Kind string `json:"kind,omitempty"`
	// Action is enable, disable, trigger or delete (not for workflows).
	Action string `json:"action"`
	// Note is a disable's note.
	Note string `json:"note,omitempty"`
	// Max refuses the request (400) when the selector picks (or IDs names)
	// more jobs (default 100, at most 1000): a bulk action is bounded.
	Max int `json:"max,omitempty"`
}

// BulkResult answers POST /jobs/bulk: what happened to each job picked.
type BulkResult struct {
	Matched int        `json:"matched"`
	Done    int        `json:"done"`
	Items   []BulkItem `json:"items"`
}

// BulkItem is one job of a bulk action: done, or refused with the reason.
type BulkItem struct {
	JobID int64  `json:"job_id"`
	Name  string `json:"name"`
	Group string `json:"group"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// RunID is the run a trigger made.
	RunID int64 `json:"run_id,omitempty"`
}

// NextFires answers GET /jobs/{id}/next.
type NextFires struct {
	Times []time.Time `json:"times"`
	// Excluded are the fires among them that the job's calendars exclude
	// (each recorded as a SKIPPED run when its time comes): not in Times.
	Excluded []ExcludedFire `json:"excluded,omitempty"`
}

// ExcludedFire is a fire a calendar excludes.
type ExcludedFire struct {
	At       time.Time `json:"at"`
	Calendar string    `json:"calendar"`
}

// Run is one trigger attempt of a job.
type Run struct {
	ID          int64      `json:"id"`
	JobID       int64      `json:"job_id"`
	Group       string     `json:"group"`
	TriggerType string     `json:"trigger_type"`
	Status      string     `json:"status"`
	ScheduledAt time.Time  `json:"scheduled_at"`
	TriggeredAt *time.Time `json:"triggered_at,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Attempt     int        `json:"attempt"`
	RetryOf     *int64     `json:"retry_of,omitempty"`
	// ShardIndex and ShardTotal name a part (of a sharding broadcast, a
	// fixed shard count or a map/reduce fire); total 0 is a run of no
	// parts, which its handler sees as part 0 of 1.
	ShardIndex int     `json:"shard_index"`
	ShardTotal int     `json:"shard_total"`
	ParentRun  *int64  `json:"parent_run,omitempty"`
	WorkerID   string  `json:"worker_id,omitempty"`
	Params     string  `json:"params,omitempty"`
	Message    string  `json:"message,omitempty"`
	StreamSeq  *uint64 `json:"stream_seq,omitempty"`
	// AlarmStatus and AlarmError are history: how the job's alarm fields
	// were delivered for a run recorded before alerts took them over
	// (none, pending, sent, failed; the error a status or a class of
	// failure). Later runs' alarms are deliveries of the job's alert
	// (GET /api/v1/alerts; docs/alerts.md, "Per-job alarm fields"), and
	// these read none.
	AlarmStatus string `json:"alarm_status,omitempty"`
	// AlarmError is history too: see AlarmStatus.
	AlarmError string `json:"alarm_error,omitempty"`
	// Priority is the run's own priority, given by its manual trigger
	// (TriggerRequest.Priority) or kept from the run it retries; absent,
	// the run has its job's.
	Priority *int `json:"priority,omitempty"`
	// MapFire is the run that mapped, for a run of a map/reduce fire
	// (docs/flow-control.md, "Map/reduce"): that run's own id on it, the
	// root's on its parts (trigger type map, shard_index of shard_total)
	// and on its reduce run (trigger type reduce). Absent on any other run.
	MapFire *int64 `json:"map_fire,omitempty"`
}

// RunList answers GET /runs (search) and GET /jobs/{id}/runs.
type RunList struct {
	Runs []Run `json:"runs"`
	// Cursor is the "cursor" value of the next page (opaque), empty when
	// this is the last page.
	Cursor string `json:"cursor,omitempty"`
	// Next is the "before" value of the next page of GET /jobs/{id}/runs
	// (the last run id), 0 when this is the last page.
	Next int64 `json:"next,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\": %w", err)
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// IsZero lets omitempty/omitzero drop an unset timeout.
func (d Duration) IsZero() bool { return d == 0 }

// LogLine is one line a run's handler logged.
type LogLine struct {
	// Cursor orders every line of the run (the JetStream sequence); read
	// on from Cursor+1.
	Cursor uint64    `json:"cursor"`
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	Level  string    `json:"level"`
	Msg    string    `json:"msg"`
}

// RunLogs answers GET /runs/{id}/logs. With follow=true the answer is
// instead a stream of LogLine documents, one JSON object per line
// (application/x-ndjson), until the run has ended and its last line was sent.
type RunLogs struct {
	Lines []LogLine `json:"lines"`
	// Next is the "from" value to read on.
	Next uint64 `json:"next"`
}

// Worker is a live worker, from its latest heartbeat.
type Worker struct {
	ID        string    `json:"id"`
	Group     string    `json:"group"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	Handlers  []string  `json:"handlers"`
	Capacity  int       `json:"capacity"`
	Running   []int64   `json:"running"`
	StartedAt time.Time `json:"started_at"`
	BeatAt    time.Time `json:"beat_at"`
}

// WorkerList answers GET /workers.
type WorkerList struct {
	Workers []Worker `json:"workers"`
	// Groups is each group's capacity and backlog, by name: every group
	// with a live worker, a trigger consumer or stored triggers (with
	// ?group=, that group, even if it has none of these).
	Groups []GroupBacklog `json:"groups"`
}

// GroupBacklog is a group's capacity (from the live workers' heartbeats)
// beside the triggers waiting for it (sampled from JetStream every few
// seconds, at SampledAt). A group falls behind when Pending keeps growing
// and OldestPendingSeconds approaches the misfire threshold (5 s by
// default): its triggers then reach workers as misfires.
type GroupBacklog struct {
	Group string `json:"group"`
	// LiveWorkers is how many workers of the group have a live heartbeat;
	// Slots the sum of their capacity (--concurrency); Running the runs
	// they reported executing at their last beat.
	LiveWorkers int `json:"live_workers"`
	Slots       int `json:"slots"`
	Running     int `json:"running"`
	// Pending is the triggers stored that no worker has taken yet, on the
	// group's shared queue, its trigger batches and its workers' directed
	// subjects, one per run (a trigger batch counts as the runs it
	// carries; InFlight and Redelivered too).
	Pending int64 `json:"pending"`
	// OldestPendingSeconds is how long the oldest of them has waited (0
	// when none waits); OldestPendingAt when it was stored.
	OldestPendingSeconds float64    `json:"oldest_pending_seconds"`
	OldestPendingAt      *time.Time `json:"oldest_pending_at,omitempty"`
	// InFlight is the triggers delivered and not yet acknowledged: runs
	// executing, runs a block strategy holds back, triggers of a dead
	// worker awaiting redelivery. Redelivered is those of them delivered
	// more than once (a worker died or handed them back).
	InFlight    int64 `json:"in_flight"`
	Redelivered int64 `json:"redelivered"`
	// SampledAt is when Pending, OldestPending*, InFlight and Redelivered
	// were read; absent before the scheduler's first sample.
	SampledAt *time.Time `json:"sampled_at,omitempty"`
}

// Stats answers GET /stats: the daily report, per UTC day (of the runs'
// scheduled time), job and status.
type Stats struct {
	// From and To are the days covered, inclusive (YYYY-MM-DD, UTC).
	From string     `json:"from"`
	To   string     `json:"to"`
	Rows []StatsRow `json:"rows"`
}

// StatsRow is one day, job and status of the report.
type StatsRow struct {
	Day    string `json:"day"` // YYYY-MM-DD, UTC
	JobID  int64  `json:"job_id"`
	Group  string `json:"group"`
	Status string `json:"status"`
	Runs   int64  `json:"runs"`
	// TimedRuns are the runs with both a start and an end: the duration
	// percentiles (milliseconds) are over them, and absent when there are none.
	TimedRuns int64    `json:"timed_runs"`
	P50MS     *float64 `json:"p50_ms,omitempty"`
	P95MS     *float64 `json:"p95_ms,omitempty"`
	P99MS     *float64 `json:"p99_ms,omitempty"`
	MaxMS     *float64 `json:"max_ms,omitempty"`
	// Source is "rollup" for a finished day read from the daily rollup
	// (kept after the day's runs are dropped by retention), or "live" for
	// a day computed from the runs at the time of the request (today, or
	// a finished day the maintenance has not rolled up yet).
	Source string `json:"source"`
}
