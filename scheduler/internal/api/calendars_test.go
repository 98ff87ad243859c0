package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

func calendarDoc(group string) apiv1.Calendar {
	return apiv1.Calendar{Group: group, Dates: []string{"2026-12-25"}, Weekdays: []string{"SUN"}}
}

// calendar creates a calendar of group ("" global) and returns its name.
func (e *env) calendar(group string) string {
	e.t.Helper()
	name := fmt.Sprint("cal", e.next())
	if _, _, err := e.st.PutCalendar(context.Background(), store.System, store.Calendar{Name: name, Group: group,
		Days: calendar.Days{Dates: []string{"2026-12-25"}}}); err != nil {
		e.t.Fatal(err)
	}
	return name
}

// A calendar's days come from dates, ranges, weekdays and an .ics file's
// events; bad input answers 400 naming it; a job naming another group's
// calendar is refused like one naming a calendar that does not exist, and
// its next fires mark the excluded ones.
func TestCalendarsAPI(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()
	ics := "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261001\nDTEND;VALUE=DATE:20261004\nEND:VEVENT\nEND:VCALENDAR\n"
	got, err := c.PutCalendar(ctx, "cn-holidays", apiv1.Calendar{Group: "g", Dates: []string{"2026-12-25"},
		Weekdays: []string{"sat", "SUN"}, ICS: ics})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Ranges) != 1 || got.Ranges[0] != (apiv1.CalendarRange{From: "2026-10-01", To: "2026-10-03"}) ||
		strings.Join(got.Weekdays, ",") != "SUN,SAT" {
		t.Errorf("stored %+v, want the .ics event as 2026-10-01..03 and weekdays SUN,SAT", got)
	}
	for _, bad := range []struct {
		doc  apiv1.Calendar
		want string
	}{
		{apiv1.Calendar{Dates: []string{"2026-02-30"}}, "2026-02-30"},
		{apiv1.Calendar{Weekdays: []string{"someday"}}, "SOMEDAY"},
		{apiv1.Calendar{ICS: "BEGIN:VEVENT\nEND:VEVENT\n"}, "DTSTART"},
	} {
		bad.doc.Group = "g"
		_, err := c.PutCalendar(ctx, "bad", bad.doc)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("PUT %+v: %v, want 400 naming %q", bad.doc, err, bad.want)
		}
	}
	spec := apiv1.JobSpec{Group: "g", Name: "j", Handler: "h", ScheduleType: "cron", ScheduleExpr: "0 9 * * *",
		Timezone: "Asia/Shanghai", ExcludeCalendars: []string{"nope"}}
	if _, err := c.CreateJob(ctx, spec); err == nil || !strings.Contains(err.Error(), "exclude_calendars: nope") {
		t.Errorf("a job naming a missing calendar: %v, want 400 naming it", err)
	}
	spec.ExcludeCalendars = []string{"cn-holidays"}
	j, err := c.CreateJob(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.NextFires(ctx, j.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Times) != 10 || len(next.Excluded) == 0 || next.Excluded[0].Calendar != "cn-holidays" {
		t.Errorf("next fires %+v: want 10 that run and the weekend's marked excluded by cn-holidays", next)
	}
	if err := c.DeleteCalendar(ctx, "cn-holidays"); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("deleting a calendar a job names: %v, want 409", err)
	}
}
