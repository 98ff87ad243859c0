package api

import (
	"time"

	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/openapi"
)

// apiDocs documents every route of routeTable, by its pattern: what the
// OpenAPI document (scheduler/apiv1/openapi.json, served at
// GET /api/v1/openapi.json) says of it. A route without an entry, or an
// entry without a route, fails TestOpenAPIDocumentsEveryRoute; after a
// change here or in the apiv1 types, `make openapi` rewrites the
// document (TestOpenAPIFileIsCurrent fails until it is rewritten).
//
// An entry gives a summary, the query parameters the handler takes (its
// onlyParams), the request body as a zero value of its apiv1 type
// (BodyOptional for decodeOptional), and the answer: Status (default 200,
// or 204 without a Response) and a zero value of the type written. Error
// answers are apiv1.Error for every route; who may call a route comes
// from its rule (public or not). An Example body must be one the server
// accepts: TestOpenAPIExamplesAccepted sends each (in its order) to a
// fresh API.
var apiDocs = []openapi.Operation{
	{Pattern: "GET /healthz", Summary: "Liveness, with the build", Response: version.Healthz{}},
	{Pattern: "GET /readyz", Summary: "Readiness: PostgreSQL and NATS reachable, components up", Response: readiness{},
		Also: []openapi.Answer{{Status: 503, Description: "Not ready: why, and which components are down", Response: readiness{}}}},
	{Pattern: "GET /metrics", Summary: "Prometheus metrics (404 unless a scrape token is configured; send it as a bearer token)",
		Response: "", ContentType: "text/plain"},
	{Pattern: "GET /api/v1/openapi.json", Summary: "This OpenAPI document", Response: map[string]any{}},

	{Pattern: "POST /api/v1/login", Summary: "Log in with a password: sets the session cookie", Body: apiv1.LoginRequest{},
		Example: apiv1.LoginRequest{Name: "alice", Password: "correct horse battery staple"}, Response: apiv1.Me{}},
	{Pattern: "POST /api/v1/logout", Summary: "End the cookie's session"},
	{Pattern: "GET /api/v1/me", Summary: "Who the request authenticates as", Response: apiv1.Me{}},
	// Sign-in through the company's identity provider (docs/sso.md): the
	// console's and the CLI's halves of the OpenID flows.
	{Pattern: "GET /api/v1/sso", Summary: "The identity providers configured, for the sign-in page and `jetjob login --sso`", Response: apiv1.SSOInfo{}},
	{Pattern: "POST /api/v1/sso/{provider}/start", Summary: "Start an authorization code flow (PKCE): the provider's URL to send the browser to",
		Body: apiv1.SSOStart{}, Response: apiv1.SSOStarted{}},
	{Pattern: "POST /api/v1/sso/{provider}/session", Summary: "Finish the flow with the provider's code and state: a session (cookie)",
		Body: apiv1.SSOCallback{}, Response: apiv1.SSOSignedIn{}},
	{Pattern: "POST /api/v1/sso/{provider}/key", Summary: "Finish the flow with the provider's code and state: an API key (the CLI's loopback login)",
		Body: apiv1.SSOCallback{}, Status: 201, Response: apiv1.CreatedKey{}},
	{Pattern: "POST /api/v1/sso/{provider}/device", Summary: "Start a device authorization (the CLI): the code to show the user",
		Response: apiv1.SSODevice{}},
	{Pattern: "POST /api/v1/sso/{provider}/device/key", Summary: "Poll a device authorization: an API key once the user signed in",
		Body: apiv1.SSODevicePoll{}, Status: 201, Response: apiv1.CreatedKey{},
		Also: []openapi.Answer{{Status: 202, Description: "The user has not finished signing in yet: poll again after the interval", Response: apiv1.SSOPending{}}}},

	{Pattern: "GET /api/v1/groups", Summary: "List the executor groups (the caller's, unless admin)", Response: apiv1.GroupList{}},
	{Pattern: "POST /api/v1/groups", Summary: "Create a group", Body: apiv1.Group{}, Status: 201, Response: apiv1.Group{},
		Example: apiv1.Group{Name: "billing", Title: "Billing jobs"}},
	{Pattern: "POST /api/v1/groups/{name}/pause", Summary: "Pause a group, with a note: no new run of its jobs starts; missed fires follow each job's misfire policy on resume",
		Body: apiv1.GroupFlowRequest{}, BodyOptional: true, Example: apiv1.GroupFlowRequest{Note: "database maintenance"}, Response: apiv1.Group{}},
	{Pattern: "POST /api/v1/groups/{name}/drain", Summary: "Drain a group: start no new run, let running ones finish; its flow state reads drained once none is in flight",
		Body: apiv1.GroupFlowRequest{}, BodyOptional: true, Response: apiv1.Group{}},
	{Pattern: "POST /api/v1/groups/{name}/resume", Summary: "Resume a paused or draining group; missed fires follow each job's misfire policy",
		Body: apiv1.GroupFlowRequest{}, BodyOptional: true, Response: apiv1.Group{}},
	{Pattern: "PATCH /api/v1/groups/{name}", Summary: "Set a group's cap (max_running, 0: none) and rate limit (COUNT/PERIOD, \"\": none); the fields left out are kept",
		Body: apiv1.GroupLimitsRequest{}, Example: apiv1.GroupLimitsRequest{MaxRunning: ptr(5), RateLimit: ptr("100/1m")}, Response: apiv1.Group{}},
	{Pattern: "GET /api/v1/groups/{name}/queue", Summary: "What holds and waits for a group's cap, its rate limit's state, and its runs in flight",
		Response: apiv1.GroupQueue{}},

	{Pattern: "POST /api/v1/jobs", Summary: "Create a job", Body: apiv1.JobSpec{}, Status: 201, Response: apiv1.Job{},
		Example: apiv1.JobSpec{Group: "billing", Name: "nightly-invoices", Handler: "invoices", ScheduleType: "cron",
			ScheduleExpr: "0 2 * * *", Timezone: "Europe/Paris", Params: `{"dry_run":false}`, MaxRetries: 3,
			Timeout: apiv1.Duration(10 * time.Minute)}},
	{Pattern: "GET /api/v1/jobs", Summary: "List and search jobs", Response: apiv1.JobList{}, Query: []openapi.Param{
		openapi.Q("group", "only this group's jobs"), openapi.Q("q", "text in the name or description"),
		openapi.Q("handler", "this handler's jobs"), openapi.QBool("enabled", "enabled or disabled jobs only"),
		openapi.Q("schedule_type", "cron, quartz, fix_rate, fix_delay, once or none"),
		openapi.Q("labels", "a label selector: key=value[,key=value...]"),
		{Name: "sort", Enum: []string{"id", "name", "next_fire", "updated"}}, {Name: "order", Enum: []string{"asc", "desc"}},
		openapi.QInt("limit", "page size"), openapi.Q("cursor", "the previous page's cursor"),
		openapi.QInt("after", "sort=id only: the last id of the previous page (its next)"),
		openapi.Q("before", "a page's prev: lists the page before it"),
		openapi.QBool("total", "also count the matching jobs (total) and those before this page (offset)")}},
	{Pattern: "POST /api/v1/jobs/bulk", Summary: "Enable, disable, trigger or delete every job a label selector picks, or the jobs named by id (each authorized and audited as alone; bounded by max)",
		Body: apiv1.BulkRequest{}, Response: apiv1.BulkResult{}},
	{Pattern: "GET /api/v1/secrets", Summary: "List the secrets of the caller's groups (names and versions, never values)", Response: apiv1.SecretList{},
		Query: []openapi.Param{openapi.Q("group", "of this group")}},
	{Pattern: "POST /api/v1/secrets", Summary: "Create a group's secret (operator with scripts); the value is stored encrypted and never shown",
		Body: apiv1.SecretWrite{}, Status: 201, Response: apiv1.Secret{}},
	{Pattern: "GET /api/v1/secrets/{id}", Summary: "Get a secret (never its value)", Response: apiv1.Secret{}},
	{Pattern: "PUT /api/v1/secrets/{id}", Summary: "Set a secret's value: a new version", Body: apiv1.SecretWrite{}, Response: apiv1.Secret{}},
	{Pattern: "DELETE /api/v1/secrets/{id}", Summary: "Delete a secret (409 while a job references it)"},
	{Pattern: "GET /api/v1/calendars", Summary: "List the calendars (global ones and the caller's groups')", Response: apiv1.CalendarList{}},
	{Pattern: "GET /api/v1/calendars/{name}", Summary: "Get a calendar", Response: apiv1.Calendar{}},
	{Pattern: "PUT /api/v1/calendars/{name}", Summary: "Create or replace a calendar (201 when created)", Body: apiv1.Calendar{}, Response: apiv1.Calendar{},
		Also: []openapi.Answer{{Status: 201, Description: "Created", Response: apiv1.Calendar{}}}},
	{Pattern: "DELETE /api/v1/calendars/{name}", Summary: "Delete a calendar (409 while a job names it)"},
	{Pattern: "GET /api/v1/jobs/{id}", Summary: "Get a job", Response: apiv1.Job{}},
	{Pattern: "PUT /api/v1/jobs/{id}", Summary: "Replace a job (JobSpec.version or If-Match required; stale: 409 with current_version)",
		Body: apiv1.JobSpec{}, Response: apiv1.Job{}, Query: []openapi.Param{ifMatch}},
	{Pattern: "DELETE /api/v1/jobs/{id}", Summary: "Delete a job"},
	{Pattern: "POST /api/v1/jobs/{id}/enable", Summary: "Enable a job", Body: apiv1.EnableRequest{}, BodyOptional: true, Response: apiv1.Job{}},
	{Pattern: "POST /api/v1/jobs/{id}/disable", Summary: "Disable (pause) a job, with a note", Body: apiv1.DisableRequest{}, BodyOptional: true,
		Response: apiv1.Job{}},
	{Pattern: "POST /api/v1/jobs/{id}/trigger", Summary: "Run a job now, at a time or after a delay", Body: apiv1.TriggerRequest{},
		BodyOptional: true, Example: apiv1.TriggerRequest{Delay: "90s", IdempotencyKey: "deploy-4711"}, Status: 202, Response: apiv1.Run{},
		Query: []openapi.Param{idempotencyKey},
		Also:  []openapi.Answer{{Status: 200, Description: "An idempotent repeat: the first trigger's run", Response: apiv1.Run{}}}},
	{Pattern: "GET /api/v1/jobs/{id}/next", Summary: "The next fire times", Query: []openapi.Param{openapi.QInt("n", "how many (1-100, default 5)")},
		Response: apiv1.NextFires{}},
	{Pattern: "GET /api/v1/jobs/{id}/runs", Summary: "A job's runs, newest first", Response: apiv1.RunList{},
		Query: []openapi.Param{openapi.QInt("limit", "page size (1-500, default 20)"), openapi.QInt("before", "the previous page's next")}},
	{Pattern: "GET /api/v1/jobs/{id}/history", Summary: "A job's revisions (its audit entries)", Response: apiv1.AuditList{},
		Query: historyParams},
	{Pattern: "POST /api/v1/jobs/{id}/backfill", Summary: "Run every fire of the schedule in a past range", Body: apiv1.BackfillRequest{},
		Status: 201, Response: apiv1.Backfill{}},
	{Pattern: "GET /api/v1/jobs/{id}/backfills", Summary: "A job's backfills, newest first", Response: apiv1.BackfillList{}},
	{Pattern: "GET /api/v1/jobs/{id}/script", Summary: "A script job's current script (docs/jobs.md, Script jobs)", Response: apiv1.Script{}},
	{Pattern: "PUT /api/v1/jobs/{id}/script", Summary: "Save a new version of a script job's script (scripts permission)",
		Body: apiv1.ScriptSave{}, Response: apiv1.Script{}},
	{Pattern: "GET /api/v1/jobs/{id}/script/versions", Summary: "The kept versions of a job's script, newest first, without sources",
		Response: apiv1.ScriptVersionList{}},
	{Pattern: "GET /api/v1/jobs/{id}/script/versions/{v}", Summary: "One version of a job's script", Response: apiv1.Script{}},
	{Pattern: "GET /api/v1/jobs/{id}/script/diff", Summary: "The unified diff of two versions of a job's script", Response: apiv1.ScriptDiff{},
		Query: []openapi.Param{{Name: "from", Type: "integer", Required: true, Description: "the older version"},
			openapi.QInt("to", "the newer version (default: the current one)")}},
	{Pattern: "POST /api/v1/jobs/{id}/script/rollback", Summary: "Save an old version's source as a new version (scripts permission)",
		Body: apiv1.ScriptRollback{}, Response: apiv1.Script{}},
	{Pattern: "POST /api/v1/jobs/{id}/script/import", Summary: "Write an importer's older versions below a script job's current one (admin)",
		Body: apiv1.ScriptImport{}, Response: apiv1.ScriptVersionList{}},
	{Pattern: "GET /api/v1/backfills", Summary: "Every backfill of the caller's groups, newest first", Response: apiv1.BackfillList{},
		Query: []openapi.Param{openapi.Q("group", "of this group"), openapi.Q("state", "running, completed or cancelled"),
			openapi.QInt("limit", "page size (1-500, default 50)")}},
	{Pattern: "GET /api/v1/backfills/{id}", Summary: "Get a backfill", Response: apiv1.Backfill{}},
	{Pattern: "POST /api/v1/backfills/{id}/cancel", Summary: "Cancel a backfill", Response: apiv1.Backfill{}},

	{Pattern: "POST /api/v1/workflows", Summary: "Create a workflow", Body: apiv1.WorkflowSpec{}, Status: 201, Response: apiv1.Workflow{},
		Example: apiv1.WorkflowSpec{Group: "billing", Name: "month-end", ScheduleType: "none",
			Nodes: []apiv1.WorkflowNode{{Name: "extract", Job: "billing/extract"}, {Name: "load", Job: "billing/load"}},
			Edges: []apiv1.WorkflowEdge{{From: "extract", To: "load"}}}},
	{Pattern: "GET /api/v1/workflows", Summary: "List workflows, by id", Response: apiv1.WorkflowList{}, Query: []openapi.Param{
		openapi.Q("group", "only this group's"), openapi.Q("labels", "a label selector: key=value[,key=value...]"),
		openapi.QInt("after", "the last id of the previous page"), openapi.QInt("limit", "page size")}},
	{Pattern: "GET /api/v1/workflows/{id}", Summary: "Get a workflow", Response: apiv1.Workflow{}},
	{Pattern: "PUT /api/v1/workflows/{id}", Summary: "Replace a workflow (WorkflowSpec.version or If-Match required)",
		Body: apiv1.WorkflowSpec{}, Response: apiv1.Workflow{}, Query: []openapi.Param{ifMatch}},
	{Pattern: "DELETE /api/v1/workflows/{id}", Summary: "Delete a workflow"},
	{Pattern: "POST /api/v1/workflows/{id}/trigger", Summary: "Run a workflow (params: a JSON object)", Body: apiv1.TriggerRequest{},
		BodyOptional: true, Status: 202, Response: apiv1.Run{}, Query: []openapi.Param{idempotencyKey},
		Also: []openapi.Answer{{Status: 200, Description: "An idempotent repeat: the first trigger's run", Response: apiv1.Run{}}}},
	{Pattern: "GET /api/v1/workflows/{id}/runs", Summary: "A workflow's runs, newest first", Response: apiv1.WorkflowRunList{},
		Query: workflowRunParams[1:]},
	{Pattern: "GET /api/v1/workflows/{id}/history", Summary: "A workflow's revisions", Response: apiv1.AuditList{}, Query: historyParams},
	{Pattern: "POST /api/v1/workflows/{id}/pause", Summary: "Pause a workflow, with a note", Body: apiv1.DisableRequest{}, BodyOptional: true,
		Response: apiv1.Workflow{}},
	{Pattern: "POST /api/v1/workflows/{id}/resume", Summary: "Resume a workflow", Body: apiv1.EnableRequest{}, BodyOptional: true,
		Response: apiv1.Workflow{}},
	{Pattern: "POST /api/v1/workflows/{id}/backfill", Summary: "Run every fire of the workflow's schedule in a past range",
		Body: apiv1.BackfillRequest{}, Status: 201, Response: apiv1.Backfill{}},
	{Pattern: "GET /api/v1/workflow-runs", Summary: "A workflow's runs (?workflow= required), newest first", Response: apiv1.WorkflowRunList{},
		Query: workflowRunParams},
	{Pattern: "GET /api/v1/workflow-runs/{id}", Summary: "Get a workflow run, with its nodes", Response: apiv1.WorkflowRun{}},
	{Pattern: "POST /api/v1/workflow-runs/{id}/cancel", Summary: "Cancel a workflow run", Body: apiv1.NodeAction{}, BodyOptional: true,
		Status: 202, Response: apiv1.WorkflowRun{}},
	{Pattern: "POST /api/v1/workflow-runs/{id}/retry", Summary: "Retry a workflow run from its failed nodes", Body: apiv1.NodeAction{},
		BodyOptional: true, Status: 202, Response: apiv1.WorkflowRun{}},
	{Pattern: "POST /api/v1/workflow-runs/{id}/mark-succeeded", Summary: "Mark a node succeeded, with an output", Body: apiv1.NodeAction{},
		Status: 202, Response: apiv1.WorkflowRun{}},
	{Pattern: "POST /api/v1/workflow-runs/{id}/skip", Summary: "Skip a node", Body: apiv1.NodeAction{}, Status: 202, Response: apiv1.WorkflowRun{}},
	{Pattern: "POST /api/v1/workflow-runs/{id}/rerun", Summary: "Start a new run with this run's params", Status: 202, Response: apiv1.Run{}},

	{Pattern: "GET /api/v1/runs", Summary: "Search runs, newest first", Response: apiv1.RunList{}, Query: []openapi.Param{
		openapi.QInt("job", "this job's runs"), openapi.Q("group", "this group's runs"), openapi.Q("worker", "run by this worker"),
		openapi.Q("status", "statuses, comma-separated or repeated"), openapi.Q("trigger_type", "trigger types, comma-separated or repeated"),
		openapi.Q("from", "scheduled at or after (RFC 3339)"), openapi.Q("to", "scheduled before (RFC 3339)"),
		openapi.QInt("limit", "page size"), openapi.Q("cursor", "the previous page's cursor")}},
	{Pattern: "POST /api/v1/runs/import", Summary: "Import finished runs of another scheduler (admin)", Body: apiv1.RunImport{},
		Response: apiv1.RunImportResult{}},
	{Pattern: "GET /api/v1/runs/{id}", Summary: "Get a run", Response: apiv1.Run{}},
	{Pattern: "GET /api/v1/runs/{id}/logs", Summary: "A run's log lines, or with follow=true an NDJSON stream of LogLine until the run ends",
		Response: apiv1.RunLogs{}, Query: []openapi.Param{openapi.QInt("from", "the first cursor to read (default 0)"),
			openapi.QInt("limit", "lines (1-10000, default 1000)"), openapi.QBool("follow", "stream the lines as they come")},
		Also: []openapi.Answer{{Status: 200, Response: "", ContentType: "application/x-ndjson"}}},
	{Pattern: "POST /api/v1/runs/bulk", Summary: "Kill, re-run or delete up to 500 runs, named by ids or picked by a filter, each through its own route (authorized and audited as alone)",
		Body: apiv1.RunsBulk{}, Example: apiv1.RunsBulk{Action: apiv1.BulkKill, IDs: []int64{1}}, Response: apiv1.RunsBulkResult{}},
	{Pattern: "POST /api/v1/runs/{id}/kill", Summary: "Kill a run (409 if it already ended)", Status: 202, Response: apiv1.Run{}},
	{Pattern: "DELETE /api/v1/runs/{id}", Summary: "Delete an ended run with its log lines (409 if it has not ended, or belongs to a workflow run)"},
	{Pattern: "GET /api/v1/workers", Summary: "Live workers and each group's backlog", Response: apiv1.WorkerList{},
		Query: []openapi.Param{openapi.Q("group", "this group only")}},
	{Pattern: "GET /api/v1/stats", Summary: "The daily report", Response: apiv1.Stats{}, Query: []openapi.Param{
		openapi.Q("from", "first day, YYYY-MM-DD"), openapi.Q("to", "last day, YYYY-MM-DD"), openapi.QInt("job", "this job only"),
		openapi.Q("group", "this group only")}},
	{Pattern: "POST /api/v1/stats/import", Summary: "Import another scheduler's daily counts (admin)", Body: apiv1.StatsImport{},
		Response: apiv1.StatsImportResult{}},
	{Pattern: "GET /api/v1/schedule/preview", Summary: "The next fires of a schedule being written", Response: apiv1.SchedulePreview{},
		Query: []openapi.Param{openapi.Q("type", "schedule type"), openapi.Q("expr", "schedule expression"),
			openapi.Q("timezone", "IANA zone"), openapi.QInt("n", "how many"),
			openapi.Q("exclude", "exclude calendars, comma-separated: their fires are answered under excluded"),
			openapi.Q("include", "include calendars, comma-separated (days given back from the exclude ones)")}},
	{Pattern: "GET /api/v1/dashboard", Summary: "The console's first page", Response: apiv1.Dashboard{},
		Query: []openapi.Param{openapi.Q("group", "this group only")}},
	{Pattern: "GET /api/v1/cluster", Summary: "Schedulers, shards and dependencies", Response: apiv1.Cluster{}},

	{Pattern: "GET /api/v1/channels", Summary: "List alert channels", Response: []apiv1.Channel{}},
	{Pattern: "POST /api/v1/channels", Summary: "Create an alert channel", Body: apiv1.Channel{}, Status: 201, Response: apiv1.Channel{},
		Example: apiv1.Channel{Name: "ops-hook", Kind: "webhook", Group: "billing", Target: "https://hooks.example.com/jetjob"}},
	{Pattern: "GET /api/v1/channels/{id}", Summary: "Get an alert channel", Response: apiv1.Channel{}},
	{Pattern: "PUT /api/v1/channels/{id}", Summary: "Replace an alert channel (409 for one a job's alarm fields make)", Body: apiv1.Channel{}, Response: apiv1.Channel{}},
	{Pattern: "DELETE /api/v1/channels/{id}", Summary: "Delete an alert channel (409 for one a job's alarm fields make)"},
	{Pattern: "POST /api/v1/channels/{id}/test", Summary: "Send a test notice now", Response: apiv1.ChannelTest{}},
	{Pattern: "GET /api/v1/alert-rules", Summary: "List alert rules", Response: []apiv1.AlertRule{}},
	{Pattern: "POST /api/v1/alert-rules", Summary: "Create an alert rule", Body: apiv1.AlertRule{}, Status: 201, Response: apiv1.AlertRule{},
		Example: apiv1.AlertRule{Name: "billing-failures", Group: "billing", Events: []string{"failed", "timed_out"}, Channels: []int64{1},
			Enabled: true}},
	{Pattern: "GET /api/v1/alert-rules/{id}", Summary: "Get an alert rule", Response: apiv1.AlertRule{}},
	{Pattern: "PUT /api/v1/alert-rules/{id}", Summary: "Replace an alert rule's settings and channels (its job or group stays; 409 for one a job's alarm fields make)", Body: apiv1.AlertRule{},
		Response: apiv1.AlertRule{}},
	{Pattern: "DELETE /api/v1/alert-rules/{id}", Summary: "Delete an alert rule (409 for one a job's alarm fields make)"},
	{Pattern: "POST /api/v1/alert-rules/{id}/mute", Summary: "Mute an alert rule until a time (zero: unmute)", Body: apiv1.Mute{}},
	{Pattern: "GET /api/v1/alerts", Summary: "List alerts", Response: []apiv1.Alert{}, Query: []openapi.Param{
		openapi.Q("group", "this group only"), {Name: "state", Enum: []string{"open", "all"}}, openapi.QInt("limit", "at most (1-1000)")}},
	{Pattern: "GET /api/v1/alerts/{id}", Summary: "Get an alert, with its deliveries", Response: apiv1.Alert{}},
	{Pattern: "POST /api/v1/alerts/{id}/ack", Summary: "Acknowledge an alert"},
	{Pattern: "POST /api/v1/alerts/{id}/mute", Summary: "Mute an alert until a time (zero: unmute)", Body: apiv1.Mute{}},

	{Pattern: "GET /api/v1/users", Summary: "List users (admin)", Response: apiv1.UserList{}},
	{Pattern: "POST /api/v1/users", Summary: "Create a user (admin)", Body: apiv1.UserCreate{}, Status: 201, Response: apiv1.User{},
		Example: apiv1.UserCreate{Name: "alice", DisplayName: "Alice", Password: "correct horse battery staple",
			Grants: []apiv1.Grant{{Group: "billing", Role: apiv1.RoleOperator}}}},
	{Pattern: "GET /api/v1/users/{name}", Summary: "Get a user (admin, or the user)", Response: apiv1.User{}},
	{Pattern: "PATCH /api/v1/users/{name}", Summary: "Change a user (the user: display name, console language, password, revoke_credentials)",
		Body: apiv1.UserPatch{}, Response: apiv1.User{}},
	{Pattern: "DELETE /api/v1/users/{name}", Summary: "Delete a user (admin)"},
	{Pattern: "POST /api/v1/users/{name}/grants", Summary: "Set the user's grant on a group (admin)", Body: apiv1.Grant{},
		Response: apiv1.User{}},
	{Pattern: "POST /api/v1/users/{name}/password-link", Summary: "Issue a one-time set-password link for the user: the token is shown once (admin)",
		Body: apiv1.PasswordLinkRequest{}, BodyOptional: true, Status: 201, Response: apiv1.PasswordLink{}},
	{Pattern: "POST /api/v1/password-links/use", Summary: "Set a password with a set-password link's token (no credentials; 410 once used or expired)",
		Body: apiv1.PasswordLinkUse{}},
	{Pattern: "DELETE /api/v1/users/{name}/grants", Summary: "Remove the user's grant on a group (admin)", Response: apiv1.User{},
		Query: []openapi.Param{{Name: "group", Required: true, Description: "the group"}}},
	{Pattern: "GET /api/v1/keys", Summary: "List API keys (own; admin: anyone's)", Response: apiv1.KeyList{},
		Query: []openapi.Param{openapi.Q("user", "whose keys (default: the caller's)")}},
	{Pattern: "POST /api/v1/keys", Summary: "Create an API key: the secret is shown once", Body: apiv1.KeyCreate{}, Status: 201,
		Response: apiv1.CreatedKey{}},
	{Pattern: "DELETE /api/v1/keys/{id}", Summary: "Revoke an API key"},
	{Pattern: "GET /api/v1/audit", Summary: "The audit log, newest first (admin)", Response: apiv1.AuditList{}, Query: []openapi.Param{
		openapi.Q("actor", "by this user"), openapi.Q("target", "on this target (job:12)"), openapi.Q("action", "this action (job.update)"),
		openapi.Q("group", "on this group's objects"), openapi.Q("from", "at or after (RFC 3339)"), openapi.Q("to", "before (RFC 3339)"), historyParams[0], historyParams[1]}},
}

var (
	ifMatch        = openapi.Header("If-Match", "the version the change is based on, if the body has none (409 if it is stale)")
	idempotencyKey = openapi.Header("Idempotency-Key", "makes the trigger safe to repeat, as the body's idempotency_key")
	historyParams  = []openapi.Param{openapi.QInt("limit", "page size"), openapi.QInt("before", "the previous page's next")}
	// workflowRunParams are /workflow-runs'; /workflows/{id}/runs takes
	// them without workflow.
	workflowRunParams = []openapi.Param{{Name: "workflow", Type: "integer", Required: true, Description: "the workflow's id"},
		openapi.QInt("before", "the last id of the previous page"), openapi.QInt("limit", "page size")}
)

// ptr is v's address, for the examples' optional fields.
func ptr[T any](v T) *T { return &v }
