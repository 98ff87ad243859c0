package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// A job's several schedules are stored and answered as given, the first
// also in the single schedule fields (what older clients read); a list
// that disagrees with those fields, an interval schedule in a union, or a
// bad expression in any entry answers 400 naming it; a PUT with only the
// single fields keeps working for a job with one schedule.
func TestJobSchedulesRoundTripAndValidation(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()
	spec := apiv1.JobSpec{Group: "g", Name: "j", Handler: "h", Schedules: []apiv1.Schedule{
		{Type: "cron", Expr: "0 9 * * MON-FRI", Timezone: "Europe/Berlin"},
		{Type: "cron", Expr: "0 12 * * SAT", Timezone: "America/New_York"}}}
	j, err := c.CreateJob(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if j.ScheduleType != "cron" || j.ScheduleExpr != "0 9 * * MON-FRI" || j.Timezone != "Europe/Berlin" {
		t.Errorf("single schedule fields %s %q %s, want the first schedule", j.ScheduleType, j.ScheduleExpr, j.Timezone)
	}
	if len(j.Schedules) != 2 || j.Schedules[1].Expr != "0 12 * * SAT" || j.Schedules[1].Timezone != "America/New_York" {
		t.Errorf("schedules %+v, want both back", j.Schedules)
	}
	next, err := c.NextFires(ctx, j.ID, 12)
	if err != nil {
		t.Fatal(err)
	}
	saturday := 0
	for _, at := range next.Times {
		if at.Hour() == 17 || at.Hour() == 16 { // 12:00 in New York
			saturday++
		}
	}
	if saturday == 0 {
		t.Errorf("jobs next %v shows no Saturday fire of the second schedule", next.Times)
	}

	for _, bad := range []struct {
		edit func(*apiv1.JobSpec)
		want string
	}{
		{func(s *apiv1.JobSpec) { s.ScheduleType, s.ScheduleExpr = "cron", "0 8 * * *" }, "disagree with schedules[0]"},
		{func(s *apiv1.JobSpec) { s.Schedules[1] = apiv1.Schedule{Type: "fix_rate", Expr: "30s"} }, "cannot be combined"},
		{func(s *apiv1.JobSpec) { s.Schedules[1] = apiv1.Schedule{Type: "cron", Expr: "@every 5s"} }, "cannot be combined"},
		{func(s *apiv1.JobSpec) { s.Schedules[1].Expr = "0 99 * * *" }, "schedules[1]"},
		{func(s *apiv1.JobSpec) { s.Schedules[1].Timezone = "Mars/Olympus" }, "Mars/Olympus"},
	} {
		s := spec
		s.Name = "bad"
		s.Schedules = append([]apiv1.Schedule(nil), spec.Schedules...)
		bad.edit(&s)
		_, err := c.CreateJob(ctx, s)
		if ae, ok := err.(*client.APIError); !ok || ae.StatusCode != 400 || !strings.Contains(ae.Message, bad.want) {
			t.Errorf("create %+v: %v, want 400 naming %q", s.Schedules, err, bad.want)
		}
	}

	// Back to one schedule with the old fields only.
	upd := j.JobSpec
	upd.Schedules = nil
	upd.ScheduleExpr = "0 10 * * *"
	upd.Version = j.Version
	j2, err := c.UpdateJob(ctx, j.ID, upd)
	if err != nil {
		t.Fatal(err)
	}
	if len(j2.Schedules) != 0 || j2.ScheduleExpr != "0 10 * * *" {
		t.Errorf("after a PUT with one schedule: %q and schedules %+v, want that one alone", j2.ScheduleExpr, j2.Schedules)
	}
}
