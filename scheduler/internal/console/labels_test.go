package console_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/store"
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
}
