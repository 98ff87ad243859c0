package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// The job form comes in sections: Basics (with the schedule), Behaviour,
// Alerts, and Advanced folded unless one of its fields has an error. The
// handler field suggests the handlers of each group's live workers, one
// datalist per group the user may operate, pointed at the chosen group's.
func TestJobFormSectionsAndHandlers(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.workers = []wire.WorkerInfo{
		{ID: "wa-1", Group: "a", Handlers: []string{"billing.export", "echo"}, Capacity: 4, StartedAt: now, BeatAt: now},
		{ID: "wa-2", Group: "a", Handlers: []string{"echo", "report"}, Capacity: 4, StartedAt: now, BeatAt: now},
		{ID: "wb-1", Group: "b", Handlers: []string{"b-only"}, Capacity: 4, StartedAt: now, BeatAt: now},
	}
	admin := e.browser().login("admin")
	p := admin.open("/jobs/new?group=b")
	for _, sec := range []struct{ id, fields string }{
		{`id="form-basics"`, `id="f-name" id="f-group" id="f-handler" id="f-schedule_expr" id="preview-`},
		{`id="form-behaviour"`, `id="f-route_strategy" id="f-block_strategy" id="f-misfire_policy" id="f-timeout" id="f-max_retries"`},
		{`id="form-alerts"`, `id="f-alarm_webhook" id="f-alarm_emails"`},
		{`id="form-advanced"`, `id="f-params_template" id="f-exclude_calendars" id="f-labels" id="f-owner" id="f-child_job_ids" id="f-secret_env"`},
	} {
		body := between(t, p.Body, sec.id, "</fieldset>")
		for _, f := range strings.Fields(sec.fields) {
			if !strings.Contains(body, f) {
				t.Errorf("section %s lacks %s", sec.id, f)
			}
		}
	}
	mustContain(t, p, `<details class="form-advanced" id="form-advanced">`,
		`<datalist id="handlers-0" data-group="a"><option value="billing.export"></option><option value="echo"></option><option value="report"></option></datalist>`,
		`<datalist id="handlers-1" data-group="b"><option value="b-only"></option></datalist>`,
		`list="handlers-1"`)

	// An operator of a only gets a's list; an error in an advanced field
	// opens the fold.
	op := e.browser().login("operator")
	p = op.open("/jobs/new")
	mustContain(t, p, `list="handlers-0"`, `data-group="a"`)
	mustLack(t, p, "b-only")
	form := jobForm("labelled", "labels", "not a label")
	p = op.post("/jobs", form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad labels: %d, want 400\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `<details class="form-advanced" id="form-advanced" open>`, `id="err-labels"`)
}
