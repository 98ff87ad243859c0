package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// hostileCase is one bad request and what its answer must name.
type hostileCase struct {
	name   string
	method string
	path   string
	body   string // sent as is; "" sends no body
	code   int    // the 4xx wanted
	names  string // a word the error message must contain (the field or parameter)
}

// validJob is a job spec that the API accepts; cases change one field.
func validJob(field, value string) string {
	spec := map[string]any{"group": "g", "name": "nightly", "handler": "h", "schedule_type": "cron",
		"schedule_expr": "0 30 2 * * *", "timezone": "Europe/Berlin"}
	b, _ := json.Marshal(spec)
	if field == "" {
		return string(b)
	}
	// Replace or add the field with a raw JSON value.
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	m[field] = json.RawMessage(value)
	out, _ := json.Marshal(m)
	return string(out)
}

// Every bad or hostile input answers 4xx with a JSON message that names the
// offending field or parameter: never 500, never a stack trace, never a
// silently mangled value stored.
func TestHostileInput(t *testing.T) {
	srv, _ := server(t)
	ctx := context.Background()
	do := func(method, path, body string) (int, string, http.Header) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	if code, body, _ := do("POST", "/api/v1/groups", `{"name":"g"}`); code != http.StatusCreated {
		t.Fatalf("create group: %d %s", code, body)
	}
	code, body, _ := do("POST", "/api/v1/jobs", validJob("name", `"first"`))
	if code != http.StatusCreated {
		t.Fatalf("create job: %d %s", code, body)
	}
	var job apiv1.Job
	if err := json.Unmarshal([]byte(body), &job); err != nil {
		t.Fatal(err)
	}
	jobPath := fmt.Sprintf("/api/v1/jobs/%d", job.ID)
	// A run, whose logs' query parameters are checked once the run is
	// known to be the caller's (an unknown run is 404 before anything).
	code, body, _ = do("POST", jobPath+"/trigger", "")
	if code != http.StatusAccepted && code != http.StatusCreated {
		t.Fatalf("trigger job: %d %s", code, body)
	}
	var run apiv1.Run
	if err := json.Unmarshal([]byte(body), &run); err != nil {
		t.Fatal(err)
	}
	logsPath := fmt.Sprintf("/api/v1/runs/%d/logs", run.ID)
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

	cases := []hostileCase{
		// Bodies.
		{"body over the limit", "POST", "/api/v1/jobs", `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "larger than"},
		{"empty body", "POST", "/api/v1/jobs", "", 400, "empty"},
		{"malformed JSON", "POST", "/api/v1/jobs", `{"group":"g",`, 400, "malformed"},
		{"not an object", "POST", "/api/v1/jobs", `[1,2,3]`, 400, "malformed"},
		{"two documents", "POST", "/api/v1/jobs", validJob("", "") + `{}`, 400, "more than one"},
		{"null document", "POST", "/api/v1/jobs", `null`, 400, "group"},
		{"unknown field", "POST", "/api/v1/jobs", validJob("schedule", `"daily"`), 400, `"schedule"`},
		{"wrong type: number for name", "POST", "/api/v1/jobs", validJob("name", `5`), 400, "name"},
		{"wrong type: string for max_retries", "POST", "/api/v1/jobs", validJob("max_retries", `"three"`), 400, "max_retries"},
		{"max_retries overflows int", "POST", "/api/v1/jobs", validJob("max_retries", `1e30`), 400, "max_retries"},
		{"negative max_retries", "POST", "/api/v1/jobs", validJob("max_retries", `-1`), 400, "max_retries"},
		{"wrong type: object for child_job_ids", "POST", "/api/v1/jobs", validJob("child_job_ids", `{"a":1}`), 400, "child_job_ids"},
		{"child id overflows int64", "POST", "/api/v1/jobs", validJob("child_job_ids", `[9223372036854775808]`), 400, "child_job_ids"},
		{"child that does not exist", "POST", "/api/v1/jobs", validJob("child_job_ids", `[987654]`), 400, "987654"},
		{"wrong type: enabled as string", "POST", "/api/v1/jobs", validJob("enabled", `"yes"`), 400, "enabled"},
		{"timeout not a duration", "POST", "/api/v1/jobs", validJob("timeout", `"forever"`), 400, "timeout"},
		{"timeout a number", "POST", "/api/v1/jobs", validJob("timeout", `30`), 400, "timeout"},
		{"negative timeout", "POST", "/api/v1/jobs", validJob("timeout", `"-5s"`), 400, "timeout"},
		{"retry_initial overflows", "POST", "/api/v1/jobs", validJob("retry_initial", `"9999999999h"`), 400, "retry_initial"},
		// NUL bytes and invalid UTF-8: PostgreSQL refuses both in text.
		{"NUL in name", "POST", "/api/v1/jobs", validJob("name", `"night\u0000ly"`), 400, "name"},
		{"NUL in description", "POST", "/api/v1/jobs", validJob("description", `"a\u0000b"`), 400, "description"},
		{"NUL in handler", "POST", "/api/v1/jobs", validJob("handler", `"h\u0000"`), 400, "handler"},
		{"NUL in params", "POST", "/api/v1/jobs", validJob("params", `"{\"a\":\"\u0000\"}"`), 400, "params"},
		{"NUL in schedule_expr", "POST", "/api/v1/jobs", validJob("schedule_expr", `"0 30 2 * * *\u0000"`), 400, "schedule_expr"},
		{"NUL in timezone", "POST", "/api/v1/jobs", validJob("timezone", `"Europe/Berlin\u0000"`), 400, "timezone"},
		{"NUL in alarm_emails", "POST", "/api/v1/jobs", validJob("alarm_emails", `["ops@example.com\u0000"]`), 400, "alarm_emails"},
		{"NUL in alarm_webhook", "POST", "/api/v1/jobs", validJob("alarm_webhook", `"https://example.com/\u0000"`), 400, "alarm_webhook"},
		{"invalid UTF-8 in name", "POST", "/api/v1/jobs", validJob("name", "\"bad \xff\xfe name\""), 400, "name"},
		{"invalid UTF-8 in params", "POST", "/api/v1/jobs", validJob("params", "\"\xc3\x28\""), 400, "params"},
		{"NUL in group title", "POST", "/api/v1/groups", `{"name":"g2","title":"a\u0000b"}`, 400, "title"},
		{"invalid UTF-8 in group title", "POST", "/api/v1/groups", "{\"name\":\"g3\",\"title\":\"\xff\"}", 400, "title"},
		{"group name not a subject token", "POST", "/api/v1/groups", `{"name":"a.b"}`, 400, "group name"},
		{"group name with NUL", "POST", "/api/v1/groups", `{"name":"g\u0000"}`, 400, `"name"`},
		{"NUL in trigger params", "POST", jobPath + "/trigger", `{"params":"x\u0000"}`, 400, "params"},
		{"invalid UTF-8 in trigger params", "POST", jobPath + "/trigger", "{\"params\":\"\xff\"}", 400, "params"},
		{"trigger params wrong type", "POST", jobPath + "/trigger", `{"params":{"a":1}}`, 400, "params"},
		{"trigger params over 64 KiB", "POST", jobPath + "/trigger", `{"params":"` + strings.Repeat("p", 65<<10) + `"}`, 400, "params"},
		{"unknown field in PUT", "PUT", jobPath, validJob("colour", `"red"`), 400, `"colour"`},
		{"name too long", "POST", "/api/v1/jobs", validJob("name", `"`+strings.Repeat("n", 201)+`"`), 400, "name"},
		{"name only spaces", "POST", "/api/v1/jobs", validJob("name", `"   "`), 400, "name"},
		// Schedules.
		{"cron with four fields", "POST", "/api/v1/jobs", validJob("schedule_expr", `"* * * *"`), 400, "cron"},
		{"cron second 61", "POST", "/api/v1/jobs", validJob("schedule_expr", `"61 * * * * *"`), 400, "cron"},
		{"cron that never fires (30 Feb)", "POST", "/api/v1/jobs", validJob("schedule_expr", `"0 0 0 30 2 *"`), 400, "cron"},
		{"cron @every 0s", "POST", "/api/v1/jobs", validJob("schedule_expr", `"@every 0s"`), 400, "every"},
		{"cron @every -1s", "POST", "/api/v1/jobs", validJob("schedule_expr", `"@every -1s"`), 400, "every"},
		{"fix_rate 1ns", "POST", "/api/v1/jobs", fixRate("1ns"), 400, "interval"},
		{"fix_rate negative", "POST", "/api/v1/jobs", fixRate("-10s"), 400, "interval"},
		{"fix_rate words", "POST", "/api/v1/jobs", fixRate("often"), 400, "interval"},
		{"unknown time zone", "POST", "/api/v1/jobs", validJob("timezone", `"Mars/Olympus_Mons"`), 400, "time zone"},
		{"time zone Local", "POST", "/api/v1/jobs", validJob("timezone", `"Local"`), 400, "time zone"},
		{"time zone path traversal", "POST", "/api/v1/jobs", validJob("timezone", `"../../../etc/passwd"`), 400, "time zone"},
		{"once in the past", "POST", "/api/v1/jobs", once("2001-01-01T00:00:00Z"), 400, "once"},
		{"once not a time", "POST", "/api/v1/jobs", once("tomorrow"), 400, "once"},
		{"unknown schedule type", "POST", "/api/v1/jobs", validJob("schedule_type", `"weekly"`), 400, "schedule type"},
		{"unknown misfire policy", "POST", "/api/v1/jobs", validJob("misfire_policy", `"later"`), 400, "misfire"},
		{"alarm webhook not http", "POST", "/api/v1/jobs", validJob("alarm_webhook", `"javascript:alert(1)"`), 400, "alarm_webhook"},
		// Page sizes and query parameters.
		{"jobs limit 0", "GET", "/api/v1/jobs?limit=0", "", 400, "limit"},
		{"jobs limit negative", "GET", "/api/v1/jobs?limit=-5", "", 400, "limit"},
		{"jobs limit huge", "GET", "/api/v1/jobs?limit=100000000", "", 400, "limit"},
		{"jobs limit overflows int64", "GET", "/api/v1/jobs?limit=99999999999999999999", "", 400, "limit"},
		{"jobs after negative", "GET", "/api/v1/jobs?after=-1", "", 400, "after"},
		{"jobs group with NUL", "GET", "/api/v1/jobs?group=g%00", "", 400, "group"},
		{"runs limit huge", "GET", "/api/v1/runs?limit=1000000", "", 400, "limit"},
		{"runs limit negative", "GET", "/api/v1/runs?limit=-1", "", 400, "limit"},
		{"job runs limit 0", "GET", jobPath + "/runs?limit=0", "", 400, "limit"},
		{"job runs before unknown", "GET", jobPath + "/runs?before=987654", "", 400, "before"},
		{"next n huge", "GET", jobPath + "/next?n=100000", "", 400, "n="},
		{"runs status invalid UTF-8", "GET", "/api/v1/runs?status=%FF", "", 400, "status"},
		{"runs to not RFC 3339", "GET", "/api/v1/runs?to=2026-11-22%2000:00", "", 400, "to"},
		{"runs cursor far past PostgreSQL's range", "GET", "/api/v1/runs?cursor=" + cursor("v1.9223372036854775807.1"), "", 400, "cursor"},
		{"runs cursor negative time", "GET", "/api/v1/runs?cursor=" + cursor("v1.-9223372036854775808.1"), "", 400, "cursor"},
		{"runs cursor garbage", "GET", "/api/v1/runs?cursor=%00%FF", "", 400, "cursor"},
		{"logs limit huge", "GET", logsPath + "?limit=1000000", "", 400, "limit"},
		{"logs follow not a bool", "GET", logsPath + "?follow=maybe", "", 400, "follow"},
		{"stats from not a date", "GET", "/api/v1/stats?from=2026-02-30", "", 400, "from"},
		// Ids.
		{"job id not a number", "GET", "/api/v1/jobs/abc", "", 400, "id"},
		{"job id zero", "GET", "/api/v1/jobs/0", "", 400, "id"},
		{"job id negative", "DELETE", "/api/v1/jobs/-3", "", 400, "id"},
		{"job id overflows int64", "GET", "/api/v1/jobs/99999999999999999999", "", 400, "id"},
		{"job id with NUL", "GET", "/api/v1/jobs/1%00", "", 400, "id"},
		{"job that does not exist", "GET", "/api/v1/jobs/987654", "", 404, "987654"},
		{"update a job that does not exist", "PUT", "/api/v1/jobs/987654", validJob("", ""), 404, "987654"},
		{"enable a job that does not exist", "POST", "/api/v1/jobs/987654/enable", "", 404, "987654"},
		{"trigger a job that does not exist", "POST", "/api/v1/jobs/987654/trigger", "", 404, "987654"},
		{"next fires of a job that does not exist", "GET", "/api/v1/jobs/987654/next", "", 404, "987654"},
		{"run that does not exist", "GET", "/api/v1/runs/987654", "", 404, "987654"},
		{"run id not a number", "GET", "/api/v1/runs/1e3", "", 400, "id"},
		{"kill a run that does not exist", "POST", "/api/v1/runs/987654/kill", "", 404, "987654"},
		{"logs of a run that does not exist", "GET", "/api/v1/runs/987654/logs", "", 404, "987654"},
		// Routes and methods.
		{"unknown route", "GET", "/api/v1/nope", "", 404, "/api/v1/nope"},
		{"unknown version", "GET", "/api/v2/jobs", "", 404, "/api/v2/jobs"},
		{"method not allowed on a job", "PATCH", jobPath, `{}`, 405, "PATCH"},
		{"method not allowed on groups", "DELETE", "/api/v1/groups", "", 405, "DELETE"},
		{"GET on a POST-only route", "GET", jobPath + "/trigger", "", 405, "GET"},
		// Passwords (issue 26, finding 9).
		{"current_password without a new password", "PATCH", "/api/v1/users/nobody", `{"current_password":"guess guess guess"}`, 400, "current_password"},
		{"current_password for another user", "PATCH", "/api/v1/users/nobody", `{"password":"a long new password","current_password":"x"}`, 400, "current_password"},
		{"language the console does not have", "PATCH", "/api/v1/users/nobody", `{"language":"fr"}`, 400, "language"},
		// Child jobs (issue #26): every reference is checked where it is made.
		{"child id zero", "POST", "/api/v1/jobs", validJob("child_job_ids", `[0]`), 400, "child_job_ids"},
		{"child id negative", "POST", "/api/v1/jobs", validJob("child_job_ids", `[-3]`), 400, "child_job_ids"},
		{"child id as a string", "POST", "/api/v1/jobs", validJob("child_job_ids", fmt.Sprintf(`["%d"]`, job.ID)), 400, "child_job_ids"},
		{"child named twice", "POST", "/api/v1/jobs", validJob("child_job_ids", fmt.Sprintf("[%d,%d]", job.ID, job.ID)), 400, "child_job_ids"},
		{"more than 100 children", "POST", "/api/v1/jobs", validJob("child_job_ids", func() string {
			ids := make([]int64, 101)
			for i := range ids {
				ids[i] = int64(i + 1)
			}
			b, _ := json.Marshal(ids)
			return string(b)
		}()), 400, "at most 100"},
		{"a job as its own child", "PUT", jobPath, func() string {
			var m map[string]any
			_ = json.Unmarshal([]byte(validJob("name", `"first"`)), &m)
			m["child_job_ids"], m["version"] = []int64{job.ID}, job.Version
			b, _ := json.Marshal(m)
			return string(b)
		}(), 400, "cycle"},
		// Alarm webhooks to where only the scheduler's host reaches.
		{"alarm webhook to PostgreSQL on loopback", "POST", "/api/v1/jobs", validJob("alarm_webhook", `"http://127.0.0.1:5432/"`), 400, "egress policy"},
		{"alarm webhook to the metadata endpoint", "POST", "/api/v1/jobs", validJob("alarm_webhook", `"http://[::ffff:169.254.169.254]/latest/"`), 400, "egress policy"},
		// Issue #26, finding 14: handler names, id spellings, bidi
		// characters in names, semicolons in queries.
		{"handler with a space", "POST", "/api/v1/jobs", validJob("handler", `"my handler"`), 400, "handler"},
		{"handler with a slash", "POST", "/api/v1/jobs", validJob("handler", `"../shell"`), 400, "handler"},
		{"handler with a bidi override", "POST", "/api/v1/jobs", validJob("handler", `"shell\u202e"`), 400, "handler"},
		{"handler starting with a digit", "POST", "/api/v1/jobs", validJob("handler", `"1h"`), 400, "handler"},
		{"handler of 129 characters", "POST", "/api/v1/jobs", validJob("handler", `"h`+strings.Repeat("x", 128)+`"`), 400, "handler"},
		{"group command handler with a space", "POST", "/api/v1/groups", `{"name":"g5","command_handlers":["run it"]}`, 400, "command_handlers"},
		{"job id with a plus sign", "GET", "/api/v1/jobs/+1", "", 400, "id"},
		{"job id with a leading zero", "GET", "/api/v1/jobs/01", "", 400, "id"},
		{"run id with a plus sign", "POST", "/api/v1/runs/+1/kill", "", 400, "id"},
		{"runs job filter with a plus sign", "GET", "/api/v1/runs?job=%2B1", "", 400, "job"},
		{"jobs limit with a plus sign", "GET", "/api/v1/jobs?limit=%2B5", "", 400, "limit"},
		{"job runs limit with a plus sign", "GET", jobPath + "/runs?limit=%2B5", "", 400, "limit"},
		{"stats job with a leading zero", "GET", "/api/v1/stats?job=01", "", 400, "job"},
		{"job name with a right-to-left override", "POST", "/api/v1/jobs", validJob("name", `"backup\u202egnp.exe"`), 400, "name"},
		{"job name with a first-strong isolate", "POST", "/api/v1/jobs", validJob("name", `"a\u2068b"`), 400, "name"},
		{"job name with a right-to-left mark", "POST", "/api/v1/jobs", validJob("name", `"a\u200fb"`), 400, "name"},
		{"job name with an Arabic letter mark", "POST", "/api/v1/jobs", validJob("name", `"a\u061cb"`), 400, "name"},
		{"job name with a newline", "POST", "/api/v1/jobs", validJob("name", `"a\nb"`), 400, "name"},
		{"group title with a bidi embedding", "POST", "/api/v1/groups", `{"name":"g6","title":"a\u202ab"}`, 400, "title"},
		{"user display name with a bidi isolate", "POST", "/api/v1/users", `{"name":"u6","display_name":"a\u2066b"}`, 400, "display_name"},
		{"key name with a bidi override", "POST", "/api/v1/keys", `{"user":"nobody","name":"ci\u202d"}`, 400, "name"},
		{"semicolon in a query", "GET", "/api/v1/runs?job=987654;group=g", "", 400, "semicolon"},
		{"semicolon in a job listing", "GET", "/api/v1/jobs?group=g;x", "", 400, "semicolon"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("case %q twice", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			code, body, h := do(c.method, c.path, c.body)
			if code != c.code {
				t.Errorf("%s %s: HTTP %d, want %d; body %.300s", c.method, c.path, code, c.code, body)
			}
			if code >= 500 || strings.Contains(body, "goroutine ") || strings.Contains(body, ".go:") {
				t.Errorf("%s %s: a server error or stack trace: %.300s", c.method, c.path, body)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var e apiv1.Error
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
				t.Fatalf("answer is not a JSON error message (%v): %.300s", err, body)
			}
			t.Logf("%d %s", code, e.Error)
			if !strings.Contains(e.Error, c.names) {
				t.Errorf("message %q does not name %q", e.Error, c.names)
			}
		})
	}
	if len(cases) < 40 {
		t.Errorf("only %d cases", len(cases))
	}

	// Nothing hostile was stored: the one job and group are as created.
	code, body, _ = do("GET", "/api/v1/jobs?limit=1000", "")
	var jobs apiv1.JobList
	if err := json.Unmarshal([]byte(body), &jobs); code != 200 || err != nil || len(jobs.Jobs) != 1 || jobs.Jobs[0].Name != "first" {
		t.Errorf("jobs after the hostile requests: %d %.500s", code, body)
	}
	code, body, _ = do("GET", "/api/v1/groups", "")
	if code != 200 || !bytes.Contains([]byte(body), []byte(`"g"`)) || strings.Contains(body, `"g2"`) || strings.Contains(body, `"g3"`) {
		t.Errorf("groups after the hostile requests: %d %.500s", code, body)
	}
}

func fixRate(expr string) string {
	b, _ := json.Marshal(map[string]any{"group": "g", "name": "rate", "handler": "h", "schedule_type": "fix_rate", "schedule_expr": expr})
	return string(b)
}

func once(expr string) string {
	b, _ := json.Marshal(map[string]any{"group": "g", "name": "once", "handler": "h", "schedule_type": "once", "schedule_expr": expr})
	return string(b)
}
