package scheduler_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// redirectVectorsFor are destinations meant to send a browser from the
// console to evil (host:port), written as an attacker puts them in a link
// or a form field: tabs and newlines browsers drop, backslashes they read
// as slashes, escapes, schemes.
func redirectVectorsFor(evil string) []string {
	vs := []string{"//EVIL/", "///EVIL/", `/\EVIL/`, `/\/EVIL/`, `\\EVIL/`, "/\t/EVIL/", "/\n/EVIL/", "/ \t/EVIL/",
		"/%09/EVIL/", "/%2F/EVIL/", "/%5CEVIL/", "%2F%2FEVIL/", " //EVIL/", "http://EVIL/", "http:EVIL/", "http:/EVIL/",
		"//EVIL@127.0.0.1/", "/.//EVIL/", "javascript:location='http://EVIL/'",
		"data:text/html,<script>location='http://EVIL/'</script>"}
	for i, v := range vs {
		vs[i] = strings.ReplaceAll(v, "EVIL", evil)
	}
	return vs
}

// settle waits until the tab has left the page marked by window.__old and
// loaded the next one, and returns where it is; if it stays, where it
// stayed. Evaluations fail while the page changes; those are retried.
func (b *tab) settle() string {
	b.t.Helper()
	eval := func(expr string) (string, error) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		return chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	}
	var href string
	if testwait.Poll(30*time.Second, func() bool {
		v, err := eval(`window.__old !== true && document.readyState === "complete" ? location.href : ""`)
		href = v
		return err == nil && v != ""
	}) {
		return href
	}
	href, _ = eval("location.href")
	return "(stayed) " + href
}

// In a real browser, no destination given to the console — the login's
// next (in a link to the login page, signed in or not) or a job action's
// back field — leads off the site: a signed-in user always lands on a
// page of the scheduler, and the other site is never asked for anything.
func TestConsoleRedirectsStayOnSite(t *testing.T) {
	t.Parallel()
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		evilHits.Add(1)
		fmt.Fprint(w, "<!doctype html><title>evil</title><p id=evil>another site</p>")
	}))
	defer evil.Close()
	evilHost := strings.TrimPrefix(evil.URL, "http://")
	sys := startConsole(t)
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "target", Handler: "noop", ScheduleType: "none"})
	b := newTab(t, sys.url)
	var seen int64
	onSite := func(how, v, href string) {
		t.Helper()
		hits := evilHits.Load()
		if !strings.HasPrefix(href, sys.url+"/") || hits != seen {
			t.Errorf("%s with %q: the browser is at %s (the other site was asked %d times), want a page of %s",
				how, v, href, hits-seen, sys.url)
		}
		seen = hits
	}
	for _, v := range redirectVectorsFor(evilHost) {
		link := "/login?next=" + url.QueryEscape(v)

		// Signed out: the link's login form, filled in and sent.
		b.open("/login")
		evalAsync[bool](b, `fetch("/logout", {method: "POST", redirect: "manual"}).then(() => true)`)
		b.open(link)
		b.do("sign in from "+link,
			chromedp.WaitVisible(chromedp.ID("name")),
			chromedp.SendKeys(chromedp.ID("name"), "ada"),
			chromedp.SendKeys(chromedp.ID("password"), consolePassword))
		evalIn[bool](b, "(window.__old = true, true)")
		b.do("send the login form", chromedp.Click(chromedp.ID("sign-in")))
		onSite("the login form", v, b.settle())

		// Signed in: the link itself.
		b.open(link)
		onSite("a signed-in browser opening the login link", v, b.location())

		// A job action whose back field was changed.
		b.open("/jobs")
		evalIn[bool](b, fmt.Sprintf(`(() => {
			window.__old = true;
			const f = document.querySelector("#disable-%[1]d, #enable-%[1]d");
			f.querySelector("input[name=back]").value = %[2]s;
			HTMLFormElement.prototype.submit.call(f);
			return true;
		})()`, job.ID, jsString(v)))
		onSite("a job action's back field", v, b.settle())
	}
}
