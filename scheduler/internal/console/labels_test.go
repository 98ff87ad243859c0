package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// The jobs list filters by a label selector; the job page shows the
// owner and labels with the other settings, and marks the fires its
// calendars exclude.
func TestJobsLabelsOwnerAndCalendars(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := e.st.PutCalendar(ctx, store.System, store.Calendar{Name: "weekend",
		Days: calendar.Days{Weekdays: []string{"SAT", "SUN"}}}); err != nil {
		t.Fatal(err)
	}
	prod, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: "prod-report", Handler: "report",
		ScheduleType: "cron", ScheduleExpr: "0 0 9 * * *", Timezone: "Asia/Shanghai", MisfirePolicy: "skip",
		RouteStrategy: "any", BlockStrategy: "serial", Enabled: true, Owner: "billing-oncall",
		Labels: map[string]string{"env": "prod", "team": "billing"}, ExcludeCalendars: []string{"weekend"}})
	if err != nil {
		t.Fatal(err)
	}
	dev := e.job("a", "echo")
	admin := e.browser().login("admin")
	p := admin.get("/jobs?labels=env%3Dprod")
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, prod.ID), `id="filter-labels"`, `value="env=prod"`)
	mustLack(t, p, fmt.Sprintf(`id="job-%d"`, dev.ID))

	p = admin.get(fmt.Sprintf("/jobs/%d", prod.ID))
	mustContain(t, p, `<dt>Owner</dt><dd>billing-oncall</dd>`, `<dt>Labels</dt><dd>env=prod,team=billing</dd>`,
		`id="preview-excluded"`, "excluded by calendar weekend")
	// The edit form's preview marks them the same way, among the fires
	// that run: struck through, naming the calendar.
	p = admin.open(fmt.Sprintf("/jobs/%d/edit", prod.ID))
	mustContain(t, p, `<tr class="excluded" data-calendar="weekend">`, "<s>", "excluded by calendar weekend", `id="preview-excluded"`)
	// A calendar the user may not read is refused by the preview as unknown.
	q := "/api/v1/schedule/preview?type=cron&expr=0+9+*+*+*&exclude=nowhere"
	if p := admin.get(q); p.Code != 400 || !strings.Contains(p.Body, "no such calendar") {
		t.Errorf("preview with an unknown calendar: %d %s", p.Code, p.Body)
	}
}

// The workflows list filters by the jobs' label selector (a bad one is
// said on the page), and a workflow's page shows its owner, labels and
// calendars.
func TestWorkflowsLabelsOwnerAndCalendars(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := e.st.PutCalendar(ctx, store.System, store.Calendar{Name: "weekend",
		Days: calendar.Days{Weekdays: []string{"SAT", "SUN"}}}); err != nil {
		t.Fatal(err)
	}
	node := e.job("a", "echo")
	mk := func(name string, l map[string]string, owner string, exclude []string) store.Workflow {
		wf, err := e.st.CreateWorkflow(ctx, store.System, store.Workflow{
			Job: store.Job{Group: "a", Name: name, ScheduleType: "cron", ScheduleExpr: "0 0 9 * * *", Timezone: "UTC",
				MisfirePolicy: "skip", Enabled: true, Labels: l, Owner: owner, ExcludeCalendars: exclude},
			Spec:   wfengine.Spec{Nodes: []wfengine.NodeSpec{{Name: "a", JobID: node.ID}}},
			Policy: wfengine.Policy{Overlap: wfengine.OverlapSerial},
		})
		if err != nil {
			t.Fatal(err)
		}
		return wf
	}
	prod := mk("prod-flow", map[string]string{"env": "prod", "team": "billing"}, "billing-oncall", []string{"weekend"})
	dev := mk("dev-flow", map[string]string{"env": "dev"}, "", nil)
	admin := e.browser().login("admin")
	p := admin.get("/workflows?labels=env%3Dprod")
	mustContain(t, p, fmt.Sprintf(`id="workflow-%d"`, prod.ID), `id="filter-labels"`, `value="env=prod"`)
	mustLack(t, p, fmt.Sprintf(`id="workflow-%d"`, dev.ID))
	p = admin.get("/workflows?labels=env")
	mustContain(t, p, `value="env"`, "key=value")

	p = admin.get(fmt.Sprintf("/workflows/%d", prod.ID))
	mustContain(t, p, "billing-oncall", "env=prod,team=billing", "weekend")
}
