package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/worker"
)

// consolePassword is the browser tests' users' password.
const consolePassword = "browser-test-password"

// consoleUsers creates the admin "ada" and the viewer "vic" (of group g).
func consoleUsers(t *testing.T, sys *system) {
	t.Helper()
	ctx := context.Background()
	for _, u := range []apiv1.UserCreate{
		{Name: "ada", DisplayName: "Ada Admin", Password: consolePassword, Admin: true},
		{Name: "vic", Password: consolePassword, Grants: []apiv1.Grant{{Group: "g", Role: "viewer"}}},
	} {
		if _, err := sys.api.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
}

// startConsole starts a system with the browser tests' handlers and
// users (consoleHandlers, consoleUsers), the start most console tests
// share; opts configure the system as startSystem's do.
func startConsole(t *testing.T, opts ...func(*systemConfig)) *system {
	t.Helper()
	sys := startSystem(t, consoleHandlers, opts...)
	consoleUsers(t, sys)
	return sys
}

// signedInTab opens a browser tab on the system's console signed in as
// user, at path (see signIn).
func signedInTab(t *testing.T, sys *system, path, user string) *tab {
	t.Helper()
	b := newTab(t, sys.url)
	b.signIn(path, user)
	return b
}

// signIn logs the tab in through the login form, starting from path (which
// sends a signed-out browser to the login page and back).
func (b *tab) signIn(path, user string) {
	b.t.Helper()
	b.open(path)
	b.do("sign in as "+user,
		chromedp.WaitVisible(chromedp.ID("name")),
		chromedp.SendKeys(chromedp.ID("name"), user),
		chromedp.SendKeys(chromedp.ID("password"), consolePassword),
		chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.ID("user-name")),
	)
	// Live pages (console.js) pause for the browser: a page swapping its
	// content while a test finds a node and clicks it would lose the
	// click. TestConsoleLivePages turns them on again.
	evalIn[bool](b, `(() => { localStorage.setItem("jetjob-live", "paused"); return true; })()`)
}

func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	b := newTab(t, sys.url)

	b.signIn("/workers", "ada")
	if got := b.text("#user-name"); got != "Ada Admin" {
		t.Fatalf("user menu shows %q, want Ada Admin", got)
	}
	if got := b.text("#user-role"); got != "admin" {
		t.Fatalf("user menu role %q, want admin", got)
	}
	b.do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sign-in")))
	if loc := b.location(); !strings.Contains(loc, "/login") {
		t.Fatalf("after signing out the browser is at %s", loc)
	}
}

// consoleHandlers are the browser tests' handlers: "chatty" logs a line
// every 300 ms for 6 s, "forever" runs until killed, "broken" fails.
func consoleHandlers(w *worker.Worker) { consoleHandlersHeld(nil)(w) }

// consoleHandlersHeld is consoleHandlers with "chatty" held after its
// tenth line until held is closed (nil: not held), for a test that must
// read the run's page before the run ends, however slowly its browser
// starts on a loaded machine.
func consoleHandlersHeld(held <-chan struct{}) func(*worker.Worker) {
	return func(w *worker.Worker) { registerConsoleHandlers(w, held) }
}

func registerConsoleHandlers(w *worker.Worker, held <-chan struct{}) {
	w.Handle("chatty", func(ctx context.Context, j *worker.Job) error {
		for i := 1; i <= 20; i++ {
			j.Logger.Info(fmt.Sprintf("chatty line %d", i))
			if i == 10 && held != nil {
				select {
				case <-held:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
		return nil
	})
	w.Handle("forever", func(ctx context.Context, j *worker.Job) error {
		j.Logger.Info("waiting to be killed")
		<-ctx.Done()
		return ctx.Err()
	})
	w.Handle("broken", func(context.Context, *worker.Job) error { return errors.New("database unreachable") })
	w.Handle("noop", func(context.Context, *worker.Job) error { return nil })
}

// acceptConfirms makes the page's confirm() dialogs answer OK, as a user
// clicking through them would.
func (b *tab) acceptConfirms() {
	b.t.Helper()
	evalIn[bool](b, "(window.confirm = () => true, true)")
}

// A run's page follows its log while it runs: lines arrive without a
// reload, and the status turns SUCCEEDED when the run ends.
func TestConsoleRunLogFollowsLive(t *testing.T) {
	t.Parallel()
	// The run waits after its tenth line until the page was read once:
	// the browser may take longer to start than the run's 6 s.
	held := make(chan struct{})
	sys := startSystem(t, consoleHandlersHeld(held))
	consoleUsers(t, sys)
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "chatty", Handler: "chatty", ScheduleType: "none"})
	run := trigger(t, sys.api, job.ID, nil)
	b := signedInTab(t, sys, fmt.Sprintf("/runs/%d", run.ID), "ada")
	if loc := b.location(); !strings.HasSuffix(loc, fmt.Sprintf("/runs/%d", run.ID)) {
		t.Fatalf("after signing in the browser is at %s, want the run", loc)
	}
	first := b.text("#run-log")
	if strings.Contains(first, "chatty line 20") {
		t.Fatalf("the run ended before its page was read; log: %q", first)
	}
	// The marker is lost if the page reloads: lines must arrive live.
	evalIn[bool](b, "(window.__noReload = true, true)")
	close(held)
	b.waitText("#run-log", "chatty line 20", 60*time.Second)
	b.waitText("#run-status", "SUCCEEDED", 30*time.Second)
	if !evalIn[bool](b, "window.__noReload === true") {
		t.Fatal("the page reloaded: the log did not follow live")
	}
	if n := evalIn[int](b, `document.querySelectorAll("#run-log .log-line").length`); n != 20 {
		t.Errorf("%d log lines on the page, want 20 (none lost, none twice)", n)
	}
}

// An operator kills a running run from its page and sees it end CANCELLED.
func TestConsoleKillsARun(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	ctx := context.Background()
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "forever", Handler: "forever", ScheduleType: "none"})
	run := trigger(t, sys.api, job.ID, nil)
	waitStatus(t, sys.api, run.ID, "RUNNING", 30*time.Second)
	b := signedInTab(t, sys, fmt.Sprintf("/runs/%d", run.ID), "ada")
	b.waitText("#run-log", "waiting to be killed", 30*time.Second)
	b.acceptConfirms()
	b.do("kill the run", chromedp.Click(chromedp.ID("kill-submit")), chromedp.WaitVisible(chromedp.CSS(".flash")))
	b.waitText("#run-status", "CANCELLED", 60*time.Second)
	r, err := sys.api.GetRun(ctx, run.ID)
	if err != nil || r.Status != "CANCELLED" {
		t.Fatalf("run after the kill: %+v, %v", r, err)
	}
}

// The link in an alarm opens the failed run's page (after signing in).
func TestConsoleAlarmLinkOpensTheRun(t *testing.T) {
	t.Parallel()
	links := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a alarm.Notice
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			t.Errorf("alarm body: %v", err)
		}
		links <- a.ConsoleLink
	}))
	defer hook.Close()
	sys := startConsole(t, func(c *systemConfig) {
		c.Alarm = alarm.Config{ConsoleURL: "http://" + c.Listener.Addr().String()}
	}, allowEgress(hook.Listener.Addr().String()))
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "broken", Handler: "broken", ScheduleType: "none",
		AlarmWebhook: hook.URL})
	run := trigger(t, sys.api, job.ID, nil)
	var link string
	select {
	case link = <-links:
	case <-time.After(60 * time.Second):
		t.Fatal("no alarm within 60 s")
	}
	want := fmt.Sprintf("%s/runs/%d", sys.url, run.ID)
	if link != want {
		t.Fatalf("alarm link %q, want %q", link, want)
	}
	b := signedInTab(t, sys, strings.TrimPrefix(link, sys.url), "vic")
	if got := b.text("#run-status"); got != "FAILED" {
		t.Fatalf("the alarm's run page shows %q, want FAILED", got)
	}
	if msg := b.text("#run-message"); !strings.Contains(msg, "database unreachable") {
		t.Fatalf("run message %q", msg)
	}
	// A viewer sees the run but cannot kill or re-run it.
	if n := evalIn[int](b, `document.querySelectorAll("#kill-form, #rerun-form").length`); n != 0 {
		t.Fatalf("a viewer sees %d operator controls on the run page", n)
	}
}

// evalAsync evaluates a JavaScript expression that yields a promise and
// waits for its value.
func evalAsync[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// The job life cycle a newcomer goes through in the console: create a job
// through the form (a bad cron is shown under its field, the preview
// follows the typing), watch it fire and its runs appear, disable it; a
// viewer sees the job but no controls, and a forged POST is refused.
func TestConsoleJobLifeCycle(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	ctx := context.Background()
	b := signedInTab(t, sys, "/jobs/new", "ada")

	b.do("fill the job form with a bad cron",
		chromedp.WaitVisible(chromedp.ID("job-form")),
		chromedp.SetValue(chromedp.ID("f-group"), "g"),
		chromedp.SendKeys(chromedp.ID("f-name"), "every-two-seconds"),
		chromedp.SendKeys(chromedp.ID("f-handler"), "noop"),
		chromedp.SetValue(chromedp.ID("f-schedule_type"), "cron"),
		chromedp.Clear(chromedp.ID("f-schedule_expr")),
		chromedp.SendKeys(chromedp.ID("f-schedule_expr"), "*/2 * * * * * *"),
	)
	// The live preview answers the typing with the API's words.
	b.waitFor("the preview's error", `!!document.getElementById("preview-error")`, 30*time.Second)
	b.do("save the bad job", chromedp.Click(chromedp.ID("job-save")), chromedp.WaitVisible(chromedp.ID("err-schedule_expr")))
	if v := evalIn[string](b, `document.getElementById("f-name").value`); v != "every-two-seconds" {
		t.Fatalf("the refused form lost the name typed: %q", v)
	}
	if jobs, err := sys.api.ListJobs(ctx, client.ListJobsOptions{}); err != nil || len(jobs.Jobs) != 0 {
		t.Fatalf("a refused form created a job: %+v %v", jobs, err)
	}

	// Fixed, the preview lists the next ten fires, and the job is created.
	b.do("fix the cron", chromedp.Clear(chromedp.ID("f-schedule_expr")), chromedp.SendKeys(chromedp.ID("f-schedule_expr"), "*/2 * * * * *"))
	b.waitFor("ten previewed fires", `document.querySelectorAll("#preview-table tbody tr").length === 10`, 30*time.Second)
	b.do("create the job", chromedp.Click(chromedp.ID("job-save")), chromedp.WaitVisible(chromedp.ID("job-title")))
	loc := b.location()
	var id int64
	if _, err := fmt.Sscanf(loc[strings.LastIndex(loc, "/jobs/")+len("/jobs/"):], "%d", &id); err != nil {
		t.Fatalf("after creating, the browser is at %s, want the job's page", loc)
	}

	// It fires: once two runs have succeeded, its page (opened again, as a
	// user would) lists them.
	testwait.Eventually(t, 60*time.Second, "two SUCCEEDED runs of the job", func() bool {
		runs, err := sys.api.SearchRuns(ctx, client.SearchRunsOptions{JobID: id, Statuses: []string{"SUCCEEDED"}})
		return err == nil && len(runs.Runs) >= 2
	})
	path := fmt.Sprintf("/jobs/%d", id)
	b.open(path)
	if n := evalIn[int](b, `document.querySelectorAll("#runs-table tr[id^=run-]").length`); n < 2 ||
		!strings.Contains(b.text("#runs-table"), "SUCCEEDED") {
		t.Fatalf("the job's page lists %d runs, none SUCCEEDED: %q", n, b.text("#runs-table"))
	}
	if n := evalIn[int](b, `document.querySelectorAll("#run-sparkline a").length`); n < 2 {
		t.Fatalf("the sparkline shows %d runs", n)
	}
	if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
		consoleScreenshots(t, b, dir, id)
		b.open(path)
	}

	// Disable it with a note.
	b.acceptConfirms()
	b.do("disable the job", chromedp.SendKeys(chromedp.ID("disable-note"), "migrating the database"),
		chromedp.Click(chromedp.CSS("#job-disable button")), chromedp.WaitVisible(chromedp.ID("job-paused")))
	if note := b.text("#job-paused"); !strings.Contains(note, "migrating the database") || !strings.Contains(note, "ada") {
		t.Fatalf("pause note %q", note)
	}
	j, err := sys.api.GetJob(ctx, id)
	if err != nil || j.Enabled {
		t.Fatalf("job after disabling: %+v, %v", j, err)
	}

	// A viewer reads the job but has no controls; posting anyway is 403.
	v := newTab(t, sys.url)
	v.signIn(path, "vic")
	if got := v.text("#job-title"); !strings.Contains(got, "every-two-seconds") {
		t.Fatalf("viewer's job page title %q", got)
	}
	if n := evalIn[int](v, `document.querySelectorAll("#job-actions, #job-edit, #job-enable, #job-disable, #job-delete, #job-trigger").length`); n != 0 {
		t.Fatalf("a viewer sees %d job controls", n)
	}
	status := evalAsync[int](v, fmt.Sprintf(`fetch("/jobs/%d/enable", {method: "POST", body: new URLSearchParams({catch_up: "none"})}).then(r => r.status)`, id))
	if status != http.StatusForbidden {
		t.Fatalf("a viewer's forged enable answered %d, want 403", status)
	}
	if j, err := sys.api.GetJob(ctx, id); err != nil || j.Enabled {
		t.Fatalf("a viewer's forged POST changed the job: %+v, %v", j, err)
	}
}

// consoleScreenshots saves the README's pictures of the console (make
// console-screenshots): the dashboard, the jobs list, a job and a run.
func consoleScreenshots(t *testing.T, b *tab, dir string, job int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runs, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS("#run-sparkline a"), "data-run"))
	if err != nil || !runs.Exists {
		t.Fatalf("a run of the job: %v", err)
	}
	for _, shot := range []struct{ name, path string }{
		{"console-dashboard.png", "/"},
		{"console-jobs.png", "/jobs"},
		{"console-job.png", fmt.Sprintf("/jobs/%d", job)},
		{"console-run.png", "/runs/" + runs.Value},
	} {
		b.open(shot.path)
		b.screenshot(filepath.Join(dir, shot.name))
		t.Logf("screenshot %s", filepath.Join(dir, shot.name))
	}
}

// Every page holds at a desktop's and at a phone's width, with long,
// realistic names: nothing makes the page scroll sideways (wide tables
// scroll inside their own box), and no table cell breaks a word across
// lines. New pages join the list below.
func TestConsoleLayoutHolds(t *testing.T) {
	t.Parallel()
	sys := startConsole(t, withKeyring(t))
	if _, err := sys.api.CreateSecret(t.Context(), "g", "the-settlement-warehouse-readonly-password", secretValue); err != nil {
		t.Fatal(err)
	}
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "a-job-with-a-rather-long-name-for-a-small-screen",
		Description: "Exports the day's settled card payments to the accounting warehouse and tells finance when it is done.",
		Handler:     "chatty", ScheduleType: "cron", ScheduleExpr: "0 0 3 * * *", Timezone: "Europe/Berlin",
		// Its alarm fields are a read-only channel and rule on their pages.
		AlarmEmails: []string{"settlement-reconciliation-team@example.com"}})
	run := trigger(t, sys.api, job.ID, nil)
	long := "a-node-with-a-rather-long-name-for-a-small-screen"
	wf, err := sys.api.CreateWorkflow(t.Context(), apiv1.WorkflowSpec{Group: "g", Name: "a-workflow-with-a-rather-long-name-for-a-small-screen",
		ScheduleType: "none", Nodes: []apiv1.WorkflowNode{{Name: long, Job: "g/" + job.Name}, {Name: long + "-2", Job: "g/" + job.Name}},
		Edges: []apiv1.WorkflowEdge{{From: long, To: long + "-2", On: "always"}}})
	if err != nil {
		t.Fatal(err)
	}
	wfRun, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, rule, alert := alertOfPhone(t, sys, job.ID)
	src := "#!/bin/bash\necho \"a script line that is much longer than a phone's screen is wide, as script lines are\"\n"
	script := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "a-script-job-with-a-rather-long-name-for-a-small-screen",
		Handler: "script", ScriptLanguage: "bash", Script: &src, ScheduleType: "none"})
	// A paused group with a long note, for the workers page.
	if _, err := sys.api.CreateGroup(t.Context(), apiv1.Group{Name: "a-group-with-a-rather-long-name-for-a-small-screen"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.api.SetGroupFlow(t.Context(), "a-group-with-a-rather-long-name-for-a-small-screen", "pause", apiv1.GroupFlowRequest{
		Note: "paused while the accounting warehouse migrates to the new cluster (ticket FIN-20931)"}); err != nil {
		t.Fatal(err)
	}
	// Its limits, for the workers page and its queue page.
	capped, rate := 250, "100000/23h59m59s"
	if _, err := sys.api.SetGroupLimits(t.Context(), "a-group-with-a-rather-long-name-for-a-small-screen", apiv1.GroupLimitsRequest{
		MaxRunning: &capped, RateLimit: &rate}); err != nil {
		t.Fatal(err)
	}
	b := signedInTab(t, sys, "/", "ada")
	pages := []string{"/", "/jobs", "/jobs/new", fmt.Sprintf("/jobs/%d", job.ID), fmt.Sprintf("/jobs/%d/edit", job.ID),
		fmt.Sprintf("/jobs/%d/script", script.ID), fmt.Sprintf("/jobs/%d/script?from=1&to=1", script.ID), "/set-password?token=x",
		"/runs", fmt.Sprintf("/runs/%d", run.ID), "/workers", "/cluster",
		"/workflows", "/workflows/new", fmt.Sprintf("/workflows/%d", wf.ID), fmt.Sprintf("/workflows/%d/edit", wf.ID),
		fmt.Sprintf("/workflow-runs/%d", wfRun.ID), "/stats", "/backfills", "/users", "/users/vic", "/keys", "/audit",
		"/alerts", "/alerts?state=all", fmt.Sprintf("/alerts/%d", alert), "/alert-rules", "/alert-rules/new",
		fmt.Sprintf("/alert-rules/%d/edit", rule), "/channels", "/channels/new", fmt.Sprintf("/channels/%d/edit", ch), "/secrets",
		"/groups/a-group-with-a-rather-long-name-for-a-small-screen/queue", "/groups/g/queue"}
	// States a page reaches by an action: the job form's advanced
	// settings unfolded; a bulk operation's confirmation and result.
	states := []struct {
		name  string
		reach func()
	}{
		{"/jobs/new with the advanced settings open", func() {
			b.open("/jobs/new")
			evalIn[bool](b, `(document.getElementById("form-advanced").open = true)`)
		}},
		{"a bulk disable's confirmation", func() {
			b.open("/jobs")
			b.do("tick every job and disable", chromedp.Click(chromedp.ID("jobs-select-all")),
				chromedp.Click(chromedp.ID("bulk-disable")), chromedp.WaitVisible(chromedp.ID("jobs-bulk-note")))
		}},
		{"a bulk enable's result", func() {
			b.open("/jobs")
			b.do("tick every job and enable", chromedp.Click(chromedp.ID("jobs-select-all")),
				chromedp.Click(chromedp.ID("bulk-enable")), chromedp.WaitVisible(chromedp.ID("jobs-bulk-confirm-submit")),
				chromedp.Click(chromedp.ID("jobs-bulk-confirm-submit")), chromedp.WaitVisible(chromedp.ID("jobs-bulk-result")))
		}},
		{"a runs bulk delete's confirmation", func() {
			b.open("/runs")
			b.do("take every run and delete", chromedp.Click(chromedp.ID("bulk-matching")),
				chromedp.Click(chromedp.ID("bulk-delete")), chromedp.WaitVisible(chromedp.ID("bulk-confirm-submit")))
		}},
	}
	// In Chinese too (issue #35): its text has no spaces to break at.
	shots := os.Getenv("JETJOB_LAYOUT_SCREENSHOTS")
	if shots != "" {
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, lang := range []string{"en-US,en", "zh-CN,zh;q=0.9"} {
		b.acceptLanguage(lang)
		for _, width := range []int64{1280, 375} {
			b.do(fmt.Sprintf("a %d px viewport", width), chromedp.EmulateViewport(width, 900))
			holds := func(what string) {
				t.Helper()
				if shots != "" { // JETJOB_LAYOUT_SCREENSHOTS: every page and state, to look at
					name := what
					if strings.HasPrefix(name, "/") {
						name = "page" + name
					}
					b.screenshot(filepath.Join(shots, fmt.Sprintf("%s-%d-%s.png", unsafeName.ReplaceAllString(name, "_"), width, lang[:2])))
				}
				if w, inner := evalIn[int](b, "document.documentElement.scrollWidth"), evalIn[int](b, "window.innerWidth"); w > inner {
					t.Errorf("%s at %d px in %s: the page is %d px wide; past the screen: %q", what, width, lang, w, overflowing(b))
				}
				if broken := evalIn[[]string](b, brokenWords); len(broken) > 0 {
					t.Errorf("%s at %d px in %s: table cells break a word: %q", what, width, lang, broken)
				}
			}
			for _, path := range pages {
				b.open(path)
				holds(path)
			}
			for _, st := range states {
				st.reach()
				holds(st.name)
			}
		}
	}
	chineseUnmissed(t)
}

// brokenWords lists the table cells of the page whose text is one short
// word (a status, a number, a name up to 24 characters) of which a text
// node is drawn on more than one line (its rectangles' tops differ by more
// than half a line). Hidden headers (.sr-only) do not count.
const brokenWords = `[...document.querySelectorAll("td, th")].filter((c) => {
	const text = c.textContent.trim();
	if (text === "" || /\s/.test(text) || text.length > 24 || c.closest(".sr-only") || c.querySelector(".sr-only")) { return false; }
	const w = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
	for (let n = w.nextNode(); n; n = w.nextNode()) {
		if (!n.textContent.trim()) { continue; }
		const r = document.createRange(); r.selectNodeContents(n);
		const rects = [...r.getClientRects()].filter((x) => x.width > 0);
		const half = parseFloat(getComputedStyle(n.parentElement).lineHeight) / 2 || 8;
		if (rects.some((x) => Math.abs(x.top - rects[0].top) > half)) { return true; }
	}
	return false;
}).slice(0, 8).map((c) => c.textContent.trim())`

// The job list and a job's page hold with long, realistic names and
// descriptions: at 1280 and at 375 px nothing widens the page (a wide
// table scrolls inside its own box), at 1280 px every row's buttons are in
// view, and no setting's value breaks inside a word.
func TestConsoleJobPagesHoldLongContent(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	var jobs []*apiv1.Job
	for i, name := range []string{
		"nightly-settlement-reconciliation-for-the-european-card-acquiring-ledger",
		"export-customer-invoices-to-the-accounting-warehouse-and-notify-finance",
		"rebuild-search-index",
	} {
		jobs = append(jobs, createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: name,
			Description: "Reconciles the day's card settlements against the acquirer's files, flags every mismatch " +
				"above the tolerance and mails the treasury team a summary before the markets open in Frankfurt.",
			Handler: fmt.Sprintf("settlement.reconcile_european_acquiring_ledger_v%d", i+2), ScheduleType: "cron",
			ScheduleExpr: "0 30 2 * * MON-FRI", Timezone: "America/Argentina/Buenos_Aires", MisfirePolicy: "fire_once",
			RetryBackoff: "exponential", AlarmWebhook: "https://alerts.example.com/hooks/jetjob/settlement-reconciliation-team"}))
	}
	if _, err := sys.api.DisableJobWith(t.Context(), jobs[1].ID, apiv1.DisableRequest{
		Note: "paused while the accounting warehouse migrates to the new cluster (ticket FIN-20931)"}); err != nil {
		t.Fatal(err)
	}
	b := signedInTab(t, sys, "/jobs", "ada")
	pages := []string{"/jobs", fmt.Sprintf("/jobs/%d", jobs[0].ID), fmt.Sprintf("/jobs/%d", jobs[1].ID)}
	for _, width := range []int64{1280, 375} {
		b.do(fmt.Sprintf("a %d px viewport", width), chromedp.EmulateViewport(width, 900))
		for _, path := range pages {
			b.open(path)
			if w, inner := evalIn[int](b, "document.documentElement.scrollWidth"), evalIn[int](b, "window.innerWidth"); w > inner {
				t.Errorf("%s at %d px: the page is %d px wide", path, width, w)
			}
			// A one-word setting ("cron", "fire_once", "exponential") on one line.
			broken := evalIn[[]string](b, `[...document.querySelectorAll("#job-settings dd")].filter((dd) => {
				const text = dd.textContent.trim();
				if (text === "" || /\s/.test(text) || text.length > 24) { return false; }
				const r = document.createRange(); r.selectNodeContents(dd);
				return new Set([...r.getClientRects()].map((c) => Math.round(c.top))).size > 1;
			}).map((dd) => dd.textContent.trim())`)
			if len(broken) > 0 {
				t.Errorf("%s at %d px: settings broken inside a word: %q", path, width, broken)
			}
			if width != 1280 || path != "/jobs" {
				continue
			}
			hidden := evalIn[[]string](b, `[...document.querySelectorAll("#jobs-table tbody tr")].flatMap((tr) =>
				[...tr.querySelectorAll("button")].filter((btn) => {
					const r = btn.getBoundingClientRect();
					const box = tr.closest(".table-wrap").getBoundingClientRect();
					return r.width === 0 || r.left < box.left || r.right > box.right || r.right > window.innerWidth;
				}).map((btn) => tr.id + " " + btn.textContent))`)
			if n := evalIn[int](b, `document.querySelectorAll("#jobs-table tbody button").length`); n != 2*len(jobs) || len(hidden) > 0 {
				t.Errorf("/jobs at 1280 px: %d row buttons, out of view: %q", n, hidden)
			}
		}
	}
}
