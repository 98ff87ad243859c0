package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/console"
)

// Every destination that leads off the site, given as the login's next (to
// the login form, and to the login page of a browser already signed in) or
// as a job action's back, sends the browser to a page of this site: the
// dashboard after a login, the job after its action.
func TestRedirectsStayOnSite(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	j := e.job("a", "echo")
	jobPage := fmt.Sprintf("/jobs/%d", j.ID)
	for _, v := range console.RedirectVectors {
		if p := op.get("/login?next=" + url.QueryEscape(v)); p.Code != http.StatusSeeOther || p.Location != "/" {
			t.Errorf("signed in, GET /login?next=%q: %d → %q, want /", v, p.Code, p.Location)
		}
		p := e.browser().post("/login", url.Values{"name": {"viewer"}, "password": {password}, "next": {v}})
		if p.Code != http.StatusSeeOther || p.Location != "/" {
			t.Errorf("login with next=%q: %d → %q, want /", v, p.Code, p.Location)
		}
		p = op.post(jobPage+"/disable", url.Values{"back": {v}})
		if p.Code != http.StatusSeeOther || p.Location != jobPage && !strings.HasPrefix(p.Location, jobPage+"?") {
			t.Errorf("disable with back=%q: %d → %q, want the job's page", v, p.Code, p.Location)
		}
	}
}
