package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// notExercised are the documented operations TestOpenAPIScenario cannot
// get a success from, and why.
var notExercised = map[string]string{
	"GET /metrics":                           "served here only with a scrape token, and answers Prometheus text (TestMetricsToken)",
	"POST /api/v1/sso/{provider}/start":      "needs a real OpenID provider: run against one in scheduler/internal/console/sso_test.go and scheduler/cmd/jetjob/login_sso_test.go",
	"POST /api/v1/sso/{provider}/session":    "needs a real OpenID provider: run against one in scheduler/internal/console/sso_test.go and scheduler/cmd/jetjob/login_sso_test.go",
	"POST /api/v1/sso/{provider}/key":        "needs a real OpenID provider: run against one in scheduler/internal/console/sso_test.go and scheduler/cmd/jetjob/login_sso_test.go",
	"POST /api/v1/sso/{provider}/device":     "needs a real OpenID provider: run against one in scheduler/internal/console/sso_test.go and scheduler/cmd/jetjob/login_sso_test.go",
	"POST /api/v1/sso/{provider}/device/key": "needs a real OpenID provider: run against one in scheduler/internal/console/sso_test.go and scheduler/cmd/jetjob/login_sso_test.go",
}

// TestOpenAPIScenario exercises every documented operation against a
// real API, with documents filled in as a user's would be, and error
// cases (400, 401, 403, 404, 405, 409): the server's contract
// (contract_test.go) validates every request and answer against the
// committed OpenAPI document, and an operation left without a success
// fails the test.
func TestOpenAPIScenario(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// call sends a request as who (a principal, or "cookie:<session>")
	// and decodes a JSON answer into out, failing unless it answers code.
	call := func(code int, who, method, path string, body, out any) {
		t.Helper()
		cred := who
		if !strings.HasPrefix(who, "cookie:") {
			cred = e.keys[who]
		}
		a := e.callEmpty(cred, method, path)
		if body != nil {
			a = e.call(cred, method, path, body)
		}
		if a.code != code {
			t.Fatalf("%s %s as %q: %d, want %d: %s", method, path, who, a.code, code, a.body)
		}
		if out != nil {
			if err := json.Unmarshal([]byte(a.body), out); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, a.body)
			}
		}
	}

	// The document itself: public, and the committed file.
	resp, err := http.Get(e.srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != s200 || resp.Header.Get("Content-Type") != "application/json" || string(served) != apiv1.OpenAPI() {
		t.Fatalf("GET /api/v1/openapi.json anonymously: %d %s, %d bytes; want 200 and the committed document",
			resp.StatusCode, resp.Header.Get("Content-Type"), len(served))
	}
	call(s200, "", "GET", "/healthz", nil, nil)
	call(s200, "", "GET", "/readyz", nil, nil)

	// Sessions.
	e.setPassword("operator", "correct horse battery staple")
	cookie := e.session("operator", "correct horse battery staple")
	var me apiv1.Me
	call(s200, cookie, "GET", "/api/v1/me", nil, &me)
	call(s200, "", "GET", "/api/v1/sso", nil, nil)
	call(s204, cookie, "POST", "/api/v1/logout", nil, nil)
	call(s401, cookie, "GET", "/api/v1/me", nil, nil)

	// Groups and jobs.
	call(s201, "admin", "POST", "/api/v1/groups", apiv1.Group{Name: "c", Title: "Group C", CommandHandlers: []string{"deploy"}}, nil)
	call(s200, "viewerA", "GET", "/api/v1/groups", nil, nil)
	start := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	end := start.Add(365 * 24 * time.Hour)
	spec := apiv1.JobSpec{Group: "a", Name: "nightly", Description: "the nightly export", Handler: "echo",
		Params: `{"dry_run":true}`, ScheduleType: "cron", ScheduleExpr: "0 2 * * *", Timezone: "Europe/Paris",
		MisfirePolicy: "fire_once", RouteStrategy: "round", BlockStrategy: "discard_later",
		Timeout: apiv1.Duration(time.Minute), MaxRetries: 2, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(time.Second),
		RetryMax: apiv1.Duration(time.Minute), ChildJobIDs: []int64{e.plain.ID}, MisfireThreshold: apiv1.Duration(10 * time.Second),
		MaxCatchup: 3, Jitter: apiv1.Duration(time.Second), StartAt: &start, EndAt: &end}
	var job apiv1.Job
	call(s201, "operator", "POST", "/api/v1/jobs", spec, &job)
	jobPath := fmt.Sprintf("/api/v1/jobs/%d", job.ID)
	call(s200, "viewerA", "GET", jobPath, nil, nil)
	call(s200, "viewerA", "GET", "/api/v1/jobs?group=a&sort=name&order=desc&limit=2&enabled=true", nil, nil)
	var page apiv1.JobList
	call(s200, "viewerA", "GET", "/api/v1/jobs?group=a&limit=1&total=true", nil, &page)
	if page.Cursor != "" {
		call(s200, "viewerA", "GET", "/api/v1/jobs?group=a&limit=1&total=true&cursor="+page.Cursor, nil, &page)
		call(s200, "viewerA", "GET", "/api/v1/jobs?group=a&limit=1&total=true&before="+page.Prev, nil, nil)
	}
	spec.Description, spec.Version = "the nightly export, revised", job.Version
	call(s200, "operator", "PUT", jobPath, spec, nil)
	call(s409, "operator", "PUT", jobPath, spec, nil) // the version is stale now
	bad := spec
	bad.ScheduleExpr = "not a cron"
	call(s400, "operator", "POST", "/api/v1/jobs", bad, nil)
	call(s403, "viewerA", "POST", "/api/v1/jobs", spec, nil)
	call(s404, "viewerB", "GET", jobPath, nil, nil)
	call(http.StatusMethodNotAllowed, "operator", "PATCH", jobPath, spec, nil)
	call(s200, "operator", "POST", jobPath+"/disable", apiv1.DisableRequest{Note: "maintenance"}, nil)
	call(s200, "operator", "POST", jobPath+"/enable", apiv1.EnableRequest{CatchUp: "none"}, nil)
	params := `{"dry_run":false}`
	trig := apiv1.TriggerRequest{Params: &params, IdempotencyKey: "scenario-1"}
	call(s202, "operator", "POST", jobPath+"/trigger", trig, nil)
	call(s200, "operator", "POST", jobPath+"/trigger", trig, nil) // the idempotent repeat
	call(s202, "operator", "POST", jobPath+"/trigger", apiv1.TriggerRequest{Delay: "1h"}, nil)
	// A group's pause and drain (docs/flow-control.md): a paused group's
	// job is triggered only with force.
	call(s200, "operator", "POST", "/api/v1/groups/a/pause", apiv1.GroupFlowRequest{Note: "database upgrade"}, nil)
	call(s409, "operator", "POST", jobPath+"/trigger", nil, nil)
	call(s202, "operator", "POST", jobPath+"/trigger", apiv1.TriggerRequest{Force: true}, nil)
	call(s200, "operator", "POST", "/api/v1/groups/a/drain", apiv1.GroupFlowRequest{Note: "and drain"}, nil)
	call(s403, "viewerA", "POST", "/api/v1/groups/a/resume", nil, nil)
	call(s404, "viewerB", "POST", "/api/v1/groups/a/resume", nil, nil)
	call(s400, "operator", "POST", "/api/v1/groups/a/resume", apiv1.GroupFlowRequest{Note: "bad\x00note"}, nil)
	call(s200, "operator", "POST", "/api/v1/groups/a/resume", nil, nil)
	// Its cap and rate limit, and the queue view of them.
	five, rate, badRate := 5, "100/1m", "100 per minute"
	call(s200, "operator", "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: &five, RateLimit: &rate}, nil)
	call(s400, "operator", "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{RateLimit: &badRate}, nil)
	call(s403, "viewerA", "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: &five}, nil)
	call(s200, "viewerA", "GET", "/api/v1/groups/a/queue", nil, nil)
	call(s404, "viewerB", "GET", "/api/v1/groups/a/queue", nil, nil)
	call(s200, "viewerA", "GET", jobPath+"/next?n=3", nil, nil)
	call(s200, "viewerA", "GET", jobPath+"/runs?limit=5", nil, nil)
	call(s200, "viewerA", "GET", jobPath+"/history?limit=5", nil, nil)
	var bf apiv1.Backfill
	hourly := fmt.Sprintf("/api/v1/jobs/%d", e.cronJob().ID)
	call(s201, "operator", "POST", hourly+"/backfill", apiv1.BackfillRequest{From: time.Now().Add(-3 * time.Hour), To: time.Now()}, &bf)
	call(s200, "viewerA", "GET", hourly+"/backfills", nil, nil)
	call(s200, "viewerA", "GET", fmt.Sprintf("/api/v1/backfills/%d", bf.ID), nil, nil)
	call(s200, "viewerA", "GET", "/api/v1/backfills?state=running", nil, nil)
	// Calendars and label selectors (issue #34).
	call(s201, "admin", "PUT", "/api/v1/calendars/holidays", apiv1.Calendar{Name: "holidays", Dates: []string{"2026-12-25"},
		Weekdays: []string{"SUN"}, Ranges: []apiv1.CalendarRange{{From: "2026-10-01", To: "2026-10-07"}}}, nil)
	call(s200, "viewerA", "GET", "/api/v1/calendars", nil, nil)
	call(s200, "viewerA", "GET", "/api/v1/calendars/holidays", nil, nil)
	call(s204, "admin", "DELETE", "/api/v1/calendars/holidays", nil, nil)
	var sec apiv1.Secret
	call(s201, "operator", "POST", "/api/v1/secrets", apiv1.SecretWrite{Group: "a", Name: "db-password", Value: "hunter2-hunter2"}, &sec)
	call(s200, "viewerA", "GET", "/api/v1/secrets?group=a", nil, nil)
	call(s200, "viewerA", "GET", fmt.Sprintf("/api/v1/secrets/%d", sec.ID), nil, nil)
	call(s200, "operator", "PUT", fmt.Sprintf("/api/v1/secrets/%d", sec.ID), apiv1.SecretWrite{Value: "hunter3-hunter3"}, nil)
	call(s204, "operator", "DELETE", fmt.Sprintf("/api/v1/secrets/%d", sec.ID), nil, nil)
	call(s200, "operator", "POST", "/api/v1/jobs/bulk", apiv1.BulkRequest{Selector: "team=none", Group: "a", Action: "disable", Note: "maintenance"}, nil)
	call(s200, "operator", "POST", "/api/v1/jobs/bulk", apiv1.BulkRequest{IDs: []int64{job.ID}, Action: "enable"}, nil)
	call(s200, "operator", "POST", fmt.Sprintf("/api/v1/backfills/%d/cancel", bf.ID), nil, nil)

	// A script job: its script, a save, the versions, one version, a
	// diff, a rollback, an importer's history.
	src := "#!/bin/bash\necho one\n"
	var sj apiv1.Job
	call(s201, "operator", "POST", "/api/v1/jobs", apiv1.JobSpec{Group: "a", Name: "script-job", Handler: "script", ScriptLanguage: "bash",
		Script: &src, ScheduleType: "none"}, &sj)
	sp := fmt.Sprintf("/api/v1/jobs/%d/script", sj.ID)
	call(s200, "viewerA", "GET", sp, nil, nil)
	call(s200, "operator", "PUT", sp, apiv1.ScriptSave{Source: "#!/bin/bash\necho two\n", Remark: "two"}, nil)
	call(s200, "viewerA", "GET", sp+"/versions", nil, nil)
	call(s200, "viewerA", "GET", sp+"/versions/1", nil, nil)
	call(s200, "viewerA", "GET", sp+"/diff?from=1&to=2", nil, nil)
	call(s200, "operator", "POST", sp+"/rollback", apiv1.ScriptRollback{Version: 1}, nil)
	call(s200, "admin", "POST", sp+"/import", apiv1.ScriptImport{Versions: []apiv1.ScriptImportVersion{
		{Language: "bash", Source: "echo zero\n", Remark: "older"}}}, nil)

	// Runs: one ended with every field set.
	if _, err := e.pool.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED', triggered_at = scheduled_at,
		started_at = scheduled_at, finished_at = scheduled_at + interval '2 seconds', worker_id = 'wa', message = 'done'
		WHERE id = $1`, e.run); err != nil {
		t.Fatal(err)
	}
	runPath := fmt.Sprintf("/api/v1/runs/%d", e.run)
	call(s200, "viewerA", "GET", runPath, nil, nil)
	call(s200, "viewerA", "GET", "/api/v1/runs?group=a&status=SUCCEEDED&limit=10", nil, nil)
	call(s200, "viewerA", "GET", runPath+"/logs?limit=10", nil, nil)
	call(s200, "viewerA", "GET", runPath+"/logs?follow=true", nil, nil) // ended: the stream ends at once
	call(s409, "operator", "POST", runPath+"/kill", nil, nil)
	call(s202, "operator", "POST", fmt.Sprintf("/api/v1/runs/%d/kill", e.newRun(e.plain.ID)), nil, nil)
	call(s200, "operator", "POST", "/api/v1/runs/bulk", apiv1.RunsBulk{Action: apiv1.BulkKill, IDs: []int64{e.newRun(e.plain.ID)}}, nil)
	call(s200, "operator", "POST", "/api/v1/runs/bulk", apiv1.RunsBulk{Action: apiv1.BulkDelete, Filter: "status=CANCELLED&group=a"}, nil)
	call(s409, "operator", "DELETE", fmt.Sprintf("/api/v1/runs/%d", e.newRun(e.plain.ID)), nil, nil)
	call(s204, "operator", "DELETE", fmt.Sprintf("/api/v1/runs/%d", e.endedRun(e.plain.ID)), nil, nil)
	at := time.Now().Add(-2 * time.Hour).UTC()
	fin := at.Add(time.Minute)
	call(s200, "admin", "POST", "/api/v1/runs/import", apiv1.RunImport{Runs: []apiv1.ImportedRun{{JobID: e.plain.ID,
		ScheduledAt: at, StartedAt: &at, FinishedAt: &fin, Status: "FAILED", WorkerID: "xxl-1", Message: "imported"}}}, nil)
	day := time.Now().UTC().Format(time.DateOnly)
	call(s200, "viewerA", "GET", "/api/v1/stats?from="+day+"&to="+day, nil, nil)
	call(s200, "admin", "POST", "/api/v1/stats/import", apiv1.StatsImport{Days: []apiv1.ImportedDay{
		{Day: time.Now().UTC().AddDate(0, 0, -400).Format(time.DateOnly), Succeeded: 5, Failed: 1}}}, nil)
	call(s200, "viewerA", "GET", "/api/v1/workers?group=a", nil, nil)
	call(s200, "viewerA", "GET", "/api/v1/schedule/preview?type=cron&expr=*/5+*+*+*+*&timezone=Asia/Tokyo&n=3", nil, nil)
	call(s400, "viewerA", "GET", "/api/v1/schedule/preview?type=cron&expr=nonsense", nil, nil)
	call(s400, "viewerA", "GET", "/api/v1/schedule/preview?type=cron&expr=0+9+*+*+*&exclude=no-such-calendar", nil, nil)
	call(s200, "viewerA", "GET", "/api/v1/dashboard", nil, nil)
	call(s200, "viewerA", "GET", "/api/v1/cluster", nil, nil)

	// Workflows and their runs.
	var wf apiv1.Workflow
	call(s201, "operator", "POST", "/api/v1/workflows", e.workflowSpec("flow", e.plain.ID), &wf)
	wfPath := fmt.Sprintf("/api/v1/workflows/%d", wf.ID)
	call(s200, "viewerA", "GET", "/api/v1/workflows?group=a&limit=5&labels=team%3Da", nil, nil)
	call(s200, "viewerA", "GET", wfPath, nil, nil)
	wspec := e.workflowSpec("flow", e.plain.ID)
	wspec.Version, wspec.Description = wf.Version, "revised"
	call(s200, "operator", "PUT", wfPath, wspec, nil)
	wparams := `{"x":1}`
	call(s202, "operator", "POST", wfPath+"/trigger", apiv1.TriggerRequest{Params: &wparams}, nil)
	call(s200, "operator", "POST", wfPath+"/pause", apiv1.DisableRequest{Note: "hold"}, nil)
	call(s200, "operator", "POST", wfPath+"/resume", nil, nil)
	call(s200, "viewerA", "GET", wfPath+"/history", nil, nil)
	call(s201, "operator", "POST", fmt.Sprintf("/api/v1/workflows/%d/backfill", e.cronWorkflow().ID),
		apiv1.BackfillRequest{From: time.Now().Add(-3 * time.Hour), To: time.Now()}, nil)
	running := e.workflowRun(false)
	wrPath := fmt.Sprintf("/api/v1/workflow-runs/%d", running)
	call(s202, "operator", "POST", wrPath+"/mark-succeeded", apiv1.NodeAction{Node: "b", Output: []byte(`{"rows":3}`), Reason: "by hand"}, nil)
	var wfRun apiv1.WorkflowRun
	call(s200, "viewerA", "GET", wrPath, nil, &wfRun)
	call(s200, "viewerA", "GET", fmt.Sprintf("/api/v1/workflow-runs?workflow=%d&limit=5", wfRun.WorkflowID), nil, nil)
	call(s200, "viewerA", "GET", fmt.Sprintf("/api/v1/workflows/%d/runs", wfRun.WorkflowID), nil, nil)
	call(s202, "operator", "POST", fmt.Sprintf("/api/v1/workflow-runs/%d/skip", e.workflowRun(false)), apiv1.NodeAction{Node: "b"}, nil)
	call(s202, "operator", "POST", fmt.Sprintf("/api/v1/workflow-runs/%d/cancel", e.workflowRun(false)), nil, nil)
	call(s202, "operator", "POST", fmt.Sprintf("/api/v1/workflow-runs/%d/retry", e.workflowRun(true)), nil, nil)
	call(s202, "operator", "POST", fmt.Sprintf("/api/v1/workflow-runs/%d/rerun", e.workflowRun(true)), nil, nil)
	call(s204, "operator", "DELETE", wfPath, nil, nil)

	// Alerts.
	var ch apiv1.Channel
	call(s201, "operator", "POST", "/api/v1/channels", channelSpec("a", "hook"), &ch)
	chPath := fmt.Sprintf("/api/v1/channels/%d", ch.ID)
	call(s200, "viewerA", "GET", "/api/v1/channels", nil, nil)
	call(s200, "viewerA", "GET", chPath, nil, nil)
	upd := channelSpec("a", "hook")
	upd.Template = "{{ .Job }} {{ .Event }}"
	call(s200, "operator", "PUT", chPath, upd, nil)
	call(s200, "operator", "POST", chPath+"/test", nil, nil)
	var rule apiv1.AlertRule
	call(s201, "operator", "POST", "/api/v1/alert-rules", apiv1.AlertRule{Name: "failures", Group: "a",
		Events: []string{"failed", "timed_out"}, Threshold: 2, Window: apiv1.Duration(time.Hour), Channels: []int64{ch.ID},
		Enabled: true}, &rule)
	rulePath := fmt.Sprintf("/api/v1/alert-rules/%d", rule.ID)
	call(s200, "viewerA", "GET", "/api/v1/alert-rules", nil, nil)
	call(s200, "viewerA", "GET", rulePath, nil, nil)
	call(s200, "operator", "PUT", rulePath, apiv1.AlertRule{Name: "failures", Events: []string{"failed"}, Threshold: 3,
		Channels: []int64{ch.ID}}, nil)
	call(s204, "operator", "POST", rulePath+"/mute", apiv1.Mute{Until: time.Now().Add(time.Hour), Reason: "deploy"}, nil)
	call(s204, "operator", "DELETE", rulePath, nil, nil)
	alertPath := fmt.Sprintf("/api/v1/alerts/%d", e.openAlert("a"))
	call(s200, "viewerA", "GET", "/api/v1/alerts?state=open&limit=10", nil, nil)
	call(s200, "viewerA", "GET", alertPath, nil, nil)
	call(s204, "operator", "POST", alertPath+"/ack", nil, nil)
	call(s204, "operator", "POST", alertPath+"/mute", apiv1.Mute{Until: time.Now().Add(time.Hour)}, nil)
	call(s204, "operator", "DELETE", chPath, nil, nil)

	// Users, grants, keys, audit.
	call(s201, "admin", "POST", "/api/v1/users", apiv1.UserCreate{Name: "dana", DisplayName: "Dana",
		Grants: []apiv1.Grant{{Group: "a", Role: apiv1.RoleViewer}}}, nil)
	call(s200, "admin", "GET", "/api/v1/users", nil, nil)
	call(s200, "admin", "GET", "/api/v1/users/dana", nil, nil)
	name := "Dana D."
	lang := "zh-CN"
	call(s200, "admin", "PATCH", "/api/v1/users/dana", apiv1.UserPatch{DisplayName: &name, Language: &lang}, nil)
	call(s200, "admin", "POST", "/api/v1/users/dana/grants", apiv1.Grant{Group: "a", Role: apiv1.RoleOperator, Scripts: true}, nil)
	call(s200, "admin", "DELETE", "/api/v1/users/dana/grants?group=a", nil, nil)
	var link apiv1.PasswordLink
	call(s201, "admin", "POST", "/api/v1/users/dana/password-link", apiv1.PasswordLinkRequest{TTL: apiv1.Duration(time.Hour)}, &link)
	call(s204, "", "POST", "/api/v1/password-links/use", apiv1.PasswordLinkUse{Token: link.Token, Password: "correct horse battery staple"}, nil)
	call(http.StatusGone, "", "POST", "/api/v1/password-links/use", apiv1.PasswordLinkUse{Token: link.Token, Password: "correct horse battery staple"}, nil)
	call(s403, "viewerA", "GET", "/api/v1/users", nil, nil)
	call(s204, "admin", "DELETE", "/api/v1/users/dana", nil, nil)
	exp := time.Now().Add(24 * time.Hour)
	var key apiv1.CreatedKey
	call(s201, "operator", "POST", "/api/v1/keys", apiv1.KeyCreate{Name: "ci", ExpiresAt: &exp}, &key)
	call(s200, "operator", "GET", "/api/v1/keys", nil, nil)
	call(s204, "operator", "DELETE", fmt.Sprintf("/api/v1/keys/%d", key.ID), nil, nil)
	call(s200, "admin", "GET", "/api/v1/audit?limit=50", nil, nil)
	call(s204, "operator", "DELETE", jobPath, nil, nil)
	call(s401, "", "GET", "/api/v1/jobs", nil, nil)

	for _, op := range e.contract.unanswered() {
		if _, ok := notExercised[op]; !ok {
			t.Errorf("%s: no request of the scenario answered a success: add one", op)
		}
	}
}
