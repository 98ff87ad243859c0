package scheduler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/oidctest"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
)

// withSSO gives the system one OpenID provider, "Corp SSO", run in the
// test's process: carol is in jj-g-ops (operator of g), dave in jj-g-view
// (viewer of g).
func withSSO(t *testing.T, op **oidctest.Provider) func(*systemConfig) {
	return func(cfg *systemConfig) {
		base := "http://" + cfg.Deps.Listener.Addr().String()
		*op = oidctest.Start(t, oidctest.Options{ClientID: "jetjob", ClientSecret: "browser-test-client-secret",
			RedirectURIs: []string{base + "/login/sso/corp/callback", base + "/login"},
			Users: []oidctest.User{
				{Subject: "s-carol", Username: "carol", Password: "carol-pw", Name: "Carol Ops", Groups: []string{"jj-g-ops"}},
				{Subject: "s-dave", Username: "dave", Password: "dave-pw", Name: "Dave Viewer", Groups: []string{"jj-g-view"}},
			}})
		c := &sso.Config{PublicURL: base, OIDC: []sso.OIDCConfig{{ID: "corp", Name: "Corp SSO", Issuer: (*op).Issuer,
			ClientID: "jetjob", ClientSecret: "browser-test-client-secret", Scopes: []string{"groups"},
			Mapping: sso.Mapping{Grants: []sso.GrantRule{
				{From: "jj-g-ops", Group: "g", Role: "operator", Scripts: true},
				{From: "jj-g-view", Group: "g", Role: "viewer"},
			}}}}}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		ps, err := sso.New(c)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Deps.SSO = ps
	}
}

// ssoSignIn clicks "Sign in with Corp SSO" on the console's sign-in page
// and signs in on the provider's own page.
func (b *tab) ssoSignIn(user, pw string) {
	b.t.Helper()
	b.open("/login")
	b.do("sign in at the provider as "+user,
		chromedp.WaitVisible(chromedp.ID("sso-corp")),
		chromedp.Click(chromedp.ID("sso-corp")),
		chromedp.WaitVisible(chromedp.ID("op-username")),
		chromedp.SendKeys(chromedp.ID("op-username"), user),
		chromedp.SendKeys(chromedp.ID("op-password"), pw),
		chromedp.Click(chromedp.ID("op-submit")),
		chromedp.WaitVisible(chromedp.ID("user-name")),
	)
}

// jobControls counts the edit controls of a job's page.
func (b *tab) jobControls() int {
	return evalIn[int](b, `document.querySelectorAll("#job-actions, #job-edit, #job-enable, #job-disable, #job-delete, #job-trigger").length`)
}

// Signing in through the company's provider in a real browser: the
// button, the provider's page, the dashboard with the mapped role; a
// viewer's group gives no edit controls; a group taken away at the
// provider takes the grant away at the next sign-in.
func TestConsoleSSOSignIn(t *testing.T) {
	t.Parallel()
	var op *oidctest.Provider
	sys := startSystem(t, consoleHandlers, withSSO(t, &op))
	consoleUsers(t, sys) // makes group g
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "nightly-report", Handler: "noop", ScheduleType: "none"})
	jobPath := fmt.Sprintf("/jobs/%d", job.ID)

	b := newTab(t, sys.url)
	b.open("/login")
	if got := b.text("#sso-corp"); got != "Sign in with Corp SSO" {
		t.Fatalf("the provider's button reads %q", got)
	}
	if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
		b.screenshot(filepath.Join(dir, "sso-signin.png"))
	}
	b.do("a phone's viewport", chromedp.EmulateViewport(375, 812))
	if w := evalIn[int](b, "document.documentElement.scrollWidth"); w > 375 {
		t.Errorf("the sign-in page is %d px wide on a 375 px screen", w)
	}
	b.do("a laptop's viewport", chromedp.EmulateViewport(1280, 900))

	b.ssoSignIn("carol", "carol-pw")
	if loc := b.location(); !strings.HasSuffix(loc, "/") || strings.Contains(loc, "/login") {
		t.Fatalf("after signing in the browser is at %s, want the dashboard", loc)
	}
	if name, role := b.text("#user-name"), b.text("#user-role"); name != "Carol Ops" || !strings.Contains(role, "operator+scripts") {
		t.Fatalf("user menu %q, role %q; want Carol Ops, operator+scripts of g", name, role)
	}
	b.open(jobPath)
	if n := b.jobControls(); n == 0 {
		t.Fatal("an operator sees no job controls")
	}

	// carol leaves jj-g-ops for jj-g-view at the provider; signing out
	// goes through the provider's end_session and back to the sign-in page.
	op.SetGroups("carol", []string{"jj-g-view"})
	b.do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sso-corp")))
	b.ssoSignIn("carol", "carol-pw")
	if role := b.text("#user-role"); strings.Contains(role, "operator") || !strings.Contains(role, "viewer") {
		t.Fatalf("carol's role after losing jj-g-ops: %q", role)
	}
	b.open(jobPath)
	if n := b.jobControls(); n != 0 {
		t.Fatalf("carol, now a viewer, sees %d job controls", n)
	}
	if u, err := sys.api.GetUser(t.Context(), "carol"); err != nil || len(u.Grants) != 1 || u.Grants[0].Role != "viewer" || u.Grants[0].Scripts {
		t.Fatalf("carol's grants: %+v, %v", u, err)
	}

	// dave, of a viewer's group, reads the job and cannot edit it.
	b.do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sso-corp")))
	b.ssoSignIn("dave", "dave-pw")
	b.open(jobPath)
	if got := b.text("#job-title"); !strings.Contains(got, "nightly-report") {
		t.Fatalf("dave's job page title %q", got)
	}
	if n := b.jobControls(); n != 0 {
		t.Fatalf("dave, a viewer, sees %d job controls", n)
	}
}
