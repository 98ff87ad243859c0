// Package console serves jetjob's web console: server-rendered HTML pages
// (html/template, assets embedded with go:embed) on the API's listener, at
// every path outside /api/, /healthz, /readyz and /metrics.
//
// The console has no data access of its own. Every page reads, and every
// form writes, through the HTTP API, called in-process with the browser's
// own credentials (its session cookie): the API's permission rules are the
// console's rules, and there is no side door to keep in step with them. A
// viewer's page hides the edit controls because /api/v1/me says they are a
// viewer, and a forged POST from a viewer still gets the API's 403.
//
// Pages and forms are plain HTML (real links, every filter in the URL); the
// little JavaScript in static/console.js only follows a run's log live
// (and counts its running time), re-reads an active workflow run's
// summary, previews a schedule as it is typed and asks before destructive
// actions.
package console

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// Config configures the console.
type Config struct {
	// API is the scheduler's API handler (package api). Required.
	API http.Handler
	// Log is where failed page renders are reported. Required.
	Log *zap.Logger
	// InsecureCookies drops the Secure attribute of the console's own
	// cookie (a sign-in's state), as api.Config's does of the session's.
	InsecureCookies bool
}

// Console is the console's http.Handler.
type Console struct {
	api     http.Handler
	log     *zap.Logger
	mux     *http.ServeMux
	handler http.Handler
	pages   map[i18n.Lang]*pages
	// secureCookies marks the console's own cookies Secure.
	secureCookies bool
}

// New returns the console.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil || cfg.Log == nil {
		return nil, errors.New("console: API and Log are required")
	}
	p, err := parseAll()
	if err != nil {
		return nil, err
	}
	c := &Console{api: cfg.API, log: cfg.Log.Named("console"), mux: http.NewServeMux(), pages: p, secureCookies: !cfg.InsecureCookies}
	for _, rt := range c.routeTable() {
		c.mux.Handle(rt.pattern, c.handle(rt.h))
	}
	c.handler = http.NewCrossOriginProtection().Handler(c.mux)
	return c, nil
}

// ServeHTTP implements http.Handler. As for the API, a state-changing
// request must come from the console's own origin (Sec-Fetch-Site /
// Origin): a session cookie alone never authorises a cross-site form.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// route is one page or form action. Pages need no permission rule of their
// own: what they show and change is what the API lets the caller read and
// do.
type route struct {
	pattern string
	h       func(http.ResponseWriter, *http.Request) error
}

// routeTable is the console's whole surface.
func (c *Console) routeTable() []route {
	return []route{
		{"GET /static/", c.static},
		{"GET /favicon.ico", c.favicon},
		{"GET /login", c.loginPage},
		{"POST /login", c.login},
		{"POST /logout", c.logout},
		{"POST /ui/language", c.setLanguage},
		{"GET /login/sso/{provider}", c.ssoStart},
		{"GET /login/sso/{provider}/callback", c.ssoCallback},
		{"GET /set-password", c.setPasswordPage},
		{"POST /set-password", c.setPassword},
		{"GET /{$}", c.dashboard},
		// workers
		{"GET /workers", c.workers},
		{"POST /groups", c.createGroup},
		{"POST /groups/{name}/limits", c.groupLimits},
		{"POST /groups/{name}/{action}", c.groupFlow},
		{"GET /groups/{name}/queue", c.groupQueue},
		// cluster
		{"GET /cluster", c.cluster},
		// runs
		{"GET /runs", c.runs},
		{"POST /runs/bulk", c.bulkRuns},
		{"GET /runs/{id}", c.runDetail},
		{"POST /runs/{id}/kill", c.killRun},
		{"POST /runs/{id}/rerun", c.rerunRun},
		{"POST /runs/{id}/delete", c.deleteRun},
		// jobs
		{"GET /jobs", c.jobs},
		{"POST /jobs/bulk", c.bulkJobs},
		{"GET /jobs/new", c.newJob},
		{"POST /jobs", c.createJob},
		{"GET /jobs/{id}", c.job},
		{"GET /jobs/{id}/edit", c.editJob},
		{"POST /jobs/{id}", c.updateJob},
		{"POST /jobs/{id}/enable", c.jobAction("/enable", noticeJobEnabled, enableBody)},
		{"POST /jobs/{id}/disable", c.jobAction("/disable", noticeJobDisabled, disableBody)},
		{"POST /jobs/{id}/trigger", c.triggerJob},
		{"POST /jobs/{id}/delete", c.deleteJob},
		{"GET /jobs/{id}/script", c.script},
		{"POST /jobs/{id}/script", c.saveScript},
		{"POST /jobs/{id}/script/rollback", c.rollbackScript},
		// workflows
		{"GET /workflows", c.workflows},
		{"GET /workflows/new", c.newWorkflow},
		{"POST /workflows", c.createWorkflow},
		{"GET /workflows/{id}", c.workflow},
		{"GET /workflows/{id}/edit", c.editWorkflow},
		{"POST /workflows/{id}", c.updateWorkflow},
		{"POST /workflows/{id}/trigger", c.triggerWorkflow},
		{"POST /workflows/{id}/delete", c.deleteWorkflow},
		{"GET /workflow-runs/{id}", c.workflowRun},
		{"POST /workflow-runs/{id}/cancel", c.workflowRunOp("cancel", noticeWorkflowCancelled)},
		{"POST /workflow-runs/{id}/retry", c.workflowRunOp("retry", noticeWorkflowRetried)},
		{"POST /workflow-runs/{id}/mark-succeeded", c.workflowRunOp("mark-succeeded", noticeNodeMarked)},
		{"POST /workflow-runs/{id}/skip", c.workflowRunOp("skip", noticeNodeSkipped)},
		{"POST /workflow-runs/{id}/rerun", c.rerunWorkflowRun},
		// alerts: channels, rules, alerts
		{"GET /alerts", c.alerts},
		{"GET /alerts/{id}", c.alert},
		{"POST /alerts/{id}/ack", c.ackAlert},
		{"POST /alerts/{id}/mute", c.muteAlert},
		{"GET /channels", c.channels},
		{"GET /channels/new", c.newChannel},
		{"POST /channels", c.createChannel},
		{"GET /channels/{id}/edit", c.editChannel},
		{"POST /channels/{id}", c.updateChannel},
		{"POST /channels/{id}/test", c.testChannel},
		{"POST /channels/{id}/delete", c.deleteChannel},
		{"GET /alert-rules", c.alertRules},
		{"GET /alert-rules/new", c.newAlertRule},
		{"POST /alert-rules", c.createAlertRule},
		{"GET /alert-rules/{id}/edit", c.editAlertRule},
		{"POST /alert-rules/{id}", c.updateAlertRule},
		{"POST /alert-rules/{id}/delete", c.deleteAlertRule},
		// backfills and statistics
		{"GET /backfills", c.backfills},
		{"POST /backfills/{id}/cancel", c.cancelBackfill},
		{"GET /stats", c.stats},
		// secrets: names and versions; values go only into the API
		{"GET /secrets", c.secrets},
		{"POST /secrets", c.createSecret},
		{"POST /secrets/{id}/rotate", c.rotateSecret},
		{"POST /secrets/{id}/delete", c.deleteSecret},
		// administration: users and the audit log are the admins' (the
		// API refuses anyone else); API keys are everyone's own
		{"GET /users", c.users},
		{"POST /users", c.createUser},
		{"GET /users/{name}", c.userDetail},
		{"POST /users/{name}", c.updateUser},
		{"POST /users/{name}/grants", c.setGrant},
		{"POST /users/{name}/grants/delete", c.removeGrant},
		{"GET /keys", c.keys},
		{"POST /keys", c.createKey},
		{"POST /keys/{id}/revoke", c.revokeKey},
		{"GET /audit", c.audit},
		{"/", c.notFound},
	}
}

// Split serves the API's paths from api and every other path from the
// console: the one handler the scheduler's listener serves.
func Split(api, console http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAPIPath(r.URL.Path) {
			api.ServeHTTP(w, r)
			return
		}
		console.ServeHTTP(w, r)
	})
}

// isAPIPath reports whether path belongs to the API rather than the console.
func isAPIPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics", "/api":
		return true
	}
	return len(path) >= 5 && path[:5] == "/api/"
}
