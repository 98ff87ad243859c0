package apiv1

import (
	"encoding/json"
	"time"
)

// WorkflowSpec is what a client sends to create or replace a workflow
// (docs/workflows.md): a graph of nodes, each running a job, on a
// schedule like a job's.
type WorkflowSpec struct {
	Group       string `json:"group"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Params are a run's params when its trigger gives none: a JSON
	// object, read by nodes' params templates as {{ .params.<key> }}.
	Params string `json:"params,omitempty"`
	// The schedule, as a job's (JobSpec): none for a workflow run only by
	// hand.
	ScheduleType     string     `json:"schedule_type"`
	ScheduleExpr     string     `json:"schedule_expr,omitempty"`
	Timezone         string     `json:"timezone,omitempty"`
	MisfirePolicy    string     `json:"misfire_policy,omitempty"`
	MisfireThreshold Duration   `json:"misfire_threshold,omitempty"`
	MaxCatchup       int        `json:"max_catchup,omitempty"`
	Jitter           Duration   `json:"jitter,omitempty"`
	StartAt          *time.Time `json:"start_at,omitempty"`
	EndAt            *time.Time `json:"end_at,omitempty"`
	Enabled          *bool      `json:"enabled,omitempty"`
	// ExcludeCalendars and IncludeCalendars name calendars as a job's do
	// (JobSpec): a fire on an excluded day is recorded SKIPPED ("excluded
	// by calendar X"). Labels and Owner are a job's too: GET
	// /workflows?labels=team=billing picks workflows by a selector, and the
	// owner is an alert's default recipient (docs/alerts.md).
	ExcludeCalendars []string          `json:"exclude_calendars,omitempty"`
	IncludeCalendars []string          `json:"include_calendars,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Owner            string            `json:"owner,omitempty"`
	// Overlap is what a fire does while another run of the workflow is
	// active: serial (default: waits, QUEUED), discard_later (ends
	// DISCARDED), cover_early (cancels the older runs), buffer_one (one
	// waits, QUEUED; further fires end DISCARDED), concurrent (runs
	// alongside, up to MaxConcurrent; 0: no cap).
	Overlap       string `json:"overlap,omitempty"`
	MaxConcurrent int    `json:"max_concurrent,omitempty"`
	// Timeout bounds a whole run (0: none): past it the run is cancelled
	// and ends TIMED_OUT.
	Timeout Duration       `json:"timeout,omitempty"`
	Nodes   []WorkflowNode `json:"nodes"`
	Edges   []WorkflowEdge `json:"edges,omitempty"`
	// Version is the version a PUT was based on (409 if it changed).
	Version int64 `json:"version,omitempty"`
}

// WorkflowNode is one node: the job it runs, named by JobID or by Job
// ("group/name"; the API answers with both), or written inline, and how
// it runs.
type WorkflowNode struct {
	Name  string `json:"name"`
	JobID int64  `json:"job_id,omitempty"`
	Job   string `json:"job,omitempty"`
	// Inline is the node's own job spec, instead of naming a job (give
	// one or the other): the workflow keeps that job, written, changed
	// and deleted with it, run like any job but never listed, scheduled
	// or triggered by itself.
	Inline *InlineJob `json:"inline,omitempty"`
	// Params, when set, replace the job's params for this node's runs: a
	// template over the run ({{ .params.x }}, {{ .scheduled_at }},
	// {{ .nodes.<node>.output.<key> }}, {{ .item }}, {{ json ... }})
	// rendered when the node starts.
	Params *string `json:"params,omitempty"`
	// Join is all (default) or any.
	Join     string `json:"join,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	// ForEach is "nodes.<node>.output[.<key>...]": one run per element of
	// that list (at most 1,000), each seeing its element as {{ .item }}.
	ForEach string `json:"for_each,omitempty"`
	// Timeout and MaxRetries, when set, replace the job's for this node's
	// runs (a timeout of 0: none).
	Timeout    *Duration `json:"timeout,omitempty"`
	MaxRetries *int      `json:"max_retries,omitempty"`
}

// InlineJob is an inline node's job: a job's fields that make sense for a
// node (JobSpec says what each means), checked as a job's are. Group is
// the workflow's when empty; another group must be one whose jobs the
// writer may trigger, as for a job a node names.
type InlineJob struct {
	Group          string `json:"group,omitempty"`
	Handler        string `json:"handler"`
	Description    string `json:"description,omitempty"`
	Params         string `json:"params,omitempty"`
	MisfirePolicy  string `json:"misfire_policy,omitempty"`
	RouteStrategy  string `json:"route_strategy,omitempty"`
	BlockStrategy  string `json:"block_strategy,omitempty"`
	MaxConcurrency int    `json:"max_concurrency,omitempty"`
	// Sharding is the node's fixed shard count, as a job's: the node
	// ends when all its parts have.
	Sharding     *Sharding `json:"sharding,omitempty"`
	Timeout      Duration  `json:"timeout,omitempty"`
	MaxRetries   int       `json:"max_retries,omitempty"`
	RetryBackoff string    `json:"retry_backoff,omitempty"`
	RetryInitial Duration  `json:"retry_initial,omitempty"`
	RetryMax     Duration  `json:"retry_max,omitempty"`
	AlarmWebhook string    `json:"alarm_webhook,omitempty"`
	AlarmEmails  []string  `json:"alarm_emails,omitempty"`
	// The flow controls, as a job's (JobSpec): the node's runs wait at
	// its group's cap and its key's cap by this priority.
	Priority       int    `json:"priority,omitempty"`
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	KeyCap         int    `json:"key_cap,omitempty"`
	RateLimit      string `json:"rate_limit,omitempty"`
	KeyRateLimit   string `json:"key_rate_limit,omitempty"`
}

// JobSpec is in as the job spec it is checked and completed as (a job's
// rules and defaults hold for an inline job's fields): schedule none, the
// group in's, which the caller completes (the workflow's when empty).
func (in *InlineJob) JobSpec() JobSpec {
	return JobSpec{Group: in.Group, Handler: in.Handler, Description: in.Description, Params: in.Params,
		ScheduleType: "none", MisfirePolicy: in.MisfirePolicy, RouteStrategy: in.RouteStrategy,
		BlockStrategy: in.BlockStrategy, MaxConcurrency: in.MaxConcurrency, Sharding: in.Sharding, Timeout: in.Timeout, MaxRetries: in.MaxRetries,
		RetryBackoff: in.RetryBackoff, RetryInitial: in.RetryInitial, RetryMax: in.RetryMax,
		AlarmWebhook: in.AlarmWebhook, AlarmEmails: in.AlarmEmails,
		Priority: in.Priority, ConcurrencyKey: in.ConcurrencyKey, KeyCap: in.KeyCap, RateLimit: in.RateLimit, KeyRateLimit: in.KeyRateLimit}
}

// WorkflowEdge From → To: To may run when From settles as On says
// (success, the default; failure; always).
type WorkflowEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	On   string `json:"on,omitempty"`
}

// Workflow is a stored workflow.
type Workflow struct {
	ID int64 `json:"id"`
	WorkflowSpec
	Enabled    bool       `json:"enabled"`
	Shard      int        `json:"shard"`
	NextFireAt *time.Time `json:"next_fire_at,omitempty"`
	LastFireAt *time.Time `json:"last_fire_at,omitempty"`
	Version    int64      `json:"version"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	// Set while the workflow is paused (POST .../pause): the note given,
	// when, and by whom.
	PausedNote string     `json:"paused_note,omitempty"`
	PausedAt   *time.Time `json:"paused_at,omitempty"`
	PausedBy   string     `json:"paused_by,omitempty"`
}

// WorkflowList is a page of workflows, by id.
type WorkflowList struct {
	Workflows []Workflow `json:"workflows"`
}

// WorkflowRun is a run of a workflow; its id is the id of its workflow's
// run in the run listings. Nodes are filled when one run is read.
type WorkflowRun struct {
	ID          int64             `json:"id"`
	WorkflowID  int64             `json:"workflow_id"`
	Group       string            `json:"group"`
	Status      string            `json:"status"`
	ScheduledAt time.Time         `json:"scheduled_at"`
	Params      string            `json:"params,omitempty"`
	Message     string            `json:"message,omitempty"`
	NodeRuns    int               `json:"node_runs"`
	CreatedAt   time.Time         `json:"created_at"`
	StartedAt   *time.Time        `json:"started_at,omitempty"`
	FinishedAt  *time.Time        `json:"finished_at,omitempty"`
	TimeoutAt   *time.Time        `json:"timeout_at,omitempty"`
	Nodes       []WorkflowRunNode `json:"nodes,omitempty"`
}

// WorkflowRunNode is a node of a run: PENDING, RUNNING, SUCCEEDED,
// FAILED, SKIPPED or CANCELLED, why, and its runs.
type WorkflowRunNode struct {
	Name    string `json:"name"`
	JobID   int64  `json:"job_id"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Attempt int    `json:"attempt"`
	// Bypass: skipped, passing through as if succeeded (disabled, or
	// skipped by an operator).
	Bypass bool `json:"bypass,omitempty"`
	// Output is one given by hand (mark succeeded).
	Output json.RawMessage   `json:"output,omitempty"`
	Runs   []WorkflowNodeRun `json:"runs,omitempty"`
}

// WorkflowNodeRun is one run of a node (GET /api/v1/runs/{run_id} has the
// rest, and its log).
type WorkflowNodeRun struct {
	RunID       int64           `json:"run_id"`
	Attempt     int             `json:"attempt"`
	Item        int             `json:"item"`
	Status      string          `json:"status"`
	Message     string          `json:"message,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	ScheduledAt time.Time       `json:"scheduled_at"`
	StartedAt   *time.Time      `json:"started_at,omitempty"`
	FinishedAt  *time.Time      `json:"finished_at,omitempty"`
}

// WorkflowRunList is a page of a workflow's runs, newest first.
type WorkflowRunList struct {
	Runs []WorkflowRun `json:"runs"`
}

// NodeAction is the body of mark-succeeded and skip on a workflow run.
type NodeAction struct {
	Node string `json:"node"`
	// Output (mark-succeeded) is the node's output, passed on to the
	// nodes after it.
	Output json.RawMessage `json:"output,omitempty"`
	Reason string          `json:"reason,omitempty"`
}
