package scheduler_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

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
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("noop", func(context.Context, *worker.Job) error { return nil })
	})
	consoleUsers(t, sys)
	b := newTab(t, sys.url)

	b.signIn("/", "ada")
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
