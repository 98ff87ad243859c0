package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/alarm"
	"github.com/jetjob/jetjob/scheduler/apiv1"
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
}

func TestConsoleSignIn(t *testing.T) {
	sys := startSystem(t, consoleHandlers)
	consoleUsers(t, sys)
	b := newTab(t, sys.url)

	b.signIn("/workers", "ada")
	if got := b.text("#user-name"); got != "Ada Admin" {
		t.Fatalf("user menu shows %q, want Ada Admin", got)
	}
	if got := b.text("#user-role"); got != "admin" {
		t.Fatalf("user menu role %q, want admin", got)
	}
	b.do("sign out", chromedp.Click(chromedp.CSS(".usermenu button")), chromedp.WaitVisible(chromedp.ID("sign-in")))
	if loc := b.location(); !strings.Contains(loc, "/login") {
		t.Fatalf("after signing out the browser is at %s", loc)
	}
}

// consoleHandlers are the browser tests' handlers: "chatty" logs a line
// every 300 ms for 6 s, "forever" runs until killed, "broken" fails.
func consoleHandlers(w *worker.Worker) {
	w.Handle("chatty", func(ctx context.Context, j *worker.Job) error {
		for i := 1; i <= 20; i++ {
			j.Logger.Info(fmt.Sprintf("chatty line %d", i))
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
	sys := startSystem(t, consoleHandlers)
	consoleUsers(t, sys)
	ctx := context.Background()
	job, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "chatty", Handler: "chatty", ScheduleType: "none"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := sys.api.TriggerJob(ctx, job.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, sys.url)
	b.signIn(fmt.Sprintf("/runs/%d", run.ID), "ada")
	if loc := b.location(); !strings.HasSuffix(loc, fmt.Sprintf("/runs/%d", run.ID)) {
		t.Fatalf("after signing in the browser is at %s, want the run", loc)
	}
	first := b.text("#run-log")
	if strings.Contains(first, "chatty line 20") {
		t.Fatalf("the run ended before its page was read; log: %q", first)
	}
	// The marker is lost if the page reloads: lines must arrive live.
	evalIn[bool](b, "(window.__noReload = true, true)")
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
	sys := startSystem(t, consoleHandlers)
	consoleUsers(t, sys)
	ctx := context.Background()
	job, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "forever", Handler: "forever", ScheduleType: "none"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := sys.api.TriggerJob(ctx, job.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the run RUNNING", func() bool {
		r, err := sys.api.GetRun(ctx, run.ID)
		return err == nil && r.Status == "RUNNING"
	})
	b := newTab(t, sys.url)
	b.signIn(fmt.Sprintf("/runs/%d", run.ID), "ada")
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
	links := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a alarm.Alarm
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			t.Errorf("alarm body: %v", err)
		}
		links <- a.ConsoleLink
	}))
	defer hook.Close()
	sys := startSystem(t, consoleHandlers, func(c *scheduler.Config) {
		c.Alarm = alarm.Config{ConsoleURL: "http://" + c.Listener.Addr().String()}
	})
	consoleUsers(t, sys)
	ctx := context.Background()
	job, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "broken", Handler: "broken", ScheduleType: "none",
		AlarmWebhook: hook.URL})
	if err != nil {
		t.Fatal(err)
	}
	run, err := sys.api.TriggerJob(ctx, job.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	b := newTab(t, sys.url)
	b.signIn(strings.TrimPrefix(link, sys.url), "vic")
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
