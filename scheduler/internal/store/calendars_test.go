package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/backfill"
	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// The preview of a job with calendars, across a DST change and a make-up
// working Saturday: a daily 02:30 in New York fires at 03:00 EDT on the
// spring-forward day (2026-03-08, a Sunday), which the calendar's weekend
// excludes, judged on New York's day; the 23:30 fire of Saturday 7 March
// (already Sunday in UTC) is judged on Saturday too; the make-up Saturday
// (14 March) runs.
func TestUpcomingFiresHonourCalendarsAcrossDST(t *testing.T) {
	_, st := pgtest.Store(t)
	ctx := context.Background()
	put := func(name, group string, d calendar.Days) {
		t.Helper()
		if _, _, err := st.PutCalendar(ctx, store.System, store.Calendar{Name: name, Group: group, Days: d}); err != nil {
			t.Fatal(err)
		}
	}
	put("weekend", "", calendar.Days{Weekdays: []string{"SAT", "SUN"}, Dates: []string{"2026-03-10"}})
	put("makeup", "g", calendar.Days{Dates: []string{"2026-03-14"}})
	ny, _ := time.LoadLocation("America/New_York")
	j := store.Job{ID: 1, Group: "g", ScheduleType: "cron", ScheduleExpr: "0 30 2,23 * * *", Timezone: "America/New_York",
		Enabled: true, ExcludeCalendars: []string{"weekend"}, IncludeCalendars: []string{"makeup"}}
	from := time.Date(2026, 3, 6, 12, 0, 0, 0, ny)
	run, excluded, err := st.UpcomingFires(ctx, j, from, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-03-06 23:30 EST", "2026-03-09 02:30 EDT", "2026-03-09 23:30 EDT",
		"2026-03-11 02:30 EDT", "2026-03-11 23:30 EDT", "2026-03-12 02:30 EDT", "2026-03-12 23:30 EDT", "2026-03-13 02:30 EDT"}
	format := func(ts time.Time) string { return ts.In(ny).Format("2006-01-02 15:04 MST") }
	if len(run) != len(want) {
		t.Fatalf("fires %v, want %v", run, want)
	}
	for i := range want {
		if format(run[i]) != want[i] {
			t.Errorf("fire %d at %s, want %s", i, format(run[i]), want[i])
		}
	}
	var ex []string
	for _, e := range excluded {
		ex = append(ex, format(e.At)+" "+e.Calendar)
	}
	wantEx := []string{"2026-03-07 02:30 EST weekend", "2026-03-07 23:30 EST weekend",
		"2026-03-08 03:00 EDT weekend", "2026-03-08 23:30 EDT weekend", "2026-03-10 02:30 EDT weekend", "2026-03-10 23:30 EDT weekend"}
	if len(ex) != len(wantEx) {
		t.Fatalf("excluded %v, want %v", ex, wantEx)
	}
	for i := range wantEx {
		if ex[i] != wantEx[i] {
			t.Errorf("excluded %d: %s, want %s", i, ex[i], wantEx[i])
		}
	}
	// The make-up Saturday runs both fires.
	run, _, err = st.UpcomingFires(ctx, j, time.Date(2026, 3, 14, 0, 0, 0, 0, ny), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(run) != 2 || format(run[0]) != "2026-03-14 02:30 EDT" || format(run[1]) != "2026-03-14 23:30 EDT" {
		t.Errorf("the make-up Saturday's fires: %v", run)
	}
}

// A job names global calendars and its own group's; another group's, and
// one that does not exist, are refused alike.
func TestJobsNameOnlyTheirGroupsCalendars(t *testing.T) {
	pool, st := pgtest.Store(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO job_groups (name) VALUES ('other')`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []store.Calendar{{Name: "global"}, {Name: "mine", Group: "g"}, {Name: "theirs", Group: "other"}} {
		c.Days = calendar.Days{Dates: []string{"2026-12-25"}}
		if _, _, err := st.PutCalendar(ctx, store.System, c); err != nil {
			t.Fatal(err)
		}
	}
	j := store.Job{Group: "g", Name: "j", Handler: "h", ScheduleType: "cron", ScheduleExpr: "@daily", Timezone: "UTC",
		MisfirePolicy: "skip", RouteStrategy: "any", BlockStrategy: "serial", Enabled: true,
		ExcludeCalendars: []string{"global", "mine"}}
	if _, err := st.CreateJob(ctx, store.System, j); err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{{"theirs"}, {"missing"}} {
		j.Name, j.ExcludeCalendars = "j-"+names[0], names
		_, err := st.CreateJob(ctx, store.System, j)
		if !errors.Is(err, refs.ErrUnknownCalendar) {
			t.Errorf("a job naming %v: %v, want refs.ErrUnknownCalendar", names, err)
		}
	}
}

// A backfill of a job whose params are a template gives each covered day
// its own params: the day before the fire, in the job's zone.
func TestBackfillRendersParamsPerDay(t *testing.T) {
	_, st := pgtest.Store(t)
	ctx := context.Background()
	j, err := st.CreateJob(ctx, store.System, store.Job{Group: "g", Name: "daily", Handler: "h", ScheduleType: "cron",
		ScheduleExpr: "0 30 0 * * *", Timezone: "Asia/Kolkata", MisfirePolicy: "skip", RouteStrategy: "any",
		BlockStrategy: "serial", Enabled: true, ParamsTemplate: true,
		Params: `{"partition":"{{ .ScheduledAt | addDays -1 | date "20060102" }}"}`})
	if err != nil {
		t.Fatal(err)
	}
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	from := time.Date(2026, 10, 1, 0, 0, 0, 0, kolkata)
	to := from.AddDate(0, 0, 3)
	b, err := st.CreateBackfill(ctx, store.System, j, from, to, 3)
	if err != nil {
		t.Fatal(err)
	}
	written, err := st.StepBackfills(ctx, 10, func(b store.Backfill, j store.Job) ([]time.Time, []time.Time, bool, error) {
		tp, err := j.Timing()
		if err != nil {
			return nil, nil, false, err
		}
		nominal, exhausted := backfill.Fires(tp, b.From, b.To, time.Time{}, 10)
		return nominal, nominal, exhausted, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"partition":"20260930"}`, `{"partition":"20261001"}`, `{"partition":"20261002"}`}
	if len(written) != len(want) {
		t.Fatalf("backfill %d wrote %d runs, want %d", b.ID, len(written), len(want))
	}
	for i, p := range written {
		run, err := st.GetRun(ctx, p.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Params != want[i] || run.Params == nil || *run.Params != want[i] {
			t.Errorf("backfilled run %d at %s: handed on %q, stored %v; want %s", p.RunID, p.ScheduledAt, p.Params, run.Params, want[i])
		}
	}
}
