package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/apitest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

var (
	rowRE   = regexp.MustCompile(`id="run-row-(\d+)"`)
	olderRE = regexp.MustCompile(`<a href="([^"]*)" id="runs-older">`)
)

// rows are the run ids of a runs page, in page order.
func rows(t *testing.T, p page) []int64 {
	t.Helper()
	var ids []int64
	for _, m := range rowRE.FindAllStringSubmatch(p.Body, -1) {
		id, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// sameIDs fails the test unless got holds exactly want, in any order.
func sameIDs(t *testing.T, what string, got []int64, want ...int64) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("%s: runs %v, want %v", what, got, want)
	}
}

func TestRunsPageSearches(t *testing.T) {
	e := newEnv(t)
	admin := e.browser().login("admin")

	p := admin.open("/runs")
	mustContain(t, p, `id="runs-filter"`, `id="no-runs"`, "No runs yet")
	mustLack(t, p, `id="runs-table"`, `id="runs-older"`)

	ja, jb := e.job("a", "echo"), e.job("b", "echo")
	var runsA []int64
	for range 5 {
		runsA = append(runsA, e.run(ja))
	}
	runsB := []int64{e.run(jb), e.run(jb)}
	failed, running := runsA[1], runsA[3]
	e.setRun(failed, "status = 'FAILED', started_at = scheduled_at, finished_at = scheduled_at + interval '3 s', worker_id = 'wa-1', message = 'exit 3: no space left'")
	e.setRun(running, "status = 'RUNNING', started_at = scheduled_at, worker_id = 'wa-2'")

	p = admin.get("/runs")
	sameIDs(t, "all runs", rows(t, p), append(slices.Clone(runsA), runsB...)...)
	mustContain(t, p, `id="runs-table"`, `<a href="/runs/`+itoa(failed)+`">`, `<a href="/jobs/`+itoa(ja.ID)+`">`+ja.Name+`</a>`,
		`<tr id="run-row-`+itoa(failed)+`" data-status="FAILED">`, "3s", "wa-1",
		// A failed run's message is on its row, whole on hover.
		`<td class="msg"><div class="trunc" title="exit 3: no space left">exit 3: no space left</div></td>`)

	// Status (several), group, job and trigger type filters; each keeps
	// its state in the form.
	p = admin.get("/runs?status=FAILED&status=RUNNING")
	sameIDs(t, "failed or running", rows(t, p), failed, running)
	mustContain(t, p, `id="filter-status-FAILED" name="status" value="FAILED" checked`, `id="filter-status-RUNNING" name="status" value="RUNNING" checked`)
	mustLack(t, p, `value="SUCCEEDED" checked`)
	sameIDs(t, "group b", rows(t, admin.get("/runs?group=b")), runsB...)
	sameIDs(t, "job of b", rows(t, admin.get("/runs?job="+itoa(jb.ID))), runsB...)
	sameIDs(t, "running in a", rows(t, admin.get("/runs?group=a&status=RUNNING")), running)
	sameIDs(t, "manual", rows(t, admin.get("/runs?trigger_type=manual")), append(slices.Clone(runsA), runsB...)...)
	p = admin.get("/runs?trigger_type=retry")
	mustContain(t, p, `id="no-runs"`, "No run you may read matches these filters.", `<option value="retry" selected>`)

	// The form's datetime-local times are UTC: a window in the future is
	// empty, one around now holds every run.
	soon := time.Now().UTC().Add(time.Hour)
	p = admin.get("/runs?from=" + soon.Format("2006-01-02T15:04"))
	mustContain(t, p, `id="no-runs"`)
	mustContain(t, p, `value="`+soon.Format("2006-01-02T15:04")+`"`)
	p = admin.get("/runs?from=" + soon.Add(-2*time.Hour).Format("2006-01-02T15:04") + "&to=" + soon.Format("2006-01-02T15:04:05"))
	if len(rows(t, p)) != 7 {
		t.Fatalf("runs in the last hour: %v\n%s", rows(t, p), p.Body)
	}
	// An RFC 3339 time (a link from a script) works too, and the form
	// shows it in its own UTC format.
	p = admin.get("/runs?to=" + url.QueryEscape(soon.In(time.FixedZone("X", 3600)).Format(time.RFC3339)))
	if len(rows(t, p)) != 7 {
		t.Fatalf("runs before an RFC 3339 time: %v\n%s", rows(t, p), p.Body)
	}
	mustContain(t, p, `id="filter-to" name="to" type="datetime-local" step="1" value="`+soon.Format("2006-01-02T15:04:05")+`"`)

	// Keyset paging: the Older links walk every run once, newest first.
	var seen []int64
	next := "/runs?group=a&limit=2"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatalf("paging does not end: %v", seen)
		}
		p = admin.get(next)
		ids := rows(t, p)
		if len(ids) == 0 || len(ids) > 2 {
			t.Fatalf("page %d of 2: %v\n%s", pages, ids, p.Body)
		}
		if pages > 0 {
			mustContain(t, p, `id="runs-newest"`, `href="/runs?group=a&amp;limit=2"`)
		}
		seen = append(seen, ids...)
		next = ""
		if m := olderRE.FindStringSubmatch(p.Body); m != nil {
			next = html.UnescapeString(m[1])
		}
	}
	want := slices.Clone(runsA)
	slices.Reverse(want)
	if !slices.Equal(seen, want) {
		t.Fatalf("paged through %v, want %v newest first, each once", seen, want)
	}

	// A deleted job's runs stay listed, by the job's id.
	if err := e.st.DeleteJob(context.Background(), store.System, jb.ID); err != nil {
		t.Fatal(err)
	}
	p = admin.get("/runs?group=b")
	sameIDs(t, "runs of a deleted job", rows(t, p), runsB...)
	mustContain(t, p, `<a href="/jobs/`+itoa(jb.ID)+`">#`+itoa(jb.ID)+`</a>`)
}

func TestRunsPageErrorsAndPermissions(t *testing.T) {
	e := newEnv(t)
	ja, jb := e.job("a", "echo"), e.job("b", "echo")
	ra, rb := e.run(ja), e.run(jb)
	admin := e.browser().login("admin")

	// A filter the API refuses: its words above the form, the form kept.
	p := admin.expect("/runs?from=yesterday&status=FAILED", http.StatusBadRequest)
	mustContain(t, p, `id="page-error"`, "want an RFC 3339 time", `id="runs-filter"`, `value="yesterday"`,
		`value="FAILED" checked`)
	mustLack(t, p, `id="runs-table"`, `id="no-runs"`)
	p = admin.get("/runs?status=BOGUS")
	if p.Code != http.StatusBadRequest {
		t.Fatalf("unknown status: %d, want 400", p.Code)
	}
	mustContain(t, p, "unknown run status", "BOGUS")
	// The job filter takes a name too: a name no job has is said so, and
	// one that jobs of two groups share asks for the group.
	p = admin.expect("/runs?job=abc", http.StatusBadRequest)
	mustContain(t, p, `id="page-error"`, "job &#34;abc&#34;: no job of that name you may read", `value="abc"`)
	sameIDs(t, "job by name", rows(t, admin.open("/runs?job="+url.QueryEscape(jb.Name))), rb)
	apitest.Job(t, e.st, "b", ja.Name, "echo")
	p = admin.expect("/runs?job="+url.QueryEscape(ja.Name), http.StatusBadRequest)
	mustContain(t, p, "jobs of groups a, b have that name")
	sameIDs(t, "job by name in a group", rows(t, admin.open("/runs?group=a&job="+url.QueryEscape(ja.Name))), ra)

	// A viewer of b sees b's runs only, and a's run pages are not found,
	// as in the API.
	vb := e.browser().login("viewerB")
	sameIDs(t, "viewerB", rows(t, vb.get("/runs")), rb)
	// Filtering on a group they may not read is the API's 403, shown
	// above the form like any refused filter.
	p = vb.get("/runs?group=a")
	if p.Code != http.StatusForbidden {
		t.Fatalf("viewerB searching group a: %d, want 403\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="page-error"`, "viewer of group a", `id="runs-filter"`, `id="filter-group" name="group" list="filter-group-list" size="12" value="a"`)
	mustLack(t, p, `id="run-row-`)
	if p := vb.get("/runs/" + itoa(ra)); p.Code != http.StatusNotFound {
		t.Fatalf("viewerB opens a run of a: %d, want 404", p.Code)
	}
	if p := vb.get("/runs/" + itoa(rb)); p.Code != http.StatusOK {
		t.Fatalf("viewerB opens a run of b: %d\n%s", p.Code, p.Body)
	}

	// Not signed in: to the login page, and back to the run after.
	anon := e.browser()
	if p := anon.get("/runs/" + itoa(ra)); p.Code != http.StatusSeeOther || p.Location != "/login?next=%2Fruns%2F"+itoa(ra) {
		t.Fatalf("anonymous run page: %d → %q", p.Code, p.Location)
	}
	for _, bad := range []string{"/runs/0", "/runs/x", "/runs/99999999"} {
		if p := admin.get(bad); p.Code != http.StatusBadRequest && p.Code != http.StatusNotFound {
			t.Fatalf("%s: %d, want 400 or 404", bad, p.Code)
		}
	}
	p = admin.get("/runs/" + itoa(ra) + "?log_from=-1")
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad log_from: %d", p.Code)
	}
	mustContain(t, p, "want a log cursor")
}

func TestRunPageShowsTheRun(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	first := e.run(j)
	e.setRun(first, `status = 'FAILED', triggered_at = scheduled_at + interval '150 ms',
		started_at = scheduled_at + interval '400 ms', finished_at = scheduled_at + interval '2.4 s',
		worker_id = 'wa-1', message = 'exit status 3: <disk full>', params = '--date 2026-11-22'`)
	second := e.retry(first, "FAILED")
	e.setRun(second, "alarm_status = 'failed', alarm_error = 'webhook answered 500'")
	third := e.retry(second, "RUNNING")
	e.logLines("a", j.ID, first, "info", "starting <report>", "wrote 3 rows")
	e.logLines("a", j.ID, first, "error", "disk full")

	v := e.browser().login("viewer")
	p := v.open("/runs/" + itoa(first))
	mustContain(t, p, `id="run-status" class="badge st-bad">FAILED<`, `data-active="false"`,
		`id="step-triggered" class="done"`, "+150 ms <span class=\"muted\">fire lag</span>",
		"+250 ms <span class=\"muted\">start lag</span>", "+2s <span class=\"muted\">run time</span>",
		`id="run-worker"><a href="/runs?worker=wa-1">wa-1</a>`,
		`id="run-message">exit status 3: &lt;disk full&gt;<`, `id="run-params">--date 2026-11-22<`,
		`<a href="/jobs/`+itoa(j.ID)+`" id="run-job">`+j.Name+`</a>`,
		// The chain: this run, then its retries in order.
		`id="attempt-`+itoa(first)+`" aria-current="page"`, `<a href="/runs/`+itoa(second)+`">run `+itoa(second)+`</a> attempt 2`,
		`<a href="/runs/`+itoa(third)+`">run `+itoa(third)+`</a> attempt 3`,
		// Attempts count from 1; a run of no broadcast has no shard.
		`attempt 1 <span class="badge st-bad">FAILED</span> <span class="muted">(this run)`, `id="run-shard">—<`,
		// The log so far, escaped; an ended run is not followed.
		`class="log-line lv-info"`, "INFO starting &lt;report&gt;", "INFO wrote 3 rows", `class="log-line lv-error"`, "ERROR disk full",
		`id="log-state" role="status">ended<`)
	mustLack(t, p, "data-follow", `id="kill-form"`, `id="rerun-form"`, `id="log-empty"`)
	if i, k := indexOf(p, "attempt-"+itoa(second)), indexOf(p, "attempt-"+itoa(third)); i > k {
		t.Fatalf("attempts out of order")
	}

	// The middle attempt links both ways and shows its failed alarm.
	p = v.get("/runs/" + itoa(second))
	mustContain(t, p, `<a href="/runs/`+itoa(first)+`">run `+itoa(first)+`</a> attempt 1`, `id="attempt-`+itoa(second)+`" aria-current="page"`,
		`<a href="/runs/`+itoa(third)+`">`, "failed <span class=\"error\">webhook answered 500</span>", `id="log-empty"`, "No log lines.")

	// The active last attempt: followed live from where the page stopped
	// (nothing logged: from 0), no kill button for a viewer; it counts its
	// running time; given no params, it shows its job's.
	e.setRun(third, "started_at = now() - interval '2 h'")
	if _, err := e.pool.Exec(context.Background(), "UPDATE jobs SET params = '--dry-run' WHERE id = $1", j.ID); err != nil {
		t.Fatal(err)
	}
	p = v.get("/runs/" + itoa(third))
	mustContain(t, p, `id="run-elapsed" data-since="`, `id="run-params">--dry-run<`, `id="run-params-source"`)
	if !regexp.MustCompile(`id="run-elapsed" data-since="[^"]+">2h 00m \d\ds</span>`).MatchString(p.Body) {
		t.Fatalf("a run started 2 h ago does not say so:\n%s", between(t, p.Body, `id="run-props"`, "</dl>"))
	}
	mustContain(t, p, `data-active="true"`, `id="run-status" class="badge st-run">RUNNING<`,
		`data-follow="/api/v1/runs/`+itoa(third)+`/logs?follow=true&amp;from=0"`, `data-summary="/runs/`+itoa(third)+`"`,
		`id="log-state" role="status">following<`, "No log lines yet.", `id="step-finished" class="pending"`)
	mustLack(t, p, `id="kill-form"`, `id="rerun-form"`)

	// A broadcast shard of a child job: its parent run and shard.
	child := e.run(e.job("a", "echo"))
	e.setRun(child, "trigger_type = 'parent', parent_run = $2, shard_index = 1, shard_total = 3, status = 'SKIPPED', finished_at = scheduled_at + interval '5 ms'", first)
	p = v.get("/runs/" + itoa(child))
	mustContain(t, p, `<a href="/runs/`+itoa(first)+`" id="run-parent">`, `id="run-shard">2/3 <span class="muted">(broadcast part)`,
		// Never triggered nor started: the gap to its end says from where.
		`id="step-started" class="pending"`, "+5 ms <span class=\"muted\">since scheduled</span>")

	// A deleted job's runs still open.
	if err := e.st.DeleteJob(context.Background(), store.System, j.ID); err != nil {
		t.Fatal(err)
	}
	p = v.get("/runs/" + itoa(first))
	mustContain(t, p, `<span id="run-job">#`+itoa(j.ID)+`</span> <span class="muted">(deleted)`, "ERROR disk full")
}

func TestRunPageFollowURLStreamsTheRest(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	id := e.run(j)
	e.setRun(id, "status = 'RUNNING', started_at = scheduled_at")
	e.logLines("a", j.ID, id, "info", "one", "two")
	v := e.browser().login("viewer")
	p := v.get("/runs/" + itoa(id))
	mustContain(t, p, "INFO one", "INFO two")
	m := regexp.MustCompile(`data-follow="([^"]*)"`).FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("active run without a follow URL:\n%s", p.Body)
	}
	// What the page's script reads: the lines after the page's, then the
	// end of the stream once the run has ended.
	e.logLines("a", j.ID, id, "warn", "three")
	e.setRun(id, "status = 'SUCCEEDED', finished_at = now()")
	s := v.get(html.UnescapeString(m[1]))
	if s.Code != http.StatusOK {
		t.Fatalf("follow stream: %d %s", s.Code, s.Body)
	}
	if !regexp.MustCompile(`^\{"cursor":\d+,"seq":1,"at":"[^"]+","level":"warn","msg":"three"\}\n$`).MatchString(s.Body) {
		t.Fatalf("follow stream from the page's cursor: %q, want only line three", s.Body)
	}
	// The summary the script swaps in now shows the end.
	p = v.get("/runs/" + itoa(id))
	mustContain(t, p, `data-active="false"`, `id="run-status" class="badge st-ok">SUCCEEDED<`, "WARN three")
	mustLack(t, p, "data-follow")
}

func TestRunKill(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	running, scheduled, ended := e.run(j), e.run(j), e.run(j)
	e.setRun(running, "status = 'RUNNING', started_at = scheduled_at, worker_id = 'wa-1'")
	e.setRun(ended, "status = 'SUCCEEDED', finished_at = now()")

	// A viewer sees no kill button, and a forged POST is the API's 403:
	// the scheduler is not asked to kill anything.
	v := e.browser().login("viewer")
	mustLack(t, v.get("/runs/"+itoa(running)), `id="kill-form"`)
	if p := v.post("/runs/"+itoa(running)+"/kill", nil); p.Code != http.StatusForbidden {
		t.Fatalf("viewer's forged kill: %d, want 403\n%s", p.Code, p.Body)
	}
	if p := e.browser().login("viewerB").post("/runs/"+itoa(running)+"/kill", nil); p.Code != http.StatusNotFound {
		t.Fatalf("viewerB's forged kill: %d, want 404", p.Code)
	}
	if k := e.killed(); len(k) != 0 {
		t.Fatalf("refused kills reached the scheduler: %v", k)
	}

	op := e.browser().login("operator")
	p := op.get("/runs/" + itoa(running))
	mustContain(t, p, `<form method="post" action="/runs/`+itoa(running)+`/kill" id="kill-form" data-confirm="Kill run `+itoa(running))
	p = op.post("/runs/"+itoa(running)+"/kill", nil)
	if p.Code != http.StatusSeeOther || p.Location != "/runs/"+itoa(running)+"?notice=kill-sent" {
		t.Fatalf("operator's kill: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	if k := e.killed(); !slices.Equal(k, []int64{running}) {
		t.Fatalf("kills sent: %v, want [%d]", k, running)
	}
	mustContain(t, op.get(p.Location), "Kill sent: the run ends CANCELLED", `data-active="true"`)

	// A run not yet triggered ends CANCELLED at once.
	p = op.post("/runs/"+itoa(scheduled)+"/kill", nil)
	if p.Code != http.StatusSeeOther {
		t.Fatalf("kill of a scheduled run: %d\n%s", p.Code, p.Body)
	}
	p = op.get(p.Location)
	mustContain(t, p, "cancelled before it started", `id="run-status" class="badge st-off">CANCELLED<`,
		`id="run-message">killed by operator<`) // who killed it
	mustLack(t, p, `id="kill-form"`, "data-follow")

	// An ended run: no button, and a late POST shows the API's 409 on the
	// run's page.
	mustLack(t, op.get("/runs/"+itoa(ended)), `id="kill-form"`)
	p = op.post("/runs/"+itoa(ended)+"/kill", nil)
	if p.Code != http.StatusConflict {
		t.Fatalf("kill of an ended run: %d, want 409\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="page-error"`, "Not killed:", "already ended", `id="run-status" class="badge st-ok">SUCCEEDED<`)
	if k := e.killed(); len(k) != 2 {
		t.Fatalf("kills sent: %v, want the running and the scheduled run", k)
	}
}

func TestRunRerun(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	id := e.run(j)
	e.setRun(id, "status = 'FAILED', finished_at = now(), params = '--day 2026-11-22'")

	v := e.browser().login("viewer")
	if p := v.post("/runs/"+itoa(id)+"/rerun", nil); p.Code != http.StatusForbidden {
		t.Fatalf("viewer's forged re-run: %d, want 403", p.Code)
	}
	select {
	case r := <-e.fired:
		t.Fatalf("a refused re-run fired run %d", r.RunID)
	default:
	}

	op := e.browser().login("operator")
	mustContain(t, op.get("/runs/"+itoa(id)), `id="rerun-form"`)
	p := op.post("/runs/"+itoa(id)+"/rerun", nil)
	if p.Code != http.StatusSeeOther {
		t.Fatalf("re-run: %d\n%s", p.Code, p.Body)
	}
	var fired runs.Planned
	select {
	case fired = <-e.fired: // the API fires before it answers
	default:
		t.Fatal("the re-run fired nothing")
	}
	if fired.Params != "--day 2026-11-22" || fired.JobID != j.ID {
		t.Fatalf("re-run fired %+v, want job %d with the run's params", fired, j.ID)
	}
	if want := "/runs/" + itoa(fired.RunID) + "?notice=run-rerun"; p.Location != want {
		t.Fatalf("re-run went to %q, want the new run %d", p.Location, fired.RunID)
	}
	mustContain(t, op.get(p.Location), "triggered again with the params of the run before", `id="run-params">--day 2026-11-22<`,
		`id="run-status" class="badge st-wait">SCHEDULED<`)
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// indexOf is where text first appears on the page (-1: nowhere).
func indexOf(p page, text string) int { return strings.Index(p.Body, text) }

// retry inserts the retry of run id as the results applier would (trigger
// type retry, the next attempt, retry_of id, a second after id finished)
// with status, and returns it.
func (e *env) retry(id int64, status string) int64 {
	e.t.Helper()
	var out int64
	err := e.pool.QueryRow(context.Background(), `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status,
			scheduled_at, attempt, retry_of, finished_at)
		SELECT job_id, group_name, shard, 'retry', $2, finished_at + interval '1 s', attempt + 1, id,
			CASE WHEN $2 IN ('FAILED', 'SUCCEEDED') THEN finished_at + interval '2 s' END
		FROM job_runs WHERE id = $1 RETURNING id`, id, status).Scan(&out)
	if err != nil {
		e.t.Fatalf("retry of run %d: %v", id, err)
	}
	return out
}

func TestRunPagePagesALongLog(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	id := e.run(j)
	e.setRun(id, "status = 'SUCCEEDED', finished_at = now()")
	msgs := make([]string, 1002)
	for i := range msgs {
		msgs[i] = "line " + strconv.Itoa(i+1) + "."
	}
	e.logLines("a", j.ID, id, "info", msgs...)

	v := e.browser().login("viewer")
	p := v.get("/runs/" + itoa(id))
	mustContain(t, p, "INFO line 1.\n", "INFO line 1000.\n", `id="log-more"`)
	mustLack(t, p, "line 1001.", "data-follow")
	m := regexp.MustCompile(`<a href="([^"]*)" id="log-more">`).FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatal("no link to the next lines")
	}
	p = v.get(html.UnescapeString(m[1]))
	mustContain(t, p, "INFO line 1001.\n", "INFO line 1002.\n", `<a href="/runs/`+itoa(id)+`#run-log">from the start</a>`)
	mustLack(t, p, "line 1000.", `id="log-more"`)
}

// The runs of a map/reduce fire link to the run that mapped: the root says
// it mapped, a part and the reduce run name it; a part is no broadcast
// part.
func TestRunPageShowsMapReduce(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	root := e.run(j)
	e.setRun(root, "status = 'SUCCEEDED', shard_fire = id, map_reduce = id")
	part := e.run(j)
	e.setRun(part, "trigger_type = 'map', shard_fire = $2, shard_index = 1, shard_total = 3, map_item = '\"b\"'", root)
	reduce := e.run(j)
	e.setRun(reduce, "trigger_type = 'reduce', parent_run = $2, map_reduce = $2", root)

	v := e.browser().login("viewer")
	p := v.get("/runs/" + itoa(root))
	mustContain(t, p, `id="run-map">this run mapped its items into parts<`)
	p = v.get("/runs/" + itoa(part))
	mustContain(t, p, `id="run-shard">2/3</dd>`, `<a href="/runs/`+itoa(root)+`" id="run-map-fire">run `+itoa(root)+`</a> <span class="muted">(a part of what it mapped)`)
	p = v.get("/runs/" + itoa(reduce))
	mustContain(t, p, `<a href="/runs/`+itoa(root)+`" id="run-map-fire">`, "(reduces the outputs of what it mapped)")
	p = v.get("/runs?job=" + itoa(j.ID))
	mustContain(t, p, `title="map/reduce part">2/3<`)
	p = v.get("/runs/" + itoa(e.run(j)))
	mustLack(t, p, `id="run-map"`)
}
