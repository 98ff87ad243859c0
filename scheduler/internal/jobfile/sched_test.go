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

// A job's flow controls export as the API answers them and read back in
// sync; a file that writes a rate in another form (100/60s for 100/1m)
// is in sync too, and one that changes a control plans that change.
func TestExportRoundTripsFlowControls(t *testing.T) {
	jobs := []apiv1.Job{served(1, "billing", "per-tenant", func(j *apiv1.Job) {
		j.Priority, j.ConcurrencyKey, j.KeyCap, j.RateLimit, j.KeyRateLimit = -7, "params.tenant", 2, "100/1m", "5/1s"
	})}
	groups := []apiv1.Group{{Name: "billing"}}
	f, err := Export(groups, jobs, map[int64]Key{1: {"billing", "per-tenant"}})
	if err != nil {
		t.Fatal(err)
	}
	got := encode(t, f)
	for _, want := range []string{"priority: -7\n", "concurrency_key: params.tenant\n", "key_cap: 2\n", "rate_limit: 100/1m\n", "key_rate_limit: 5/1s\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("export lacks %q:\n%s", want, got)
		}
	}
	mustBeInSync(t, "the export", mustParse(t, got), groups, jobs)
	mustBeInSync(t, "a file with 100/60s", mustParse(t, strings.Replace(got, "rate_limit: 100/1m", "rate_limit: 100/60s", 1)), groups, jobs)

	p, err := MakePlan("jobs.yaml", mustParse(t, strings.Replace(got, "key_cap: 2", "key_cap: 3", 1)), groups, jobs, true)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = p.Write(&b)
	if !strings.Contains(b.String(), "key_cap: 2 → 3") {
		t.Errorf("a changed key_cap plans\n%s\nwant key_cap: 2 → 3", b.String())
	}
}
