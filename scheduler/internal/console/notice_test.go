package console_test

import (
	"net/url"
	"testing"
)

// A page shows a notice only for a code the console itself sets, with the
// code's fixed text: text in the URL (?flash=, or an unknown ?notice=) is
// shown nowhere, the login page included, so that a link cannot make the
// scheduler appear to say anything.
func TestNoticesAreFixedTexts(t *testing.T) {
	e := newEnv(t)
	const planted = "Your session expired: call +1 555 0100 with your password"
	signedOut := e.browser()
	op := e.browser().login("operator")
	for _, c := range []struct {
		b    *browser
		path string
	}{{signedOut, "/login"}, {op, "/"}, {op, "/jobs"}, {op, "/runs"}, {op, "/workers"}, {op, "/cluster"}} {
		for _, q := range []url.Values{{"flash": {planted}}, {"notice": {planted}}, {"notice": {"<b>job-created</b>"}}, {"notice": {"JOB-CREATED"}}} {
			p := c.b.get(c.path + "?" + q.Encode())
			mustLack(t, p, "call +1 555", "Job created.", `class="flash"`)
		}
		mustContain(t, c.b.get(c.path+"?notice=job-created"), `<p class="flash" role="status">Job created.</p>`)
	}
	mustContain(t, signedOut.get("/login?notice=signed-out"), `<p class="flash" role="status">Signed out.</p>`)
}
