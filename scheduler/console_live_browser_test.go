package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The pages an operator keeps open read themselves again: a run triggered
// elsewhere appears on the open runs page without a click; paused, the
// page stays as it is until resumed; a filter being typed is never wiped.
func TestConsoleLivePages(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "live", Handler: "chatty", ScheduleType: "none"})
	b := signedInTab(t, sys, "/runs", "ada")
	evalIn[bool](b, `(() => { localStorage.setItem("jetjob-live", "live"); return true; })()`) // signIn paused them
	b.waitFor("the live switch shown", `!document.getElementById("live-toggle").hidden`, 30*time.Second)

	first := trigger(t, sys.api, job.ID, nil)
	b.waitFor("the new run on the open page", fmt.Sprintf(`!!document.getElementById("run-row-%d")`, first.ID), 60*time.Second)

	// Paused: a marker put in the page survives more than two periods
	// (a swap would remove it), and a new run is not shown.
	b.do("pause", chromedp.Click(chromedp.ID("live-toggle")))
	evalIn[bool](b, `(() => { const m = document.createElement("span"); m.id = "marker"; document.querySelector("main").append(m); return true; })()`)
	second := trigger(t, sys.api, job.ID, nil)
	time.Sleep(25 * time.Second) // two and a half periods of the page (render.go, livePages)
	if !evalIn[bool](b, `!!document.getElementById("marker")`) || evalIn[bool](b, fmt.Sprintf(`!!document.getElementById("run-row-%d")`, second.ID)) {
		t.Fatal("the paused page read itself again")
	}
	// Typing in the filter holds the page too, resumed or not.
	b.do("resume and type a filter", chromedp.Click(chromedp.ID("live-toggle")), chromedp.SendKeys(chromedp.ID("filter-worker"), "w-typed"))
	time.Sleep(25 * time.Second)
	if !evalIn[bool](b, `!!document.getElementById("marker") && document.getElementById("filter-worker").value === "w-typed"`) {
		t.Fatal("the page was swapped while a filter was being typed")
	}
	evalIn[bool](b, `(() => { document.getElementById("filter-worker").value = ""; return true; })()`)
	b.waitFor("the second run once resumed", fmt.Sprintf(`!!document.getElementById("run-row-%d")`, second.ID), 60*time.Second)
}
