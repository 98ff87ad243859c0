package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/store"
)

func TestJobsListEmptyAndFull(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	v := e.browser().login("viewer")

	// Empty: an operator is invited to create one, a viewer is not.
	p := op.open("/jobs")
	mustContain(t, p, `id="no-jobs"`, "No jobs yet — ", `href="/jobs/new"`, `id="new-job"`)
	p = v.get("/jobs")
	mustContain(t, p, `id="no-jobs"`, "No jobs yet in the groups you may read.")
	mustLack(t, p, `id="new-job"`, "create one")

	// Full: the row with its link, group, handler, schedule and state.
	ja := e.job("a", "echo")
	jb := e.job("b", "report")
	p = op.get("/jobs")
	mustContain(t, p, `id="jobs-table"`, fmt.Sprintf(`id="job-%d"`, ja.ID), fmt.Sprintf(`<a class="trunc" href="/jobs/%d" title="%s">%s</a>`, ja.ID, ja.Name, ja.Name),
		`title="echo">echo</div>`, `<span class="badge st-ok">enabled</span>`,
		fmt.Sprintf(`id="disable-%d"`, ja.ID), fmt.Sprintf(`id="trigger-%d"`, ja.ID))
	mustLack(t, p, `id="no-jobs"`, jb.Name)

	// A viewer sees the job, no row actions and no New button.
	p = v.get("/jobs")
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, ja.ID))
	mustLack(t, p, `id="new-job"`, fmt.Sprintf(`id="disable-%d"`, ja.ID), fmt.Sprintf(`id="trigger-%d"`, ja.ID))

	// A viewer of b sees none of a's jobs, not even by asking for group a.
	vb := e.browser().login("viewerB")
	p = vb.get("/jobs")
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, jb.ID))
	mustLack(t, p, ja.Name, fmt.Sprintf(`id="job-%d"`, ja.ID))
	p = vb.get("/jobs?group=a")
	if p.Code != http.StatusForbidden {
		t.Fatalf("viewerB asking for group a: %d, want 403\n%s", p.Code, p.Body)
	}
	mustLack(t, p, ja.Name)
	// Another group's job is, to its non-readers, no job at all.
	p = vb.get(fmt.Sprintf("/jobs/%d", ja.ID))
	if p.Code != http.StatusNotFound {
		t.Fatalf("viewerB opening a's job: %d, want 404", p.Code)
	}
	mustLack(t, p, ja.Name)
}

func TestJobsListFiltersAndPages(t *testing.T) {
	e := newEnv(t)
	admin := e.browser().login("admin")
	var a []store.Job
	for range 52 {
		a = append(a, e.job("a", "echo"))
	}
	jb := e.job("b", "report")

	// The group filter is in the URL, and keeps its choice in the form.
	p := admin.get("/jobs?group=b")
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, jb.ID), `<option selected>b</option>`, `id="filter-clear"`)
	mustLack(t, p, fmt.Sprintf(`id="job-%d"`, a[0].ID), `id="jobs-next"`)

	// 52 jobs of a: a first page of 50 whose Next link keeps the filter.
	p = admin.get("/jobs?group=a")
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, a[0].ID), fmt.Sprintf(`id="job-%d"`, a[49].ID), `id="jobs-next"`)
	mustLack(t, p, fmt.Sprintf(`id="job-%d"`, a[50].ID), `id="jobs-first"`, `id="jobs-prev"`)
	mustContain(t, p, `id="jobs-range" class="muted">1–50 of 52<`)
	next := href(t, p, "jobs-next")
	if !strings.Contains(next, "group=a") {
		t.Fatalf("next link %q lost the group filter", next)
	}
	p = admin.get(next)
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, a[50].ID), fmt.Sprintf(`id="job-%d"`, a[51].ID), `id="jobs-first"`)
	mustLack(t, p, fmt.Sprintf(`id="job-%d"`, a[49].ID), `id="jobs-next"`, jb.Name)
	if first := href(t, p, "jobs-first"); first != "/jobs?group=a" {
		t.Fatalf("first link %q, want /jobs?group=a", first)
	}
	mustContain(t, p, `id="jobs-range" class="muted">51–52 of 52<`)
	if prev := href(t, p, "jobs-prev"); prev != "/jobs?group=a" {
		t.Fatalf("previous link %q, want the first page /jobs?group=a", prev)
	}

	// Nothing matches: the empty state says it is the filter.
	p = admin.get("/jobs?group=nosuchgroup")
	mustContain(t, p, `id="no-jobs"`, "No job matches these filters.")

	// A malformed filter is the API's 400, shown above the list's form.
	p = admin.get("/jobs?group=bad%20name")
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad group filter: %d, want 400\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="page-error"`, "not a valid group name", `id="jobs-filter"`)
}

// href is the (unescaped) href of the element with id on the page.
func href(t *testing.T, p page, id string) string {
	t.Helper()
	i := strings.Index(p.Body, `id="`+id+`" href="`)
	if i < 0 {
		t.Fatalf("no link #%s on the page:\n%s", id, p.Body)
	}
	rest := p.Body[i+len(`id="`+id+`" href="`):]
	return strings.ReplaceAll(rest[:strings.IndexByte(rest, '"')], "&amp;", "&")
}

func TestJobPageShowsEverything(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	child := e.job("a", "echo")
	j, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: "nightly-report", Handler: "report",
		ScheduleType: "cron", ScheduleExpr: "0 30 2 * * *", Timezone: "Asia/Tokyo", MisfirePolicy: "skip",
		RouteStrategy: "any", BlockStrategy: "serial", Enabled: true, ChildJobIDs: []int64{child.ID}})
	if err != nil {
		t.Fatal(err)
	}
	admin := e.browser().login("admin")
	path := fmt.Sprintf("/jobs/%d", j.ID)
	p := admin.open(path)
	// Next fires in the job's zone and in UTC: 02:30 in Tokyo is 17:30 UTC.
	mustContain(t, p, `id="job-title"`, "nightly-report", `id="preview-table"`, "<th>In Asia/Tokyo</th>",
		"02:30:00 JST</td>", "17:30:00</td>", `id="no-runs"`, `id="job-edit"`, `id="job-trigger"`, `id="job-delete"`,
		`<dt>Time zone</dt><dd>Asia/Tokyo</dd>`, `<dt>Misfire policy</dt><dd>skip</dd>`,
		fmt.Sprintf(`<a href="/jobs/%d">%s (#%d)</a>`, child.ID, child.Name, child.ID))

	// Runs: the table and the sparkline, oldest left, newest right, each
	// bar a link to its run with a tooltip.
	ids := e.finishedRuns(j, "SUCCEEDED", "FAILED", "SUCCEEDED", "RUNNING")
	p = admin.get(path)
	mustContain(t, p, `id="run-sparkline"`, `id="runs-table"`, fmt.Sprintf(`id="run-%d"`, ids[1]))
	mustLack(t, p, `id="no-runs"`)
	spark := between(t, p.Body, `id="run-sparkline"`, "</svg>")
	var at []int
	for _, id := range ids {
		i := strings.Index(spark, fmt.Sprintf(`<a href="/runs/%d" data-run="%d">`, id, id))
		if i < 0 {
			t.Fatalf("sparkline lacks run %d:\n%s", id, spark)
		}
		at = append(at, i)
	}
	if !(at[0] < at[1] && at[1] < at[2] && at[2] < at[3]) {
		t.Fatalf("sparkline bars not oldest-left: positions %v\n%s", at, spark)
	}
	mustContain(t, page{Body: spark}, `class="st-bad"`, `class="st-ok"`, `class="st-run"`,
		fmt.Sprintf("<title>run %d · FAILED · ", ids[1]))

	// History: an edit shows which fields changed, from what to what.
	j.ScheduleExpr = "0 0 3 * * *"
	if _, err := e.st.UpdateJob(ctx, store.System, j); err != nil {
		t.Fatal(err)
	}
	p = admin.get(path)
	hist := between(t, p.Body, `id="job-history"`, "</section>")
	mustContain(t, page{Body: hist}, "job.update", "job.create", "<strong>schedule_expr</strong>: <code>0 30 2 * * *</code> → <code>0 0 3 * * *</code>")
	mustContain(t, p, `id="job-audit"`, "03:00:00 JST</td>")
	// The audit adds what is not a revision, and not the revisions again.
	if p := admin.post(path+"/trigger", nil); p.Code != http.StatusSeeOther {
		t.Fatalf("trigger: %d\n%s", p.Code, p.Body)
	}
	<-e.fired
	// A disable's revision says why.
	admin.post(path+"/disable", url.Values{"note": {"vendor outage"}})
	p = admin.get(path)
	hist = between(t, p.Body, `id="job-history"`, "</section>")
	mustContain(t, page{Body: hist}, "job.disable", "<strong>paused_note</strong>: <code>—</code> → <code>vendor outage</code>")
	audit := between(t, p.Body, `id="job-audit"`, "</section>")
	mustContain(t, page{Body: audit}, "job.trigger")
	mustLack(t, page{Body: audit}, "job.update", "job.create", "job.disable")

	// A viewer: the same job, no actions, and no audit log.
	p = e.browser().login("viewer").get(path)
	mustContain(t, p, "nightly-report", `id="run-sparkline"`, `id="job-history"`, `id="audit-admins-only"`)
	mustLack(t, p, `id="job-actions"`, `id="job-edit"`, `id="job-trigger"`, `id="job-delete"`, `id="job-disable"`, `id="job-audit"`)

	// A job in UTC lists its next fires once, not in two equal columns.
	u, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: "utc-report", Handler: "report",
		ScheduleType: "cron", ScheduleExpr: "0 30 2 * * *", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	preview := between(t, admin.open(fmt.Sprintf("/jobs/%d", u.ID)).Body, `id="preview-table"`, "</table>")
	if strings.Count(preview, "<th>") != 1 || !strings.Contains(preview, "<th>UTC</th>") || !strings.Contains(preview, "02:30:00</td>") {
		t.Fatalf("a UTC job's next fires:\n%s", preview)
	}

	// Unknown and malformed ids.
	if p := admin.get("/jobs/999999"); p.Code != http.StatusNotFound {
		t.Fatalf("unknown job: %d, want 404", p.Code)
	}
	if p := admin.get("/jobs/abc"); p.Code != http.StatusNotFound {
		t.Fatalf("malformed job id: %d, want 404", p.Code)
	}
}

// between is the part of s from the first from to the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", from, s)
	}
	s = s[i:]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// jobForm is a complete, valid form for a new job of group a.
// jobForm is a complete job form for group a, every field filled in;
// set are field, value pairs that replace its values.
func jobForm(name string, set ...string) url.Values {
	form := url.Values{"group": {"a"}, "name": {name}, "description": {"nightly <b>report</b>"}, "handler": {"echo"},
		"params": {"--full\n--verbose"}, "schedule_type": {"cron"}, "schedule_expr": {"0 */5 * * * *"},
		"timezone": {"Europe/Berlin"}, "misfire_policy": {"fire_once"}, "route_strategy": {"round"},
		"block_strategy": {"discard_later"}, "timeout": {"10m"}, "enabled": {"on"}, "max_retries": {"3"},
		"retry_backoff": {"fixed"}, "retry_initial": {"5s"}, "retry_max": {"1m"}, "child_job_ids": {""},
		"alarm_webhook": {"https://hooks.example.com/x"}, "alarm_emails": {"ops@example.com, dev@example.com"}}
	if len(set)%2 != 0 {
		panic("jobForm: set takes field, value pairs")
	}
	for i := 0; i < len(set); i += 2 {
		form.Set(set[i], set[i+1])
	}
	return form
}

func TestJobFormCreates(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")

	// The empty form offers only the groups the user operates.
	p := op.open("/jobs/new")
	mustContain(t, p, `id="job-form"`, `id="f-name"`, `id="f-schedule_expr"`, `id="f-timezone"`, `id="f-params"`,
		`id="f-child_job_ids"`, `id="f-alarm_emails"`, `<label for="f-retry_max">`, `<option selected>a</option>`)
	mustLack(t, p, `<option>b</option>`, `<option selected>b</option>`, `id="f-version"`)

	// A bad cron comes back under the schedule expression, everything
	// typed kept.
	form := jobForm("nightly", "schedule_expr", "every tuesday")
	p = op.post("/jobs", form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad cron: %d, want 400\n%s", p.Code, p.Body)
	}
	errText := between(t, p.Body, `id="err-schedule_expr"`, "</p>")
	mustContain(t, page{Body: errText}, "invalid cron expression")
	mustContain(t, p, `value="nightly"`, `value="every tuesday"`, `value="Europe/Berlin"`, "--full\n--verbose</textarea>",
		`value="nightly &lt;b&gt;report&lt;/b&gt;"`, `<option selected>round</option>`, `value="ops@example.com, dev@example.com"`)
	mustLack(t, p, `id="err-timezone"`, `id="err-params"`)

	// An unknown zone under the zone, params too large under params, a
	// bad number under its field: all at once.
	form = jobForm("nightly", "timezone", "Mars/Olympus", "params", strings.Repeat("x", 65*1024))
	p = op.post("/jobs", form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad zone and params: %d, want 400\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="err-timezone"`, `unknown time zone &#34;Mars/Olympus&#34;`, `id="err-params"`, "more than the limit")
	mustLack(t, p, `id="err-schedule_expr"`)
	form = jobForm("nightly", "max_retries", "three")
	p = op.post("/jobs", form)
	mustContain(t, p, `id="err-max_retries"`, "is not a whole number", `value="three"`)
	if js, err := e.st.ListJobs(context.Background(), "", nil, 0, 10); err != nil || len(js) != 0 {
		t.Fatalf("refused forms stored jobs: %v %v", js, err)
	}

	// A good form lands on the new job's page with every field stored.
	p = op.post("/jobs", jobForm("nightly"))
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/jobs/") {
		t.Fatalf("create: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	js, err := e.st.ListJobs(context.Background(), "a", nil, 0, 10)
	if err != nil || len(js) != 1 {
		t.Fatalf("stored jobs: %v %v", js, err)
	}
	j := js[0]
	if j.Name != "nightly" || j.Params != "--full\n--verbose" || j.Timezone != "Europe/Berlin" || j.RouteStrategy != "round" ||
		j.BlockStrategy != "discard_later" || j.MaxRetries != 3 || j.RetryBackoff != "fixed" || j.Timeout.String() != "10m0s" ||
		len(j.AlarmEmails) != 2 || !j.Enabled {
		t.Fatalf("stored job differs from the form: %+v", j)
	}
	if p.Location != fmt.Sprintf("/jobs/%d?notice=job-created", j.ID) {
		t.Fatalf("create went to %q", p.Location)
	}
	mustContain(t, op.get(p.Location), "Job created.", `id="job-title"`)

	// The fields added with schedule operations and concurrency, kept as
	// typed and refused under their own fields.
	form = jobForm("parallel", "block_strategy", "serial", "max_concurrency", "4", "jitter", "-1s",
		"end_at", "2020-01-01T00:00:00Z", "start_at", "2021-01-01T00:00:00Z")
	p = op.post("/jobs", form)
	mustContain(t, p, `id="err-max_concurrency"`, "only allowed with block_strategy concurrent", `id="err-jitter"`,
		`id="err-start_at"`, `value="2021-01-01T00:00:00Z"`, `value="-1s"`)
	form = jobForm("parallel", "block_strategy", "concurrent", "max_concurrency", "4", "misfire_threshold", "30s", "jitter", "5s")
	if p := op.post("/jobs", form); p.Code != http.StatusSeeOther {
		t.Fatalf("create with concurrency: %d\n%s", p.Code, p.Body)
	}
	if js, _ := e.st.ListJobs(context.Background(), "a", nil, 0, 10); len(js) != 2 || js[1].MaxConcurrency != 4 ||
		js[1].Jitter.String() != "5s" || js[1].MisfireThreshold.String() != "30s" {
		t.Fatalf("stored: %+v", js)
	}

	// The same name again: the API's conflict under the name.
	p = op.post("/jobs", jobForm("nightly"))
	if p.Code != http.StatusConflict {
		t.Fatalf("duplicate name: %d, want 409\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="err-name"`, "already exists")
}

func TestJobFormEditsAndConflicts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := e.browser().login("operator")
	p := op.post("/jobs", jobForm("nightly"))
	if p.Code != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Code, p.Body)
	}
	js, _ := e.st.ListJobs(ctx, "a", nil, 0, 10)
	j := js[0]
	path := fmt.Sprintf("/jobs/%d", j.ID)

	// The edit form carries the job's values and version.
	p = op.open(path + "/edit")
	mustContain(t, p, fmt.Sprintf(`id="f-version" value="%d"`, j.Version), `value="nightly"`, `value="10m"`,
		`value="Europe/Berlin"`, `id="f-enabled" name="enabled" value="on" checked`, fmt.Sprintf(`action="%s"`, path))

	// Someone else changes the job meanwhile; saving the form opened
	// before shows the conflict, their version, and what was typed.
	other := j
	other.ScheduleExpr = "0 0 * * * *"
	if _, err := e.st.UpdateJob(ctx, store.System, other); err != nil {
		t.Fatal(err)
	}
	form := jobForm("nightly-v2", "version", fmt.Sprint(j.Version))
	p = op.post(path, form)
	if p.Code != http.StatusConflict {
		t.Fatalf("stale save: %d, want 409\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="conflict"`, fmt.Sprintf("it is now at version %d", j.Version+1), `id="conflict-yours"`,
		"<td>Name</td><td class=\"wrap\"><code>nightly</code></td><td class=\"wrap\"><code>nightly-v2</code></td>",
		fmt.Sprintf(`id="f-version" value="%d"`, j.Version+1), `value="0 0 * * * *"`)
	if cur, _ := e.st.GetJob(ctx, j.ID); cur.Name != "nightly" || cur.ScheduleExpr != "0 0 * * * *" {
		t.Fatalf("stale save changed the job: %+v", cur)
	}

	// Saved against the current version it goes through, and unchecking
	// enabled disables the job.
	form.Set("version", fmt.Sprint(j.Version+1))
	form.Del("enabled")
	p = op.post(path, form)
	if p.Code != http.StatusSeeOther || p.Location != path+"?notice=job-saved" {
		t.Fatalf("save: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	if cur, _ := e.st.GetJob(ctx, j.ID); cur.Name != "nightly-v2" || cur.Enabled {
		t.Fatalf("save did not apply: %+v", cur)
	}

	// A bad cron on edit keeps the form's version and typed values.
	form.Set("version", fmt.Sprint(j.Version+2))
	form.Set("schedule_expr", "61 * * * *")
	p = op.post(path, form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad cron on edit: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="err-schedule_expr"`, `value="61 * * * *"`, fmt.Sprintf(`id="f-version" value="%d"`, j.Version+2))
}

func TestJobActions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := e.browser().login("operator")
	j := e.job("a", "echo")
	path := fmt.Sprintf("/jobs/%d", j.ID)

	// Disable from the list goes back to the list as it was.
	p := op.post(path+"/disable", url.Values{"back": {"/jobs?group=a"}})
	if p.Code != http.StatusSeeOther || p.Location != "/jobs?group=a&notice=job-disabled" {
		t.Fatalf("disable: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	if cur, _ := e.st.GetJob(ctx, j.ID); cur.Enabled {
		t.Fatal("disable left the job enabled")
	}
	mustContain(t, op.get(path), `id="job-enable"`, "disabled")
	op.post(path+"/enable", url.Values{"catch_up": {"none"}})
	// Disabled from the job page with a note, which the page then shows.
	p = op.post(path+"/disable", url.Values{"note": {"  waiting for the <db> migration "}})
	if p.Code != http.StatusSeeOther {
		t.Fatalf("disable with a note: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, op.get(path), `id="job-paused"`, "Disabled by operator", ": waiting for the &lt;db&gt; migration</p>")
	mustContain(t, op.get("/jobs?group=a"), `paused-note trunc narrow" title="waiting for the &lt;db&gt; migration">waiting for the &lt;db&gt; migration</div>`)
	// A bad catch-up choice is the API's 400, and changes nothing.
	if p := op.post(path+"/enable", url.Values{"catch_up": {"sometimes"}}); p.Code != http.StatusBadRequest {
		t.Fatalf("bad catch_up: %d, want 400\n%s", p.Code, p.Body)
	}
	// The list's row action returns to the list without its old notice.
	p = op.get("/jobs?group=a&notice=job-created")
	if back := between(t, p.Body, fmt.Sprintf(`id="enable-%d"`, j.ID), "</form>"); !strings.Contains(back, `name="back" value="/jobs?group=a"`) {
		t.Fatalf("row action's back field: %s", back)
	}
	// A "back" off this site is not followed.
	p = op.post(path+"/enable", url.Values{"back": {"//evil.example/x"}})
	if p.Code != http.StatusSeeOther || p.Location != path+"?notice=job-enabled" {
		t.Fatalf("enable with a foreign back: %d → %q", p.Code, p.Location)
	}
	if cur, _ := e.st.GetJob(ctx, j.ID); !cur.Enabled {
		t.Fatal("enable left the job disabled")
	}

	// Trigger with params opens the new run's page.
	p = op.post(path+"/trigger", url.Values{"params": {"--once"}})
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/runs/") {
		t.Fatalf("trigger: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	fired := <-e.fired
	if want := fmt.Sprintf("/runs/%d?notice=run-triggered", fired.RunID); p.Location != want {
		t.Fatalf("trigger went to %q, want %q", p.Location, want)
	}
	run, err := e.st.GetRun(ctx, fired.RunID)
	if err != nil || run.Params == nil || *run.Params != "--once" || run.JobID != j.ID {
		t.Fatalf("triggered run: %+v %v", run, err)
	}

	// Delete removes the job and returns to the list.
	p = op.post(path+"/delete", nil)
	if p.Code != http.StatusSeeOther || p.Location != "/jobs?notice=job-deleted" {
		t.Fatalf("delete: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	if _, err := e.st.GetJob(ctx, j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted job still there: %v", err)
	}
	if p := op.get(path); p.Code != http.StatusNotFound {
		t.Fatalf("deleted job's page: %d, want 404", p.Code)
	}
}

func TestViewerForgedJobPostsAreRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v := e.browser().login("viewer")
	j := e.job("a", "echo")
	path := fmt.Sprintf("/jobs/%d", j.ID)

	// The viewer has no form to open.
	if p := v.get("/jobs/new"); p.Code != http.StatusForbidden {
		t.Fatalf("viewer's new job form: %d, want 403", p.Code)
	}
	if p := v.get(path + "/edit"); p.Code != http.StatusForbidden || !strings.Contains(p.Body, "operator of group a") {
		t.Fatalf("viewer's edit form: %d, want 403 naming the permission\n%s", p.Code, p.Body)
	}
	form := jobForm("forged")
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{path + "/disable", nil}, {path + "/delete", nil}, {path + "/trigger", nil},
		{"/jobs", form}, {path, func() url.Values { f := jobForm("forged"); f.Set("version", fmt.Sprint(j.Version)); return f }()},
	} {
		p := v.post(tc.path, tc.form)
		if p.Code != http.StatusForbidden {
			t.Fatalf("viewer's forged POST %s: %d, want 403\n%s", tc.path, p.Code, p.Body)
		}
		mustContain(t, p, "operator of group a")
	}
	cur, err := e.st.GetJob(ctx, j.ID)
	if err != nil || !cur.Enabled || cur.Name != j.Name || cur.Version != j.Version {
		t.Fatalf("forged posts changed the job: %+v %v", cur, err)
	}
	if rs, _, err := e.st.ListRuns(ctx, j.ID, nil, nil, 10); err != nil || len(rs) != 0 {
		t.Fatalf("forged trigger made runs: %v %v", rs, err)
	}
	if js, _ := e.st.ListJobs(ctx, "", nil, 0, 10); len(js) != 1 {
		t.Fatalf("forged create stored a job: %v", js)
	}

	// A cross-site form is refused before it reaches the API, even from
	// an operator.
	op := e.browser().login("operator")
	op.site = "cross-site"
	if p := op.post(path+"/delete", nil); p.Code != http.StatusForbidden {
		t.Fatalf("cross-site delete: %d, want 403", p.Code)
	}
	if _, err := e.st.GetJob(ctx, j.ID); err != nil {
		t.Fatalf("cross-site delete removed the job: %v", err)
	}
}

func TestJobFormPreviewsTheSchedule(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")

	// A bad cron's re-rendered form previews the API's complaint; a good
	// schedule's form lists the next fires in its zone and in UTC.
	form := jobForm("daily", "schedule_expr", "0 0 25 * * *")
	p := op.post("/jobs", form)
	mustContain(t, p, `id="preview-error"`, "invalid cron expression")
	form.Set("schedule_expr", "0 0 9 * * *")
	form.Set("timezone", "America/New_York")
	form.Set("max_retries", "x") // refused by the form, so it shows again
	p = op.post("/jobs", form)
	mustContain(t, p, `id="preview-table"`, "<th>In America/New_York</th>", "09:00:00 E")
	preview := between(t, p.Body, `id="preview-table"`, "</table>")
	if n := strings.Count(preview, "<tr>"); n != 11 {
		t.Fatalf("preview has %d rows, want a header and 10 fires:\n%s", n, preview)
	}
	if !strings.Contains(preview, "13:00:00</td>") && !strings.Contains(preview, "14:00:00</td>") {
		t.Fatalf("preview lacks 09:00 New York in UTC (13:00 or 14:00):\n%s", preview)
	}

	// The edit form previews the job's own schedule on load (no script).
	p = op.post("/jobs", jobForm("every5"))
	if p.Code != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Code, p.Body)
	}
	p = op.get(strings.Split(p.Location, "?")[0] + "/edit")
	mustContain(t, p, `id="preview-table"`, "<th>In Europe/Berlin</th>")
	mustLack(t, p, `id="preview-error"`)
}

func TestJobsListSearchesAndSorts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.browser().login("admin")
	mk := func(name, desc, handler, typ, expr string, enabled bool) store.Job {
		j, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: name, Description: desc, Handler: handler,
			ScheduleType: typ, ScheduleExpr: expr, Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any",
			BlockStrategy: "serial", Enabled: enabled})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	billing := mk("billing-export", "nightly invoices", "http", "cron", "0 0 1 * * *", true)
	backup := mk("db-backup", "full dump", "shell", "fix_rate", "1h", false)
	report := mk("zz-report", "weekly Billing summary", "http", "none", "", true)
	row := func(j store.Job) string { return fmt.Sprintf(`id="job-%d"`, j.ID) }

	// Text search over name and description, in the URL and the form.
	p := admin.get("/jobs?q=billing")
	mustContain(t, p, row(billing), row(report), `id="filter-q" name="q" type="search" value="billing"`)
	mustLack(t, p, row(backup))
	// Handler, state and schedule type.
	p = admin.get("/jobs?handler=shell")
	mustContain(t, p, row(backup))
	mustLack(t, p, row(billing), row(report))
	p = admin.get("/jobs?enabled=false")
	mustContain(t, p, row(backup), `<option value="false" selected>disabled</option>`)
	mustLack(t, p, row(billing), row(report))
	p = admin.get("/jobs?schedule_type=none&handler=http")
	mustContain(t, p, row(report))
	mustLack(t, p, row(billing), row(backup))

	// Sorting by name, descending: the header links keep the filters and
	// flip the order of the column already sorted by.
	p = admin.get("/jobs?handler=http&sort=name&order=desc")
	if i, j := strings.Index(p.Body, row(report)), strings.Index(p.Body, row(billing)); i < 0 || j < 0 || i > j {
		t.Fatalf("name desc: zz-report (%d) should come before billing-export (%d)", i, j)
	}
	mustContain(t, p, `aria-sort="descending"><a id="sort-name"`, "Name ▼")
	if h := href(t, p, "sort-name"); h != "/jobs?handler=http&order=asc&sort=name" {
		t.Fatalf("name header link %q", h)
	}
	if h := href(t, p, "sort-id"); h != "/jobs?handler=http&order=asc&sort=id" {
		t.Fatalf("id header link %q", h)
	}
	// The search form keeps the sort.
	mustContain(t, p, `<input type="hidden" name="sort" value="name">`, `<input type="hidden" name="order" value="desc">`)

	// Keyset pages under a sort: 55 more jobs sorted by name, the second
	// page continues where the first ended, with the sort kept.
	for i := range 55 {
		mk(fmt.Sprintf("bulk-%02d", i), "", "echo", "none", "", true)
	}
	p = admin.get("/jobs?handler=echo&sort=name")
	mustContain(t, p, ">bulk-00<", ">bulk-49<")
	mustLack(t, p, ">bulk-50<")
	next := href(t, p, "jobs-next")
	if !strings.Contains(next, "cursor=") || !strings.Contains(next, "sort=name") || !strings.Contains(next, "handler=echo") {
		t.Fatalf("next link %q lost the cursor, sort or filter", next)
	}
	p = admin.get(next)
	mustContain(t, p, ">bulk-50<", ">bulk-54<", `id="jobs-first"`)
	mustLack(t, p, ">bulk-49<", `id="jobs-next"`)

	// A filter the API refuses: its words above the form, typed value kept.
	p = admin.get("/jobs?enabled=maybe&q=x")
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad enabled filter: %d, want 400\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="page-error"`, "enabled=&#34;maybe&#34;: want true or false", `value="x"`)
}

// The list and the job page show a disabled job no next fire, and a fire
// the planner planned ahead is not shown as the last one fired.
func TestJobsShowOnlyRealFires(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	j, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: "minutely", Handler: "echo",
		ScheduleType: "cron", ScheduleExpr: "0 * * * * *", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	// The planner has planned the next minute's fire (last_fire_at ahead of
	// now); the fire before it ran a minute ago.
	now := time.Now().UTC().Truncate(time.Second)
	ahead, fired := now.Add(30*time.Second), now.Add(-30*time.Second)
	if _, err := e.pool.Exec(ctx, `UPDATE jobs SET last_fire_at = $2, next_fire_at = $3 WHERE id = $1`,
		j.ID, ahead, ahead.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at)
		VALUES ($1, 'a', $2, 'schedule', 'SUCCEEDED', $3), ($1, 'a', $2, 'schedule', 'SCHEDULED', $4)`,
		j.ID, j.Shard, fired, ahead); err != nil {
		t.Fatal(err)
	}
	op := e.browser().login("operator")
	row := func() string {
		return between(t, op.open("/jobs?group=a").Body, fmt.Sprintf(`id="job-%d"`, j.ID), "</tr>")
	}
	r := row()
	if !strings.Contains(r, when(fired)) || strings.Contains(r, when(ahead)) {
		t.Fatalf("last fire: want %s (fired), not %s (planned):\n%s", when(fired), when(ahead), r)
	}
	mustContain(t, op.open(fmt.Sprintf("/jobs/%d", j.ID)), `id="preview-table"`)

	// Disabled, it shows no next fire on the list nor on its page.
	op.post(fmt.Sprintf("/jobs/%d/disable", j.ID), url.Values{"note": {"maintenance"}})
	r = row()
	if strings.Contains(r, when(ahead.Add(time.Minute))) || !strings.Contains(r, "<td>—</td>") {
		t.Fatalf("a disabled job's row shows a next fire:\n%s", r)
	}
	p := op.open(fmt.Sprintf("/jobs/%d", j.ID))
	mustContain(t, p, `id="next-fires-disabled"`)
	mustLack(t, p, `id="preview-table"`)
}

// when is a time as the console's tables show it.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }
