package jobfile

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A calendar document reads strictly (an unknown field, a missing name
// and another apiVersion are named), and a calendar as the API answers it
// writes back a document that states it as it is.
func TestCalendarDocument(t *testing.T) {
	const doc = `apiVersion: jetjob/v1
kind: Calendar
name: cn-off
description: weekends and holidays
dates:
  - "2026-10-01"
ranges:
  - from: "2026-10-02"
    to: "2026-10-07"
weekdays:
  - SAT
  - SUN
`
	d, err := ParseCalendar("cal.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cal := apiv1.Calendar{Name: "cn-off", Description: "weekends and holidays", Dates: []string{"2026-10-01"},
		Ranges: []apiv1.CalendarRange{{From: "2026-10-02", To: "2026-10-07"}}, Weekdays: []string{"SAT", "SUN"}, Version: 3}
	if !d.Same(cal) {
		t.Errorf("read %+v, not the same as %+v", d, cal)
	}
	out, err := EncodeDoc(CalendarOf(cal))
	if err != nil || string(out) != doc {
		t.Errorf("written back:\n%s\nwant:\n%s (%v)", out, doc, err)
	}
	cal.Weekdays = []string{"SUN"}
	if d.Same(cal) {
		t.Error("a calendar with other weekdays compares the same")
	}
	for _, c := range []struct{ doc, want string }{
		{strings.Replace(doc, "dates:", "days:", 1), "days"},
		{strings.Replace(doc, "name: cn-off\n", "", 1), "name is required"},
		{strings.Replace(doc, "jetjob/v1", "jetjob/v2", 1), "apiVersion"},
	} {
		if _, err := ParseCalendar("cal.yaml", []byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) ||
			!strings.HasPrefix(err.Error(), "cal.yaml") {
			t.Errorf("%q: %v, want an error from cal.yaml naming %q", c.doc, err, c.want)
		}
	}
}
