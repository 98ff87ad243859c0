package jobfile

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A job's several schedules, calendars, labels, owner and params template
// export as they are (its first schedule once, in the list), read back,
// and plan as in sync with the cluster they came from.
func TestExportRoundTripsSchedulesCalendarsLabels(t *testing.T) {
	jobs := []apiv1.Job{served(1, "billing", "report", func(j *apiv1.Job) {
		j.ScheduleExpr, j.Timezone = "0 9 * * MON-FRI", "Europe/Berlin"
		j.Schedules = []apiv1.Schedule{{Type: "cron", Expr: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"},
			{Type: "cron", Expr: "0 12 * * SAT", Timezone: "America/New_York"}}
		j.ExcludeCalendars, j.IncludeCalendars = []string{"cn-off"}, []string{"cn-makeup"}
		j.Labels, j.Owner = map[string]string{"env": "prod", "team": "billing"}, "billing on-call"
		j.Params, j.ParamsTemplate = `{{ .ScheduledAt | date "2006-01-02" }}`, true
	})}
	groups := []apiv1.Group{{Name: "billing"}}
	f, err := Export(groups, jobs, map[int64]Key{1: {"billing", "report"}})
	if err != nil {
		t.Fatal(err)
	}
	got := encode(t, f)
	for _, want := range []string{"schedules:", "expr: 0 12 * * SAT", "exclude_calendars:", "- cn-makeup", "env: prod",
		"owner: billing on-call", "params_template: true"} {
		if !strings.Contains(got, want) {
			t.Errorf("export lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "schedule_type:") {
		t.Errorf("export repeats the first schedule outside the list:\n%s", got)
	}
	back := mustParse(t, got)
	mustBeInSync(t, "the export", back, groups, jobs)
}
