package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// req is one request of the matrix; build makes it for a principal,
// creating fresh targets where the request consumes them (a deleted job, a
// killed run), so that cells do not depend on each other.
type req struct {
	method, path string
	body         any
}

type matrixRow struct {
	pattern string
	build   func(e *env, who string) req
	// want is the status per principal, in the order of principals:
	// anonymous, viewer of a, viewer of b, operator of a (scripts),
	// operator of a without scripts, admin.
	want [6]int
}

const (
	s200, s201, s202, s204 = http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent
	s401, s403, s404, s409 = http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict
	s400                   = http.StatusBadRequest
	s410                   = http.StatusGone
)

func fixed(method, path string, body any) func(*env, string) req {
	return func(*env, string) req { return req{method, path, body} }
}

func matrix() []matrixRow {
	read := [6]int{s401, s200, s404, s200, s200, s200}      // a job or run of group a
	operate := [6]int{s401, s403, s404, s200, s200, s200}   // change a job of group a
	anyUser := [6]int{s401, s200, s200, s200, s200, s200}   // authenticated, filtered
	adminOnly := [6]int{s401, s403, s403, s403, s403, s200} //
	self := [6]int{s401, s403, s403, s200, s403, s200}      // about user "operator"
	ownKey := [6]int{s401, s404, s404, s204, s404, s204}    // a key of "operator"
	scripts := [6]int{s401, s403, s404, s200, s403, s200}   // a command-running job of a
	with := func(w [6]int, code int) [6]int {
		for i, c := range w {
			if c == s200 {
				w[i] = code
			}
		}
		return w
	}
	jobPath := func(id int64, rest string) string { return fmt.Sprintf("/api/v1/jobs/%d%s", id, rest) }
	freshPlain := func(e *env) store.Job { return e.job("a", "echo") }
	return []matrixRow{
		{"GET /healthz", fixed("GET", "/healthz", nil), [6]int{s200, s200, s200, s200, s200, s200}},
		{"GET /readyz", fixed("GET", "/readyz", nil), [6]int{s200, s200, s200, s200, s200, s200}},
		// No scrape token in this API: /metrics is on the metrics
		// listener, not here (issue #26, finding 11).
		{"GET /metrics", fixed("GET", "/metrics", nil), [6]int{s404, s404, s404, s404, s404, s404}},
		{"GET /api/v1/openapi.json", fixed("GET", "/api/v1/openapi.json", nil), [6]int{s200, s200, s200, s200, s200, s200}},
		{"POST /api/v1/login", func(_ *env, who string) req {
			return req{"POST", "/api/v1/login", apiv1.LoginRequest{Name: "nobody-" + who, Password: "not the password"}}
		}, [6]int{s401, s401, s401, s401, s401, s401}},
		{"POST /api/v1/logout", fixed("POST", "/api/v1/logout", nil), [6]int{s204, s204, s204, s204, s204, s204}},
		{"GET /api/v1/me", fixed("GET", "/api/v1/me", nil), anyUser},
		// Sign-in through identity providers: public, the same answer for
		// everyone (this API has none configured: every provider is unknown).
		{"GET /api/v1/sso", fixed("GET", "/api/v1/sso", nil), [6]int{s200, s200, s200, s200, s200, s200}},
		{"POST /api/v1/sso/{provider}/start", fixed("POST", "/api/v1/sso/corp/start", nil), [6]int{s404, s404, s404, s404, s404, s404}},
		{"POST /api/v1/sso/{provider}/session", fixed("POST", "/api/v1/sso/corp/session",
			apiv1.SSOCallback{Code: "c", State: "s", BrowserState: "s"}), [6]int{s404, s404, s404, s404, s404, s404}},
		{"POST /api/v1/sso/{provider}/key", fixed("POST", "/api/v1/sso/corp/key",
			apiv1.SSOCallback{Code: "c", State: "s", KeyName: "k"}), [6]int{s404, s404, s404, s404, s404, s404}},
		{"POST /api/v1/sso/{provider}/device", fixed("POST", "/api/v1/sso/corp/device", nil), [6]int{s404, s404, s404, s404, s404, s404}},
		{"POST /api/v1/sso/{provider}/device/key", fixed("POST", "/api/v1/sso/corp/device/key",
			apiv1.SSODevicePoll{Handle: "h", KeyName: "k"}), [6]int{s404, s404, s404, s404, s404, s404}},

		{"GET /api/v1/groups", fixed("GET", "/api/v1/groups", nil), anyUser},
		{"POST /api/v1/groups", func(e *env, _ string) req {
			return req{"POST", "/api/v1/groups", apiv1.Group{Name: fmt.Sprint("g", e.next())}}
		}, with(adminOnly, s201)},
		// Group a's flow state is set through the store before each
		// request, so that every cell asks for a change and group a is
		// active again after the resume row (its admin cell).
		{"POST /api/v1/groups/{name}/pause", func(e *env, _ string) req {
			e.groupFlow("a", store.FlowActive)
			return req{"POST", "/api/v1/groups/a/pause", apiv1.GroupFlowRequest{Note: "maintenance"}}
		}, operate},
		{"POST /api/v1/groups/{name}/drain", func(e *env, _ string) req {
			e.groupFlow("a", store.FlowActive)
			return req{"POST", "/api/v1/groups/a/drain", nil}
		}, operate},
		{"POST /api/v1/groups/{name}/resume", func(e *env, _ string) req {
			e.groupFlow("a", store.FlowPaused)
			return req{"POST", "/api/v1/groups/a/resume", nil}
		}, operate},
		// Each cell asks for another cap, so that each is a change.
		{"PATCH /api/v1/groups/{name}", func(e *env, _ string) req {
			n := int(e.next() % 1000)
			return req{"PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: &n}}
		}, operate},
		{"GET /api/v1/groups/{name}/queue", fixed("GET", "/api/v1/groups/a/queue", nil), read},
		{"POST /api/v1/jobs", func(e *env, _ string) req {
			return req{"POST", "/api/v1/jobs", jobSpec("a", "echo", fmt.Sprint("new", e.next()))}
		}, [6]int{s401, s403, s403, s201, s201, s201}},
		{"POST /api/v1/jobs", func(e *env, _ string) req { // shell needs scripts
			return req{"POST", "/api/v1/jobs", jobSpec("a", "shell", fmt.Sprint("new", e.next()))}
		}, [6]int{s401, s403, s403, s201, s403, s201}},
		{"POST /api/v1/jobs", func(e *env, _ string) req { // so does a handler group a declares
			return req{"POST", "/api/v1/jobs", jobSpec("a", "deploy", fmt.Sprint("new", e.next()))}
		}, [6]int{s401, s403, s403, s201, s403, s201}},
		{"POST /api/v1/jobs", func(e *env, _ string) req { // group b: no grant but admin's
			return req{"POST", "/api/v1/jobs", jobSpec("b", "echo", fmt.Sprint("new", e.next()))}
		}, [6]int{s401, s403, s403, s403, s403, s201}},
		{"GET /api/v1/jobs", fixed("GET", "/api/v1/jobs", nil), anyUser},
		{"GET /api/v1/jobs", fixed("GET", "/api/v1/jobs?group=a", nil), [6]int{s401, s200, s403, s200, s200, s200}},
		{"GET /api/v1/jobs/{id}", func(e *env, _ string) req { return req{"GET", jobPath(e.plain.ID, ""), nil} }, read},
		{"GET /api/v1/jobs/{id}", fixed("GET", "/api/v1/jobs/999999", nil), [6]int{s401, s404, s404, s404, s404, s404}},
		{"PUT /api/v1/jobs/{id}", func(e *env, _ string) req {
			j := freshPlain(e)
			spec := jobSpec("a", "echo", j.Name)
			spec.Description, spec.Version = "edited", j.Version
			return req{"PUT", jobPath(j.ID, ""), spec}
		}, operate},
		{"PUT /api/v1/jobs/{id}", func(e *env, _ string) req { // editing a shell job needs scripts
			j := e.job("a", "shell")
			spec := jobSpec("a", "shell", j.Name)
			spec.Description, spec.Version = "edited", j.Version
			return req{"PUT", jobPath(j.ID, ""), spec}
		}, scripts},
		{"PUT /api/v1/jobs/{id}", func(e *env, _ string) req { // so does turning a job into one
			j := freshPlain(e)
			spec := jobSpec("a", "shell", j.Name)
			spec.Version = j.Version
			return req{"PUT", jobPath(j.ID, ""), spec}
		}, scripts},
		{"DELETE /api/v1/jobs/{id}", func(e *env, _ string) req { return req{"DELETE", jobPath(freshPlain(e).ID, ""), nil} }, with(operate, s204)},
		{"POST /api/v1/jobs/{id}/enable", func(e *env, _ string) req { return req{"POST", jobPath(freshPlain(e).ID, "/enable"), nil} }, operate},
		{"POST /api/v1/jobs/{id}/disable", func(e *env, _ string) req { return req{"POST", jobPath(freshPlain(e).ID, "/disable"), nil} }, operate},
		{"POST /api/v1/jobs/{id}/trigger", func(e *env, _ string) req { return req{"POST", jobPath(e.shell.ID, "/trigger"), nil} }, with(operate, s202)},
		{"POST /api/v1/jobs/{id}/trigger", func(e *env, _ string) req { // other params for a shell job: scripts
			p := "rm -rf /"
			return req{"POST", jobPath(e.shell.ID, "/trigger"), apiv1.TriggerRequest{Params: &p}}
		}, with(scripts, s202)},
		{"GET /api/v1/jobs/{id}/next", func(e *env, _ string) req { return req{"GET", jobPath(e.plain.ID, "/next"), nil} }, read},
		{"GET /api/v1/jobs/{id}/runs", func(e *env, _ string) req { return req{"GET", jobPath(e.plain.ID, "/runs"), nil} }, read},
		{"GET /api/v1/jobs/{id}/history", func(e *env, _ string) req { return req{"GET", jobPath(e.plain.ID, "/history"), nil} }, read},
		{"POST /api/v1/jobs/{id}/backfill", func(e *env, _ string) req {
			now := time.Now()
			return req{"POST", jobPath(e.cronJob().ID, "/backfill"), apiv1.BackfillRequest{From: now.Add(-3 * time.Hour), To: now}}
		}, with(operate, s201)},
		{"GET /api/v1/jobs/{id}/backfills", func(e *env, _ string) req { return req{"GET", jobPath(e.plain.ID, "/backfills"), nil} }, read},
		{"GET /api/v1/jobs/{id}/script", func(e *env, _ string) req { return req{"GET", jobPath(e.scriptJob().ID, "/script"), nil} }, read},
		{"PUT /api/v1/jobs/{id}/script", func(e *env, _ string) req { // a script runs commands: scripts
			return req{"PUT", jobPath(e.scriptJob().ID, "/script"), apiv1.ScriptSave{Source: "echo two\n", Remark: "edit"}}
		}, scripts},
		{"GET /api/v1/jobs/{id}/script/versions", func(e *env, _ string) req {
			return req{"GET", jobPath(e.scriptJob().ID, "/script/versions"), nil}
		}, read},
		{"GET /api/v1/jobs/{id}/script/versions/{v}", func(e *env, _ string) req {
			return req{"GET", jobPath(e.scriptJob().ID, "/script/versions/1"), nil}
		}, read},
		{"GET /api/v1/jobs/{id}/script/diff", func(e *env, _ string) req {
			return req{"GET", jobPath(e.scriptJob().ID, "/script/diff?from=1&to=1"), nil}
		}, read},
		{"POST /api/v1/jobs/{id}/script/rollback", func(e *env, _ string) req {
			return req{"POST", jobPath(e.scriptJob().ID, "/script/rollback"), apiv1.ScriptRollback{Version: 1}}
		}, scripts},
		{"POST /api/v1/jobs/{id}/script/import", func(e *env, _ string) req {
			return req{"POST", jobPath(e.scriptJob().ID, "/script/import"), apiv1.ScriptImport{
				Versions: []apiv1.ScriptImportVersion{{Language: "bash", Source: "echo zero\n", Remark: "older"}}}}
		}, adminOnly},
		{"GET /api/v1/backfills", fixed("GET", "/api/v1/backfills", nil), anyUser},
		{"GET /api/v1/backfills", fixed("GET", "/api/v1/backfills?group=b", nil), [6]int{s401, s403, s200, s403, s403, s200}},
		{"GET /api/v1/backfills/{id}", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/backfills/%d", e.newBackfill().ID), nil}
		}, read},
		{"POST /api/v1/backfills/{id}/cancel", func(e *env, _ string) req {
			return req{"POST", fmt.Sprintf("/api/v1/backfills/%d/cancel", e.newBackfill().ID), nil}
		}, operate},
		{"GET /api/v1/runs", fixed("GET", "/api/v1/runs", nil), anyUser},
		{"GET /api/v1/runs", fixed("GET", "/api/v1/runs?group=b", nil), [6]int{s401, s403, s200, s403, s403, s200}},
		// Each item is authorized by its own route: the bulk request is any user's.
		{"POST /api/v1/runs/bulk", func(e *env, _ string) req {
			return req{"POST", "/api/v1/runs/bulk", apiv1.RunsBulk{Action: apiv1.BulkKill, IDs: []int64{e.newRun(e.plain.ID)}}}
		}, anyUser},
		{"GET /api/v1/runs/{id}", func(e *env, _ string) req { return req{"GET", fmt.Sprintf("/api/v1/runs/%d", e.run), nil} }, read},
		{"GET /api/v1/runs/{id}/logs", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/runs/%d/logs", e.run), nil}
		}, read},
		{"POST /api/v1/runs/{id}/kill", func(e *env, _ string) req {
			return req{"POST", fmt.Sprintf("/api/v1/runs/%d/kill", e.newRun(e.plain.ID)), nil}
		}, with(operate, s202)},
		{"DELETE /api/v1/runs/{id}", func(e *env, _ string) req {
			return req{"DELETE", fmt.Sprintf("/api/v1/runs/%d", e.endedRun(e.plain.ID)), nil}
		}, with(operate, s204)},
		{"POST /api/v1/runs/import", func(e *env, _ string) req {
			return req{"POST", "/api/v1/runs/import", apiv1.RunImport{Runs: []apiv1.ImportedRun{{JobID: e.plain.ID,
				ScheduledAt: time.Now().Add(-time.Hour), Status: "SUCCEEDED"}}}}
		}, adminOnly},
		{"GET /api/v1/workers", fixed("GET", "/api/v1/workers", nil), anyUser},
		{"GET /api/v1/stats", fixed("GET", "/api/v1/stats", nil), anyUser},
		{"POST /api/v1/stats/import", fixed("POST", "/api/v1/stats/import", apiv1.StatsImport{Days: []apiv1.ImportedDay{
			{Day: time.Now().UTC().AddDate(0, 0, -400).Format(time.DateOnly), Succeeded: 1}}}), adminOnly},
		{"GET /api/v1/schedule/preview", fixed("GET", "/api/v1/schedule/preview?type=cron&expr=@hourly", nil), anyUser},
		{"GET /api/v1/dashboard", fixed("GET", "/api/v1/dashboard", nil), anyUser},
		{"GET /api/v1/dashboard", fixed("GET", "/api/v1/dashboard?group=a", nil), [6]int{s401, s200, s403, s200, s200, s200}},
		{"GET /api/v1/cluster", fixed("GET", "/api/v1/cluster", nil), anyUser},

		{"POST /api/v1/jobs/bulk", fixed("POST", "/api/v1/jobs/bulk", apiv1.BulkRequest{Selector: "env=none", Action: "enable"}), anyUser},
		{"GET /api/v1/calendars", fixed("GET", "/api/v1/calendars", nil), anyUser},
		{"GET /api/v1/calendars/{name}", func(e *env, _ string) req {
			return req{"GET", "/api/v1/calendars/" + e.calendar("a"), nil}
		}, read},
		{"GET /api/v1/calendars/{name}", func(e *env, _ string) req {
			return req{"GET", "/api/v1/calendars/" + e.calendar(""), nil}
		}, anyUser},
		{"PUT /api/v1/calendars/{name}", func(e *env, _ string) req { // a new one of group a
			return req{"PUT", fmt.Sprint("/api/v1/calendars/cal", e.next()), calendarDoc("a")}
		}, [6]int{s401, s403, s403, s201, s201, s201}},
		{"PUT /api/v1/calendars/{name}", func(e *env, _ string) req { // a new global one: admins
			return req{"PUT", fmt.Sprint("/api/v1/calendars/cal", e.next()), calendarDoc("")}
		}, with(adminOnly, s201)},
		{"PUT /api/v1/calendars/{name}", func(e *env, _ string) req {
			return req{"PUT", "/api/v1/calendars/" + e.calendar("a"), calendarDoc("a")}
		}, [6]int{s401, s403, s404, s200, s200, s200}},
		{"PUT /api/v1/calendars/{name}", func(e *env, _ string) req {
			return req{"PUT", "/api/v1/calendars/" + e.calendar(""), calendarDoc("")}
		}, adminOnly},
		{"DELETE /api/v1/calendars/{name}", func(e *env, _ string) req {
			return req{"DELETE", "/api/v1/calendars/" + e.calendar("a"), nil}
		}, with(operate, s204)},
		{"GET /api/v1/secrets", fixed("GET", "/api/v1/secrets", nil), anyUser},
		{"POST /api/v1/secrets", func(e *env, _ string) req {
			return req{"POST", "/api/v1/secrets", apiv1.SecretWrite{Group: "a", Name: fmt.Sprint("s", e.next()), Value: "v"}}
		}, [6]int{s401, s403, s403, s201, s403, s201}},
		{"GET /api/v1/secrets/{id}", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/secrets/%d", e.secret("a")), nil}
		}, read},
		{"PUT /api/v1/secrets/{id}", func(e *env, _ string) req {
			return req{"PUT", fmt.Sprintf("/api/v1/secrets/%d", e.secret("a")), apiv1.SecretWrite{Value: "v2"}}
		}, scripts},
		{"DELETE /api/v1/secrets/{id}", func(e *env, _ string) req {
			return req{"DELETE", fmt.Sprintf("/api/v1/secrets/%d", e.secret("a")), nil}
		}, with(scripts, s204)},

		{"GET /api/v1/channels", fixed("GET", "/api/v1/channels", nil), anyUser},
		{"POST /api/v1/channels", func(e *env, _ string) req {
			return req{"POST", "/api/v1/channels", channelSpec("a", fmt.Sprint("c", e.next()))}
		}, [6]int{s401, s403, s403, s201, s201, s201}},
		{"POST /api/v1/channels", func(e *env, _ string) req { // global: admins
			return req{"POST", "/api/v1/channels", channelSpec("", fmt.Sprint("c", e.next()))}
		}, with(adminOnly, s201)},
		{"GET /api/v1/channels/{id}", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/channels/%d", e.channel("a")), nil}
		}, read},
		{"GET /api/v1/channels/{id}", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/channels/%d", e.channel("")), nil}
		}, anyUser},
		{"PUT /api/v1/channels/{id}", func(e *env, _ string) req {
			return req{"PUT", fmt.Sprintf("/api/v1/channels/%d", e.channel("a")), channelSpec("a", fmt.Sprint("c", e.next()))}
		}, operate},
		{"PUT /api/v1/channels/{id}", func(e *env, _ string) req {
			return req{"PUT", fmt.Sprintf("/api/v1/channels/%d", e.channel("")), channelSpec("", fmt.Sprint("c", e.next()))}
		}, adminOnly},
		{"DELETE /api/v1/channels/{id}", func(e *env, _ string) req {
			return req{"DELETE", fmt.Sprintf("/api/v1/channels/%d", e.channel("a")), nil}
		}, with(operate, s204)},
		{"POST /api/v1/channels/{id}/test", func(e *env, _ string) req {
			return req{"POST", fmt.Sprintf("/api/v1/channels/%d/test", e.channel("a")), nil}
		}, operate},
		{"GET /api/v1/alert-rules", fixed("GET", "/api/v1/alert-rules", nil), anyUser},
		{"POST /api/v1/alert-rules", func(e *env, _ string) req {
			return req{"POST", "/api/v1/alert-rules", apiv1.AlertRule{Name: "r", Group: "a", Events: []string{"failed"},
				Channels: []int64{e.channel("a")}}}
		}, [6]int{s401, s403, s403, s201, s201, s201}},
		{"GET /api/v1/alert-rules/{id}", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/alert-rules/%d", e.alertRule("a")), nil}
		}, read},
		{"PUT /api/v1/alert-rules/{id}", func(e *env, _ string) req {
			return req{"PUT", fmt.Sprintf("/api/v1/alert-rules/%d", e.alertRule("a")), apiv1.AlertRule{Name: fmt.Sprint("r", e.next()),
				Events: []string{"failed", "recovered"}, Threshold: 2, Channels: []int64{e.channel("a")}}}
		}, operate},
		{"DELETE /api/v1/alert-rules/{id}", func(e *env, _ string) req {
			return req{"DELETE", fmt.Sprintf("/api/v1/alert-rules/%d", e.alertRule("a")), nil}
		}, with(operate, s204)},
		{"POST /api/v1/alert-rules/{id}/mute", func(e *env, _ string) req {
			return req{"POST", fmt.Sprintf("/api/v1/alert-rules/%d/mute", e.alertRule("a")), apiv1.Mute{Until: time.Now().Add(time.Hour)}}
		}, with(operate, s204)},
		{"GET /api/v1/alerts", fixed("GET", "/api/v1/alerts", nil), anyUser},
		{"GET /api/v1/alerts/{id}", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/alerts/%d", e.openAlert("a")), nil}
		}, read},
		{"POST /api/v1/alerts/{id}/ack", func(e *env, _ string) req {
			return req{"POST", fmt.Sprintf("/api/v1/alerts/%d/ack", e.openAlert("a")), nil}
		}, with(operate, s204)},
		{"POST /api/v1/alerts/{id}/mute", func(e *env, _ string) req {
			return req{"POST", fmt.Sprintf("/api/v1/alerts/%d/mute", e.openAlert("a")), apiv1.Mute{Until: time.Now().Add(time.Hour), Reason: "deploy"}}
		}, with(operate, s204)},
		{"GET /api/v1/users", fixed("GET", "/api/v1/users", nil), adminOnly},
		{"POST /api/v1/users", func(e *env, _ string) req {
			return req{"POST", "/api/v1/users", apiv1.UserCreate{Name: fmt.Sprint("u", e.next())}}
		}, with(adminOnly, s201)},
		{"GET /api/v1/users/{name}", fixed("GET", "/api/v1/users/operator", nil), self},
		{"PATCH /api/v1/users/{name}", func(*env, string) req {
			d := "Operator"
			return req{"PATCH", "/api/v1/users/operator", apiv1.UserPatch{DisplayName: &d}}
		}, self},
		{"DELETE /api/v1/users/{name}", func(e *env, _ string) req { return req{"DELETE", "/api/v1/users/" + e.newUser(), nil} }, with(adminOnly, s204)},
		{"POST /api/v1/users/{name}/grants", func(e *env, _ string) req {
			return req{"POST", "/api/v1/users/" + e.newUser() + "/grants", apiv1.Grant{Group: "a", Role: "viewer"}}
		}, adminOnly},
		{"POST /api/v1/users/{name}/password-link", func(e *env, _ string) req {
			return req{"POST", "/api/v1/users/" + e.newUser() + "/password-link", nil}
		}, with(adminOnly, s201)},
		{"POST /api/v1/password-links/use", fixed("POST", "/api/v1/password-links/use",
			apiv1.PasswordLinkUse{Token: "not-a-token", Password: "a long enough password"}), [6]int{s410, s410, s410, s410, s410, s410}},
		{"DELETE /api/v1/users/{name}/grants", func(e *env, _ string) req {
			return req{"DELETE", "/api/v1/users/" + e.newUser(store.Grant{Group: "a", Role: "viewer"}) + "/grants?group=a", nil}
		}, adminOnly},
		{"GET /api/v1/keys", fixed("GET", "/api/v1/keys", nil), anyUser},
		{"GET /api/v1/keys", fixed("GET", "/api/v1/keys?user=operator", nil), self},
		{"POST /api/v1/keys", fixed("POST", "/api/v1/keys", apiv1.KeyCreate{Name: "ci"}), with(anyUser, s201)},
		{"POST /api/v1/keys", fixed("POST", "/api/v1/keys", apiv1.KeyCreate{Name: "ci", User: "operator"}), with(self, s201)},
		{"DELETE /api/v1/keys/{id}", func(e *env, _ string) req {
			return req{"DELETE", fmt.Sprintf("/api/v1/keys/%d", e.newKey("operator", nil).ID), nil}
		}, ownKey},
		{"GET /api/v1/audit", fixed("GET", "/api/v1/audit", nil), adminOnly},

		{"POST /api/v1/workflows", func(e *env, _ string) req {
			return req{"POST", "/api/v1/workflows", e.workflowSpec(fmt.Sprint("w", e.next()), e.plain.ID)}
		}, [6]int{s401, s403, s403, s201, s201, s201}},
		{"POST /api/v1/workflows", func(e *env, _ string) req { // a node running commands needs scripts
			return req{"POST", "/api/v1/workflows", e.workflowSpec(fmt.Sprint("w", e.next()), e.shell.ID)}
		}, [6]int{s401, s403, s403, s201, s400, s201}},
		{"GET /api/v1/workflows", fixed("GET", "/api/v1/workflows", nil), anyUser},
		{"GET /api/v1/workflows/{id}", func(e *env, _ string) req { return req{"GET", wfPath(e.workflow().ID, ""), nil} }, read},
		{"PUT /api/v1/workflows/{id}", func(e *env, _ string) req {
			w := e.workflow()
			spec := e.workflowSpec(w.Name, e.plain.ID)
			spec.Description, spec.Version = "edited", w.Version
			return req{"PUT", wfPath(w.ID, ""), spec}
		}, operate},
		{"DELETE /api/v1/workflows/{id}", func(e *env, _ string) req { return req{"DELETE", wfPath(e.workflow().ID, ""), nil} }, with(operate, s204)},
		{"POST /api/v1/workflows/{id}/trigger", func(e *env, _ string) req {
			return req{"POST", wfPath(e.workflow().ID, "/trigger"), nil}
		}, with(operate, s202)},
		{"GET /api/v1/workflows/{id}/runs", func(e *env, _ string) req { return req{"GET", wfPath(e.workflow().ID, "/runs"), nil} }, read},
		{"GET /api/v1/workflows/{id}/history", func(e *env, _ string) req { return req{"GET", wfPath(e.workflow().ID, "/history"), nil} }, read},
		{"POST /api/v1/workflows/{id}/pause", func(e *env, _ string) req {
			return req{"POST", wfPath(e.workflow().ID, "/pause"), apiv1.DisableRequest{Note: "n"}}
		}, operate},
		{"POST /api/v1/workflows/{id}/resume", func(e *env, _ string) req { return req{"POST", wfPath(e.workflow().ID, "/resume"), nil} }, operate},
		{"POST /api/v1/workflows/{id}/backfill", func(e *env, _ string) req {
			now := time.Now()
			return req{"POST", wfPath(e.cronWorkflow().ID, "/backfill"), apiv1.BackfillRequest{From: now.Add(-2 * time.Hour), To: now}}
		}, with(operate, s201)},
		{"GET /api/v1/workflow-runs", func(e *env, _ string) req {
			return req{"GET", fmt.Sprintf("/api/v1/workflow-runs?workflow=%d", e.workflow().ID), nil}
		}, read},
		{"GET /api/v1/workflow-runs/{id}", func(e *env, _ string) req { return req{"GET", wfRunPath(e.workflowRun(false), ""), nil} }, read},
		{"POST /api/v1/workflow-runs/{id}/cancel", func(e *env, _ string) req {
			return req{"POST", wfRunPath(e.workflowRun(false), "/cancel"), nil}
		}, with(operate, s202)},
		{"POST /api/v1/workflow-runs/{id}/retry", func(e *env, _ string) req {
			return req{"POST", wfRunPath(e.workflowRun(true), "/retry"), nil}
		}, with(operate, s202)},
		{"POST /api/v1/workflow-runs/{id}/mark-succeeded", func(e *env, _ string) req {
			return req{"POST", wfRunPath(e.workflowRun(false), "/mark-succeeded"), apiv1.NodeAction{Node: "b", Output: []byte(`{"x":1}`)}}
		}, with(operate, s202)},
		{"POST /api/v1/workflow-runs/{id}/mark-succeeded", func(e *env, _ string) req { // an output for shell nodes: scripts
			return req{"POST", wfRunPath(e.workflowRunOf(e.shell.ID, false), "/mark-succeeded"), apiv1.NodeAction{Node: "b", Output: []byte(`"rm -rf /"`)}}
		}, with(scripts, s202)},
		{"POST /api/v1/workflow-runs/{id}/skip", func(e *env, _ string) req {
			return req{"POST", wfRunPath(e.workflowRun(false), "/skip"), apiv1.NodeAction{Node: "b"}}
		}, with(operate, s202)},
		{"POST /api/v1/workflow-runs/{id}/rerun", func(e *env, _ string) req {
			return req{"POST", wfRunPath(e.workflowRun(true), "/rerun"), nil}
		}, with(operate, s202)},
		{"POST /api/v1/workflow-runs/{id}/rerun", func(e *env, _ string) req { // shell nodes: the params are the old run's, not chosen
			return req{"POST", wfRunPath(e.workflowRunOf(e.shell.ID, true), "/rerun"), nil}
		}, with(operate, s202)},
		{"/api/", fixed("GET", "/api/v1/nothing-here", nil), [6]int{s401, s404, s404, s404, s404, s404}},
	}
}

// TestPermissionMatrix sends every route of the server's own table as each
// principal and checks the status: a route added without a row here fails
// the test, as a route added without a rule fails the server's start.
func TestPermissionMatrix(t *testing.T) {
	e := newEnv(t)
	covered := map[string]bool{}
	for _, row := range matrix() {
		covered[row.pattern] = true
		for i, who := range principals {
			rq := row.build(e, who)
			code, body := e.do(who, rq.method, rq.path, rq.body)
			if code != row.want[i] {
				t.Errorf("%s as %q (%s %s): %d, want %d: %s", row.pattern, who, rq.method, rq.path, code, row.want[i],
					strings.TrimSpace(string(body)))
			}
			if code == s403 && !strings.Contains(string(body), `"permission"`) {
				t.Errorf("%s as %q: 403 without the missing permission: %s", row.pattern, who, body)
			}
		}
	}
	for _, r := range e.api.Routes() {
		if !covered[r.Pattern] {
			t.Errorf("route %q (rule %s) has no row in the permission matrix", r.Pattern, r.Rule)
		}
	}
}

// cronJob is a fresh hourly job of group a, for backfills.
func (e *env) cronJob() store.Job {
	e.t.Helper()
	j, err := e.st.CreateJob(context.Background(), store.System, store.Job{Group: "a", Name: fmt.Sprint("c", e.next()),
		Handler: "echo", ScheduleType: "cron", ScheduleExpr: "@every 1h", Timezone: "UTC", MisfirePolicy: "skip",
		RouteStrategy: "any", BlockStrategy: "serial", Enabled: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// scriptJob is a fresh bash script job of group a at version 1.
func (e *env) scriptJob() store.Job {
	e.t.Helper()
	j, err := e.st.CreateJob(context.Background(), store.System, store.Job{Group: "a", Name: fmt.Sprint("s", e.next()),
		Handler: "script", ScheduleType: "none", Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any",
		BlockStrategy: "serial", Enabled: true, Script: &wire.Script{Language: "bash", Source: "echo one\n"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// newBackfill records a running backfill of a fresh hourly job.
func (e *env) newBackfill() store.Backfill {
	e.t.Helper()
	now := time.Now()
	b, err := e.st.CreateBackfill(context.Background(), store.System, e.cronJob(), now.Add(-3*time.Hour), now, 3)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// secret is a fresh secret of group, for the secrets' rows.
func (e *env) secret(group string) int64 {
	e.t.Helper()
	s, err := e.st.CreateSecret(context.Background(), store.System, group, fmt.Sprint("s", e.next()), []byte("v"))
	if err != nil {
		e.t.Fatal(err)
	}
	return s.ID
}

// groupFlow sets a group's flow state directly.
func (e *env) groupFlow(group string, state store.FlowState) {
	e.t.Helper()
	if _, err := e.st.SetGroupFlow(context.Background(), store.System, group, state, ""); err != nil {
		e.t.Fatal(err)
	}
}
