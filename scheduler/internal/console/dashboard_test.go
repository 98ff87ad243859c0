package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDashboardEmpty(t *testing.T) {
	e := newEnv(t)
	p := e.browser().login("admin").open("/")
	mustContain(t, p, `id="window-today"`, `id="window-7d"`, `id="window-30d"`, "No runs in the last 30 days.",
		`id="no-failing-jobs"`, `id="fire-lag"`, `id="start-lag"`)
	mustLack(t, p, `id="runs-chart"`, `id="failing-jobs"`)
}

func TestDashboardShowsRunsAndFailures(t *testing.T) {
	e := newEnv(t)
	ja := e.job("a", "echo")
	jb := e.job("b", "echo")
	e.finishedRuns(ja, "SUCCEEDED", "FAILED", "FAILED", "RUNNING")
	e.finishedRuns(jb, "SUCCEEDED", "SUCCEEDED")

	p := e.browser().login("admin").open("/")
	// Both groups' runs count for an admin; a's failing job is listed with
	// its failures linking to the search; the chart has today's bar.
	mustContain(t, p, `id="runs-chart"`, `<g class="bar"`, ": 2 FAILED</title>", `id="failing-jobs"`,
		`data-job-id="`, ja.Name, `<a href="/runs?status=RUNNING">1</a>`)
	mustContain(t, p, "Success rate <strong>60.0 %</strong>") // 3 of the 5 ended runs succeeded
	// The chart has axes: today's date under the newest bar, and the
	// tallest day's count (a's 4 runs and b's 2) at the top of the y axis.
	mustContain(t, p, `class="x-tick"`, ">"+time.Now().UTC().Format("01-02")+"</text>", `class="y-tick"`, ">6</text>")
	// The failed count opens exactly those failed runs.
	failed := e.browser().login("admin").open(href(t, p, fmt.Sprint("failures-", ja.ID)))
	if n := strings.Count(failed.Body, `data-status="FAILED"`); n != 2 || strings.Count(failed.Body, `id="run-row-`) != 2 {
		t.Fatalf("the failed count's link shows %d FAILED runs, want 2 and nothing else:\n%s", n, failed.Body)
	}

	// A viewer of b sees only b: no failing job of a, a perfect rate.
	vb := e.browser().login("viewerB").get("/")
	mustContain(t, vb, `id="no-failing-jobs"`, "Success rate <strong>100.0 %</strong>")
	mustLack(t, vb, ja.Name)

	// The group filter narrows to one group and keeps it in the form.
	pa := e.browser().login("admin").get("/?group=b")
	mustContain(t, pa, `<select id="dash-group" name="group">`, "<option selected>b</option>", "<option >a</option>",
		"Success rate <strong>100.0 %</strong>")
	mustLack(t, pa, ja.Name)
}

func TestDashboardErrors(t *testing.T) {
	e := newEnv(t)
	vb := e.browser().login("viewerB")
	// Another group's dashboard is the API's 403, with its words.
	p := vb.expect("/?group=a", http.StatusForbidden)
	mustContain(t, p, `id="error-message"`, "viewer of group a")
	// An admin's malformed group name is the API's 400.
	if p := e.browser().login("admin").get("/?group=no%20such!"); p.Code != http.StatusBadRequest {
		t.Fatalf("bad group: %d\n%s", p.Code, p.Body)
	}
	// A group that does not exist is said to be missing, not shown as one
	// without runs.
	p = e.browser().login("admin").expect("/?group=nosuch", http.StatusNotFound)
	mustContain(t, p, `no group &#34;nosuch&#34;`)
}
