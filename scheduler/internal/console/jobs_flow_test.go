package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The job form's flow fields (in Advanced) are stored, refused under their
// own fields with the API's words, and shown on the job page in their
// section; the trigger form gives a run its own priority.
func TestJobFormFlowControls(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	p := op.open("/jobs/new")
	mustContain(t, p, `id="f-priority"`, `id="f-concurrency_key"`, `id="f-key_cap"`, `id="f-rate_limit"`, `id="f-key_rate_limit"`)

	form := jobForm("per-tenant", "key_cap", "2", "rate_limit", "lots", "priority", "200")
	p = op.post("/jobs", form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad flow fields: %d, want 400\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="err-key_cap"`, "key_cap needs a concurrency_key", `id="err-rate_limit"`, "want COUNT/PERIOD",
		`id="err-priority"`, "priority 200", `value="lots"`)

	form = jobForm("per-tenant", "priority", "-5", "concurrency_key", "params.tenant", "key_cap", "2",
		"rate_limit", "100/60s", "key_rate_limit", "5/1s")
	p = op.post("/jobs", form)
	if p.Code != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Code, p.Body)
	}
	js, err := e.st.ListJobs(context.Background(), "a", nil, 0, 10)
	if err != nil || len(js) != 1 {
		t.Fatalf("stored jobs: %v %v", js, err)
	}
	j := js[0]
	if f := j.Flow; f.Priority != -5 || f.ConcurrencyKey != "params.tenant" || f.KeyCap != 2 || f.Rate.Count != 100 || f.KeyRate.PeriodMS != 1000 {
		t.Fatalf("stored flow %+v differs from the form", f)
	}
	path := fmt.Sprintf("/jobs/%d", j.ID)
	settings := between(t, op.get(path).Body, `id="job-settings"`, "</section>")
	for _, want := range []string{"Flow control", "Priority", "-5", "Concurrency key", "params.tenant", "Rate limit", "100/1m", "5/1s"} {
		if !strings.Contains(settings, want) {
			t.Errorf("job settings lack %q:\n%s", want, settings)
		}
	}
	mustContain(t, op.get(path+"/edit"), `value="100/1m"`, `value="params.tenant"`)

	p = op.post(path+"/trigger", url.Values{"priority": {"40"}})
	if p.Code != http.StatusSeeOther {
		t.Fatalf("trigger with priority: %d\n%s", p.Code, p.Body)
	}
	fired := <-e.fired
	if fired.Flow.Priority != 40 {
		t.Errorf("triggered run's flow priority %d, want 40", fired.Flow.Priority)
	}
	if run, err := e.st.GetRun(context.Background(), fired.RunID); err != nil || run.Priority == nil || *run.Priority != 40 {
		t.Errorf("triggered run %+v (%v): want its own priority 40", run, err)
	}
	if p := op.post(path+"/trigger", url.Values{"priority": {"high"}}); p.Code != http.StatusBadRequest {
		t.Errorf("trigger with priority high: %d, want 400", p.Code)
	}
}

// A re-run keeps the run's own priority.
func TestRerunKeepsRunPriority(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	j := e.job("a", "echo")
	p := op.post(fmt.Sprintf("/jobs/%d/trigger", j.ID), url.Values{"priority": {"-30"}})
	if p.Code != http.StatusSeeOther {
		t.Fatalf("trigger: %d\n%s", p.Code, p.Body)
	}
	first := <-e.fired
	if p = op.post(fmt.Sprintf("/runs/%d/rerun", first.RunID), nil); p.Code != http.StatusSeeOther {
		t.Fatalf("rerun: %d\n%s", p.Code, p.Body)
	}
	again := <-e.fired
	if again.RunID == first.RunID || again.Flow.Priority != -30 {
		t.Fatalf("re-run %d has flow priority %d, want a new run at the first's -30", again.RunID, again.Flow.Priority)
	}
	mustContain(t, op.get(fmt.Sprintf("/runs/%d", again.RunID)), `id="run-priority">-30 `)
}
