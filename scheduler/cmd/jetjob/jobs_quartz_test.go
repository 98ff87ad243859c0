package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A Quartz expression given with --quartz is stored as type quartz, `jobs
// next` shows its fire times in the job's zone, `jobs update --quartz`
// replaces it, and a bad expression is refused with the field named.
func TestJobsQuartzFlag(t *testing.T) {
	r := isolatedAPI(t, "demo")
	created := adminJSON[apiv1.Job](t, r, "jobs", "create",
		"--group", "demo", "--name", "report", "--handler", "hello",
		"--quartz", "0 15 10 ? * 6L", "--tz", "Europe/Berlin")
	if created.ScheduleType != "quartz" || created.ScheduleExpr != "0 15 10 ? * 6L" || created.Timezone != "Europe/Berlin" {
		t.Fatalf("created schedule %q %q %q", created.ScheduleType, created.ScheduleExpr, created.Timezone)
	}
	id := fmt.Sprint(created.ID)

	// In Quartz 6 is Friday and 6L the last Friday of the month.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	next := adminJSON[apiv1.NextFires](t, r, "jobs", "next", id, "-n", "4")
	if len(next.Times) != 4 {
		t.Fatalf("next: %d times, want 4", len(next.Times))
	}
	for _, at := range next.Times {
		l := at.In(berlin)
		if l.Weekday() != time.Friday || l.Hour() != 10 || l.Minute() != 15 || l.Second() != 0 || l.AddDate(0, 0, 7).Month() == l.Month() {
			t.Errorf("next fire %s (%s) is not the last Friday of its month at 10:15", at.Format(time.RFC3339), l.Format(time.RFC1123))
		}
	}
	detail := must(t, r.as(t, bootstrapToken, "", "jobs", "get", id), "get").stdout
	if !strings.Contains(detail, "quartz 0 15 10 ? * 6L (Europe/Berlin)") {
		t.Errorf("jobs get does not show the quartz schedule with its zone:\n%s", detail)
	}

	upd := adminJSON[apiv1.Job](t, r, "jobs", "update", id,
		"--quartz", "0 0 12 ? * 1")
	if upd.ScheduleType != "quartz" || upd.ScheduleExpr != "0 0 12 ? * 1" || upd.Timezone != "Europe/Berlin" {
		t.Fatalf("after update --quartz: %q %q %q", upd.ScheduleType, upd.ScheduleExpr, upd.Timezone)
	}
	if upd.NextFireAt == nil || upd.NextFireAt.In(berlin).Weekday() != time.Sunday {
		t.Errorf("after update --quartz to Sundays (1): next fire %v", upd.NextFireAt)
	}

	bad := r.as(t, bootstrapToken, "", "jobs", "update", id, "--quartz", "0 0 12 ? * 8")
	if bad.code != exitError || !strings.Contains(bad.stderr, `quartz day-of-week field "8": want 1-7 or SUN-SAT`) {
		t.Errorf("bad --quartz: exit %d, stderr %q; want exit 1 naming the day-of-week field", bad.code, bad.stderr)
	}
	both := r.as(t, bootstrapToken, "", "jobs", "update", id, "--quartz", "0 0 12 ? * 1", "--cron", "@hourly")
	if both.code != exitUsage || !strings.Contains(both.stderr, "only one schedule flag may be given, got --cron and --quartz") {
		t.Errorf("--quartz with --cron: exit %d, stderr %q", both.code, both.stderr)
	}
	empty := r.as(t, bootstrapToken, "", "jobs", "update", id, "--quartz", " ")
	if empty.code != exitUsage || !strings.Contains(empty.stderr, "--quartz: empty expression") {
		t.Errorf("empty --quartz: exit %d, stderr %q", empty.code, empty.stderr)
	}
}
