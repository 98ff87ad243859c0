package api

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// route is one endpoint: its pattern, the one permission rule it requires
// and its handler. The table below is the whole API surface: the server
// is built from it (a route with the zero Rule panics at start) and the
// permission matrix test enumerates it.
type route struct {
	pattern string
	rule    auth.Rule
	h       func(http.ResponseWriter, *http.Request) error
}

func (s *Server) routeTable() []route {
	public, authed, admin := auth.Public(), auth.Authenticated(), auth.Admin()
	read := auth.ReadGroup
	operate := auth.OperateGroup
	jobs, workflows := s.jobKind(), s.workflowKind()
	return []route{
		{"GET /healthz", public, s.healthz},
		{"GET /readyz", public, s.readyz},
		// Metrics name groups and handlers: served here only behind the
		// scrape token (MetricsToken), which the handler checks.
		{"GET /metrics", public, s.metrics},
		// The OpenAPI document describes the API and holds no data.
		{"GET /api/v1/openapi.json", public, s.openAPI},

		{"POST /api/v1/login", public, s.login},
		{"POST /api/v1/logout", public, s.logout},
		{"GET /api/v1/sso", public, s.ssoInfo},
		{"POST /api/v1/sso/{provider}/start", public, s.ssoStart},
		{"POST /api/v1/sso/{provider}/session", public, s.ssoSession},
		{"POST /api/v1/sso/{provider}/key", public, s.ssoKey},
		{"POST /api/v1/sso/{provider}/device", public, s.ssoDevice},
		{"POST /api/v1/sso/{provider}/device/key", public, s.ssoDevicePoll},
		{"GET /api/v1/me", authed, s.me},

		// Listings without ?group= are filtered to the caller's groups.
		{"GET /api/v1/groups", authed, s.listGroups},
		{"POST /api/v1/groups", admin, s.createGroup},
		// A group's pause and drain (docs/flow-control.md).
		{"POST /api/v1/groups/{name}/pause", operate(s.pathGroupName), s.setGroupFlow(store.FlowPaused)},
		{"POST /api/v1/groups/{name}/drain", operate(s.pathGroupName), s.setGroupFlow(store.FlowDraining)},
		{"POST /api/v1/groups/{name}/resume", operate(s.pathGroupName), s.setGroupFlow(store.FlowActive)},
		// A group's cap and rate limit, and what holds and waits for them.
		{"PATCH /api/v1/groups/{name}", operate(s.pathGroupName), s.setGroupLimits},
		{"GET /api/v1/groups/{name}/queue", read(s.pathGroupName), s.groupQueue},
		{"POST /api/v1/jobs", operate(s.jobBodyGroup), jobs.post},
		{"GET /api/v1/jobs", read(queryGroup), s.listJobs},
		// Each job a bulk action picks is checked as its own route would
		// check it (bulk.go): picked among the readable, changed if operable.
		{"POST /api/v1/jobs/bulk", authed, s.bulkJobs},
		{"GET /api/v1/jobs/{id}", read(s.pathJobGroup), jobs.one},
		{"PUT /api/v1/jobs/{id}", operate(s.jobUpdateGroups), jobs.put},
		{"DELETE /api/v1/jobs/{id}", operate(s.pathJobWriteGroup), jobs.delete},
		{"POST /api/v1/jobs/{id}/enable", operate(s.pathJobGroup), s.enableJob},
		{"POST /api/v1/jobs/{id}/disable", operate(s.pathJobGroup), s.disableJob},
		{"POST /api/v1/jobs/{id}/trigger", operate(s.triggerGroups), s.triggerJob},
		{"GET /api/v1/jobs/{id}/next", read(s.pathJobGroup), s.nextFires},
		{"GET /api/v1/jobs/{id}/runs", read(s.pathJobGroup), s.listRuns},
		{"GET /api/v1/jobs/{id}/history", read(s.pathJobGroup), s.jobHistory},
		{"POST /api/v1/jobs/{id}/backfill", operate(s.pathJobGroup), s.createBackfill},
		{"GET /api/v1/jobs/{id}/backfills", read(s.pathJobGroup), s.listBackfills},
		// Stored scripts (apiv1/scripts.go): reading one is reading the
		// job; writing one needs what writing the job does (scripts).
		{"GET /api/v1/jobs/{id}/script", read(s.pathJobGroup), s.getScript},
		{"PUT /api/v1/jobs/{id}/script", operate(s.pathJobWriteGroup), s.putScript},
		{"GET /api/v1/jobs/{id}/script/versions", read(s.pathJobGroup), s.listScriptVersions},
		{"GET /api/v1/jobs/{id}/script/versions/{v}", read(s.pathJobGroup), s.getScriptVersion},
		{"GET /api/v1/jobs/{id}/script/diff", read(s.pathJobGroup), s.diffScript},
		{"POST /api/v1/jobs/{id}/script/rollback", operate(s.pathJobWriteGroup), s.rollbackScript},
		// An importer's history of a script (admin: it happened elsewhere).
		{"POST /api/v1/jobs/{id}/script/import", admin, s.importScript},
		{"GET /api/v1/backfills", read(queryGroup), s.searchBackfills},
		{"GET /api/v1/backfills/{id}", read(s.pathBackfillGroup), byID(s.store.GetBackfill, backfillDoc)},
		{"POST /api/v1/backfills/{id}/cancel", operate(s.pathBackfillGroup), s.cancelBackfill},
		// Workflows (docs/workflows.md): stored as jobs are, their runs
		// operated on as a whole.
		{"POST /api/v1/workflows", operate(s.workflowBodyGroup), workflows.post},
		{"GET /api/v1/workflows", read(queryGroup), s.listWorkflows},
		{"GET /api/v1/workflows/{id}", read(s.pathWorkflowGroup), workflows.one},
		{"PUT /api/v1/workflows/{id}", operate(s.workflowUpdateGroups), workflows.put},
		{"DELETE /api/v1/workflows/{id}", operate(s.pathWorkflowGroup), workflows.delete},
		{"POST /api/v1/workflows/{id}/trigger", operate(s.workflowTriggerGroups), s.triggerWorkflow},
		{"GET /api/v1/workflows/{id}/runs", read(s.pathWorkflowGroup), s.listWorkflowRuns},
		{"GET /api/v1/workflows/{id}/history", read(s.pathWorkflowGroup), s.jobHistory},
		{"POST /api/v1/workflows/{id}/pause", operate(s.pathWorkflowGroup), s.pauseWorkflow},
		{"POST /api/v1/workflows/{id}/resume", operate(s.pathWorkflowGroup), s.resumeWorkflow},
		{"POST /api/v1/workflows/{id}/backfill", operate(s.pathWorkflowGroup), s.createBackfill},
		{"GET /api/v1/workflow-runs", read(s.queryWorkflowGroup), s.listWorkflowRuns},
		{"GET /api/v1/workflow-runs/{id}", read(s.pathWorkflowRunGroup), byID(s.store.GetWorkflowRun, workflowRunDoc)},
		{"POST /api/v1/workflow-runs/{id}/cancel", operate(s.pathWorkflowRunGroup), s.workflowRunOp("cancel")},
		{"POST /api/v1/workflow-runs/{id}/retry", operate(s.pathWorkflowRunGroup), s.workflowRunOp("retry")},
		{"POST /api/v1/workflow-runs/{id}/mark-succeeded", operate(s.markSucceededGroups), s.workflowRunOp("mark_succeeded")},
		{"POST /api/v1/workflow-runs/{id}/skip", operate(s.pathWorkflowRunGroup), s.workflowRunOp("skip")},
		{"POST /api/v1/workflow-runs/{id}/rerun", operate(s.pathWorkflowRunGroup), s.rerunWorkflowRun},
		{"GET /api/v1/runs", read(queryGroup), s.searchRuns},
		// History brought from another scheduler (admin: it did not
		// happen in jetjob).
		{"POST /api/v1/runs/import", admin, s.importRuns},
		// Each item of a bulk request is authorized by its own route.
		{"POST /api/v1/runs/bulk", authed, s.bulkRuns},
		{"GET /api/v1/runs/{id}", read(s.pathRunGroup), byID(s.store.GetRun, runDoc)},
		{"GET /api/v1/runs/{id}/logs", read(s.pathRunGroup), s.runLogs},
		{"POST /api/v1/runs/{id}/kill", operate(s.pathRunGroup), s.killRun},
		// A finished run's deletion, with its log lines (rundelete.go).
		{"DELETE /api/v1/runs/{id}", operate(s.pathRunGroup), s.deleteRun},
		{"GET /api/v1/workers", read(queryGroup), s.listWorkers},
		{"GET /api/v1/stats", read(queryGroup), s.stats},
		{"POST /api/v1/stats/import", admin, s.importStats},
		// The console's documents (apiv1/console.go). A schedule preview
		// and the cluster hold no group data.
		{"GET /api/v1/schedule/preview", authed, s.schedulePreview},
		{"GET /api/v1/dashboard", read(queryGroup), s.dashboard},
		{"GET /api/v1/cluster", authed, s.cluster},

		// Alerts (docs/alerts.md): a global channel or rule is the
		// admins' (read by anyone authenticated), a group's its
		// operators'. Listings are filtered to the caller's groups.
		{"GET /api/v1/calendars", authed, s.listCalendars},
		{"GET /api/v1/calendars/{name}", read(s.calendarScope(false)), s.getCalendar},
		{"PUT /api/v1/calendars/{name}", operate(s.calendarPutScope), s.putCalendar},
		{"DELETE /api/v1/calendars/{name}", operate(s.calendarScope(true)), s.deleteCalendar},
		{"GET /api/v1/channels", authed, listScoped(s, alerts.Channels, channelDoc)},
		{"POST /api/v1/channels", operate(s.channelBodyGroup), s.createChannel},
		{"GET /api/v1/channels/{id}", read(s.pathScope(false, "channel", s.channelGroup)), getScoped(s, "channel", alerts.Channel, channelDoc)},
		{"PUT /api/v1/channels/{id}", operate(s.pathScope(true, "channel", s.channelGroup)), s.updateChannel},
		{"DELETE /api/v1/channels/{id}", operate(s.pathScope(true, "channel", s.channelGroup)), deleteScoped(s, channelKind, alerts.Channel, alerts.DeleteChannel)},
		{"POST /api/v1/channels/{id}/test", operate(s.pathScope(true, "channel", s.channelGroup)), s.testChannel},
		{"GET /api/v1/alert-rules", authed, listScoped(s, alerts.Rules, ruleDoc)},
		{"POST /api/v1/alert-rules", operate(s.ruleBodyGroup), s.createRule},
		{"GET /api/v1/alert-rules/{id}", read(s.pathScope(false, "rule", s.ruleGroup)), getScoped(s, "rule", alerts.ReadRule, ruleDoc)},
		{"PUT /api/v1/alert-rules/{id}", operate(s.pathScope(true, "rule", s.ruleGroup)), s.updateRule},
		{"DELETE /api/v1/alert-rules/{id}", operate(s.pathScope(true, "rule", s.ruleGroup)), deleteScoped(s, ruleKind, alerts.ReadRule, alerts.DeleteRule)},
		{"POST /api/v1/alert-rules/{id}/mute", operate(s.pathScope(true, "rule", s.ruleGroup)), s.mute("alert_rules", "alert_rule")},
		{"GET /api/v1/alerts", read(queryGroup), s.listAlerts},
		{"GET /api/v1/alerts/{id}", read(s.pathScope(false, "alert", s.alertGroup)), s.getAlert},
		{"POST /api/v1/alerts/{id}/ack", operate(s.pathScope(true, "alert", s.alertGroup)), s.ackAlert},
		{"POST /api/v1/alerts/{id}/mute", operate(s.pathScope(true, "alert", s.alertGroup)), s.mute("alerts", "alert")},

		// Secrets (docs/jobs.md, "Secrets"): never answered with their
		// value; writing one needs scripts, as its value reaches commands.
		{"GET /api/v1/secrets", read(queryGroup), s.listSecrets},
		{"POST /api/v1/secrets", operate(s.secretBodyGroup), s.createSecret},
		{"GET /api/v1/secrets/{id}", read(s.pathSecretGroup(false)), s.getSecret},
		{"PUT /api/v1/secrets/{id}", operate(s.pathSecretGroup(true)), s.updateSecret},
		{"DELETE /api/v1/secrets/{id}", operate(s.pathSecretGroup(true)), s.deleteSecret},

		{"GET /api/v1/users", admin, s.listUsers},
		{"POST /api/v1/users", admin, s.createUser},
		{"GET /api/v1/users/{name}", auth.SelfOrAdmin(pathUser), s.getUser},
		// The user may change their own display name and password; the
		// handler refuses them the other fields (admin, disabled).
		{"PATCH /api/v1/users/{name}", auth.SelfOrAdmin(pathUser), s.updateUser},
		{"DELETE /api/v1/users/{name}", admin, s.deleteUser},
		{"POST /api/v1/users/{name}/grants", admin, s.setGrant},
		// One-time set-password links: an admin issues one; its token,
		// not a session, lets its holder set the password once.
		{"POST /api/v1/users/{name}/password-link", admin, s.createPasswordLink},
		{"POST /api/v1/password-links/use", public, s.usePasswordLink},
		{"DELETE /api/v1/users/{name}/grants", admin, s.deleteGrant},
		{"GET /api/v1/keys", auth.SelfOrAdmin(queryUser), s.listKeys},
		{"POST /api/v1/keys", auth.SelfOrAdmin(s.bodyUser), s.createKey},
		{"DELETE /api/v1/keys/{id}", auth.SelfOrAdmin(s.keyOwner), s.revokeKey},
		{"GET /api/v1/audit", admin, s.audit},

		// Anything else under /api/ is 404, after authentication, so
		// that the endpoints cannot be probed anonymously.
		{"/api/", authed, s.noEndpoint},
	}
}

// RouteInfo describes a route for tests and documentation.
type RouteInfo struct {
	Pattern string
	Rule    string
}

// Routes lists the served routes with their rules.
func (s *Server) Routes() []RouteInfo {
	var out []RouteInfo
	for _, rt := range s.routeTable() {
		out = append(out, RouteInfo{Pattern: rt.pattern, Rule: rt.rule.String()})
	}
	return out
}

// routes builds the mux from the table.
func (s *Server) routes() { s.mount(s.routeTable()) }

func (s *Server) mount(table []route) {
	for _, rt := range table {
		if !rt.rule.Valid() {
			panic(fmt.Sprintf("api: route %q has no permission rule", rt.pattern))
		}
		s.mux.Handle(rt.pattern, s.instrument(rt.pattern, s.guard(rt)))
	}
}

// noEndpoint answers what no route matches: 405 naming the methods a
// known path takes, else 404.
func (s *Server) noEndpoint(w http.ResponseWriter, r *http.Request) error {
	if allowed := s.allowedMethods(r); len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return &httpError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s: use %s",
			r.Method, r.URL.Path, strings.Join(allowed, " or "))}
	}
	return &httpError{http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)}
}

// guard authenticates a request and checks its route's rule before the
// handler runs.
func (s *Server) guard(rt route) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := checkQuery(r); err != nil {
			return err
		}
		if rt.rule.Public() {
			// Public routes read their own credentials, if any (logout).
			return rt.h(w, r)
		}
		p, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if p != nil {
			r = r.WithContext(auth.NewContext(r.Context(), p))
			// Before any rule looks into it: what the rules and the
			// handler read is the whole body, its size decided the same
			// way for every caller and every id.
			if err := bufferBody(w, r); err != nil {
				return err
			}
		}
		if err := rt.rule.Check(r, p); err != nil {
			return err
		}
		return rt.h(w, r)
	})
}

// Authenticated reports whether r carries valid credentials: an API key,
// the bootstrap token or a live session. It is package httplimit's
// question, asked before the handler of a request with a body, so that
// only callers without them share the budget of anonymous requests.
func (s *Server) Authenticated(r *http.Request) bool {
	p, err := s.authenticate(r)
	return err == nil && p != nil
}

// authenticate finds the request's principal: nil with no credentials,
// ErrBadCredentials with wrong ones (a wrong key is never taken as
// anonymous).
func (s *Server) authenticate(r *http.Request) (*auth.Principal, error) {
	if s.cfg.InsecureNoAuth {
		return auth.AnonymousAdmin(), nil
	}
	ctx := r.Context()
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return nil, store.ErrBadCredentials
		}
		tok = strings.TrimSpace(tok)
		if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1 {
			return auth.Bootstrap(), nil
		}
		prefix, hash, ok := auth.ParseKey(tok)
		if !ok {
			return nil, store.ErrBadCredentials
		}
		u, k, err := s.store.UserByKey(ctx, prefix, hash)
		if err != nil {
			return nil, err
		}
		p := principalOf(u)
		p.Method, p.KeyID, p.KeyPrefix = auth.ByKey, k.ID, k.Prefix
		return p, nil
	}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		u, ss, err := s.store.UserBySession(ctx, auth.HashSecret(c.Value), s.cfg.SessionIdle)
		if err != nil {
			return nil, err
		}
		p := principalOf(u)
		p.Method, p.SessionID, p.SessionExpiresAt = auth.BySession, ss.ID, ss.ExpiresAt
		return p, nil
	}
	return nil, nil
}

func principalOf(u store.User) *auth.Principal {
	p := &auth.Principal{Name: u.Name, DisplayName: u.DisplayName, Language: u.Language, Admin: u.Admin, Grants: map[string]auth.Grant{}}
	for _, g := range u.Grants {
		p.Grants[g.Group] = auth.Grant{Role: auth.Role(g.Role), Scripts: g.Scripts}
	}
	return p
}

// actor is the request's principal as the audit log records it, with the
// jobs it may name in references (the jobs it could trigger itself).
func actor(r *http.Request) store.Actor {
	client := r.RemoteAddr
	if host, _, err := net.SplitHostPort(client); err == nil {
		client = host
	}
	p := auth.FromContext(r.Context())
	if p == nil {
		return store.Actor{Name: "anonymous", Auth: "none", Client: client}
	}
	return store.Actor{Name: p.Name, Auth: p.Credential(), Client: client, Refs: refs.Of(p)}
}

// readable is the groups the request's principal may read, nil for all:
// what listings filter by.
func readable(r *http.Request) []string {
	p := auth.FromContext(r.Context())
	if p == nil {
		return []string{}
	}
	gs, all := p.Readable()
	if all {
		return nil
	}
	return gs
}

// Group finders of the rules (auth.GroupOf).

// queryGroup is ?group=, when given: a listing of one group needs that
// group; without it the listing is filtered.
func queryGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	if g := r.URL.Query().Get("group"); g != "" {
		return []auth.Need{{Group: g}}, nil
	}
	return nil, nil
}

// hidden turns a store's not-found into auth.ErrHidden naming what, so
// that a missing job and another group's job answer alike.
func hidden(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return auth.HiddenError(what)
	}
	return err
}

// pathGroupName is the path's group {name} (a missing one answers like
// another group's: hidden).
func (s *Server) pathGroupName(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	name := r.PathValue("name")
	what := "group " + name
	ok, err := s.store.GroupExists(r.Context(), name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, auth.HiddenError(what)
	}
	return []auth.Need{{Group: name, Hidden: true, What: what}}, nil
}

func (s *Server) pathJobGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	return pathGroup(r, "job", s.store.JobGroup)
}

func (s *Server) pathRunGroup(r *http.Request, _ *auth.Principal) ([]auth.Need, error) {
	return pathGroup(r, "run", s.store.RunGroup)
}

// pathGroup is the group of the path's {id}, a kind looked up by group
// (a missing one answers like another group's: hidden).
func pathGroup(r *http.Request, kind string, group func(context.Context, int64) (string, error)) ([]auth.Need, error) {
	g, what, err := pathRecord(r, kind, group)
	if err != nil {
		return nil, err
	}
	return []auth.Need{{Group: g, Hidden: true, What: what}}, nil
}

// pathRecord reads what a rule looks at of the path's {id}, a kind, with
// get; it also returns the name a refusal gives it ("job 7"). A missing
// one answers like another group's: hidden.
func pathRecord[T any](r *http.Request, kind string, get func(context.Context, int64) (T, error)) (T, string, error) {
	var zero T
	id, err := pathID(r)
	if err != nil {
		return zero, "", err
	}
	what := fmt.Sprintf("%s %d", kind, id)
	v, err := get(r.Context(), id)
	if err != nil {
		return zero, what, hidden(err, what)
	}
	return v, what, nil
}

// jobFields are the fields of a job spec the rules look at.
type jobFields struct {
	Group   string  `json:"group"`
	Handler string  `json:"handler"`
	Params  *string `json:"params"`
}

// peekBody decodes the body leniently into v and leaves it for the
// handler to read (strictly) again. false: there is no body.
func peekBody(r *http.Request, v any) (bool, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return false, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return false, bodyError(err)
	}
	if len(b) > maxBody {
		return false, &http.MaxBytesError{Limit: maxBody}
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
	if len(bytes.TrimSpace(b)) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, invalidf("malformed JSON body: %v", err)
	}
	return true, nil
}

// commandNeed is the need of writing a job of group with handler: scripts
// when the handler runs commands (shell, or one the group declares).
func (s *Server) commandNeed(ctx context.Context, group, handler string) (auth.Need, error) {
	n := auth.Need{Group: group}
	if handler == auth.ShellHandler || handler == auth.ScriptHandler {
		n.Scripts, n.Why = true, fmt.Sprintf("handler %s runs commands", handler)
		return n, nil
	}
	hs, err := s.store.CommandHandlers(ctx, group)
	if err != nil {
		return n, err
	}
	if auth.RunsCommands(handler, hs) {
		n.Scripts, n.Why = true, fmt.Sprintf("handler %s runs commands in group %s", handler, group)
	}
	return n, nil
}

// jobBodyGroup is the group a new job goes to (admins skip the look).
func (s *Server) jobBodyGroup(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	if p.Admin {
		return nil, nil
	}
	var f jobFields
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	n, err := s.commandNeed(r.Context(), f.Group, f.Handler)
	return []auth.Need{n}, err
}

// jobUpdateGroups are the job's group as it is and as the body makes it:
// moving a job needs both, and scripts where either handler runs commands
// (editing a shell job's params is running a command).
func (s *Server) jobUpdateGroups(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	cur, what, err := pathRecord(r, "job", s.store.GetJob)
	if err != nil || p.Admin {
		return nil, err
	}
	was, err := s.commandNeed(r.Context(), cur.Group, cur.Handler)
	if err != nil {
		return nil, err
	}
	was.Hidden, was.What = true, what
	var f jobFields
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	will, err := s.commandNeed(r.Context(), f.Group, f.Handler)
	return []auth.Need{was, will}, err
}

// pathJobWriteGroup is the group of the path's job, with scripts when the
// job runs commands: deleting a command-running job is writing it, as
// creating or editing one is.
func (s *Server) pathJobWriteGroup(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	j, what, err := pathRecord(r, "job", s.store.GetJob)
	if err != nil || p.Admin {
		return nil, err
	}
	n, err := s.commandNeed(r.Context(), j.Group, j.Handler)
	n.Hidden, n.What = true, what
	return []auth.Need{n}, err
}

// triggerGroups is the job's group; triggering a command-running job with
// other params is running a command of one's choosing: scripts.
func (s *Server) triggerGroups(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	return triggerNeeds(r, p, "job", s.store.GetJob, func(ctx context.Context, j store.Job) (string, error) {
		n, err := s.commandNeed(ctx, j.Group, j.Handler)
		if err != nil || !n.Scripts {
			return "", err
		}
		return n.Why + ", and the trigger replaces its params", nil
	})
}

// triggerNeeds is the group of the path's job row (a kind: a job, a
// workflow), with scripts when the trigger gives params and commands
// says why they may reach a command ("": they cannot).
func triggerNeeds(r *http.Request, p *auth.Principal, kind string, get func(context.Context, int64) (store.Job, error),
	commands func(context.Context, store.Job) (why string, err error)) ([]auth.Need, error) {
	j, what, err := pathRecord(r, kind, get)
	if err != nil || p.Admin {
		return nil, err
	}
	var f jobFields
	hasBody, err := peekBody(r, &f)
	if err != nil {
		return nil, err
	}
	n := auth.Need{Group: j.Group, Hidden: true, What: what}
	if hasBody && f.Params != nil {
		why, err := commands(r.Context(), j)
		if err != nil {
			return nil, err
		}
		n.Scripts, n.Why = why != "", why
	}
	return []auth.Need{n}, nil
}

// Subject finders of SelfOrAdmin rules.

func pathUser(r *http.Request, _ *auth.Principal) (string, bool, error) {
	return r.PathValue("name"), false, nil
}

func queryUser(r *http.Request, _ *auth.Principal) (string, bool, error) {
	return r.URL.Query().Get("user"), false, nil
}

func (s *Server) bodyUser(r *http.Request, p *auth.Principal) (string, bool, error) {
	if p.Admin {
		return "", false, nil
	}
	var f struct {
		User string `json:"user"`
	}
	_, err := peekBody(r, &f)
	return f.User, false, err
}

// keyOwner is the user of the path's key; a stranger's key is not found.
func (s *Server) keyOwner(r *http.Request, _ *auth.Principal) (string, bool, error) {
	k, _, err := pathRecord(r, "key", s.store.GetKey)
	if err != nil {
		return "", false, err
	}
	return k.User, true, nil
}

// pathKeyID is the path's key id (already checked by the rule).
func pathKeyID(r *http.Request) int64 {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id
}
