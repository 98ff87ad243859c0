package planner_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// A fire on a day an exclude calendar holds is written as a SKIPPED run
// that names the calendar (history shows it; nothing is published); an
// include calendar holding the day gives the fires back.
func TestCalendarExcludedFiresAreSkippedRuns(t *testing.T) {
	st, pool, p, out := setup(t)
	ctx := context.Background()
	every := calendar.Days{Weekdays: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
	if _, _, err := st.PutCalendar(ctx, store.System, store.Calendar{Name: "every-day", Days: every}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	today := calendar.Days{Dates: []string{now.Format(calendar.DateLayout), now.Add(24 * time.Hour).Format(calendar.DateLayout)}}
	if _, _, err := st.PutCalendar(ctx, store.System, store.Calendar{Name: "makeup", Group: "g", Days: today}); err != nil {
		t.Fatal(err)
	}
	off := everySecond("off")
	off.ScheduleExpr = "* * * * * *"
	off.ExcludeCalendars = []string{"every-day"}
	off, err := st.CreateJob(ctx, store.System, off)
	if err != nil {
		t.Fatal(err)
	}
	on := everySecond("on")
	on.ScheduleExpr = "* * * * * *"
	on.ExcludeCalendars, on.IncludeCalendars = []string{"every-day"}, []string{"makeup"}
	if on, err = st.CreateJob(ctx, store.System, on); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PlanShard(ctx, held); err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, `SELECT status, message FROM job_runs WHERE job_id = $1`, off.ID)
	type run struct{ status, message string }
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (run, error) {
		var x run
		return x, r.Scan(&x.status, &x.message)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("the excluded job has no runs: its fires left no record")
	}
	for _, r := range got {
		if r.status != "SKIPPED" || r.message != "excluded by calendar every-day" {
			t.Errorf("excluded fire recorded as %s %q, want SKIPPED \"excluded by calendar every-day\"", r.status, r.message)
		}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	handed := map[int64]int{}
	for _, r := range out.runs {
		handed[r.JobID]++
	}
	if handed[off.ID] != 0 {
		t.Errorf("%d excluded fires handed to the wheel", handed[off.ID])
	}
	if handed[on.ID] == 0 || countRuns(t, pool, on.ID, "SCHEDULED") == 0 {
		t.Errorf("the job whose include calendar holds today planned nothing to run")
	}
	// A calendar a job names cannot be deleted.
	if err := st.DeleteCalendar(ctx, store.System, "every-day"); err == nil {
		t.Error("deleted a calendar two jobs name")
	}
}

// A workflow's calendars are its row's, judged by the same code as a
// job's: its excluded fires are SKIPPED runs naming the calendar, and
// none is handed on to start.
func TestCalendarExcludesWorkflowFires(t *testing.T) {
	st, pool, p, out := setup(t)
	ctx := context.Background()
	every := calendar.Days{Weekdays: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
	if _, _, err := st.PutCalendar(ctx, store.System, store.Calendar{Name: "closed", Group: "g", Days: every}); err != nil {
		t.Fatal(err)
	}
	node := everySecond("node")
	node.ScheduleType, node.ScheduleExpr = "none", ""
	node, err := st.CreateJob(ctx, store.System, node)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := st.CreateWorkflow(ctx, store.System, store.Workflow{
		Job: store.Job{Group: "g", Name: "flow", ScheduleType: "cron", ScheduleExpr: "* * * * * *", Timezone: "UTC",
			MisfirePolicy: "skip", Enabled: true, ExcludeCalendars: []string{"closed"},
			Labels: map[string]string{"team": "billing"}, Owner: "ana@example.com"},
		Spec:   wfengine.Spec{Nodes: []wfengine.NodeSpec{{Name: "a", JobID: node.ID}}},
		Policy: wfengine.Policy{Overlap: wfengine.OverlapSerial},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetWorkflow(ctx, wf.ID); err != nil || got.Owner != "ana@example.com" || got.Labels["team"] != "billing" ||
		len(got.ExcludeCalendars) != 1 {
		t.Fatalf("workflow read back: %+v, %v; want its owner, labels and calendar", got.Job, err)
	}
	if _, err := p.PlanShard(ctx, held); err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, `SELECT status, message FROM job_runs WHERE job_id = $1`, wf.ID)
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var status, message string
		err := r.Scan(&status, &message)
		return status + " " + message, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 {
		t.Fatal("the excluded workflow has no runs: its fires left no record")
	}
	for _, m := range msgs {
		if m != "SKIPPED excluded by calendar closed" {
			t.Errorf("excluded workflow fire recorded as %q, want SKIPPED \"excluded by calendar closed\"", m)
		}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, r := range out.runs {
		if r.JobID == wf.ID {
			t.Fatalf("an excluded workflow fire was handed on: %+v", r)
		}
	}
}
