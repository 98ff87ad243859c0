package planner_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
)

// A job with several schedules fires at their union, once at every instant
// two or three of them share: every even second (twice: in UTC and in
// Asia/Kolkata, the same instants), every third second. Its runs are
// exactly those instants, one run each, and what `jobs next` lists is
// what was planned.
func TestUnionOfSchedulesFiresEachInstantOnce(t *testing.T) {
	st, pool, p, _ := setup(t)
	ctx := context.Background()
	j := everySecond("union")
	j.ScheduleExpr = "*/2 * * * * *"
	j.ExtraSchedules = []timing.Part{{Type: "cron", Expr: "*/3 * * * * *", Timezone: "UTC"},
		{Type: "cron", Expr: "*/2 * * * * *", Timezone: "Asia/Kolkata"}}
	j, err := st.CreateJob(ctx, store.System, j)
	if err != nil {
		t.Fatal(err)
	}
	preview, err := st.NextFires(ctx, j, time.Now(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PlanShard(ctx, held); err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, `SELECT scheduled_at FROM job_runs WHERE job_id = $1 ORDER BY scheduled_at`, j.ID)
	times, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		t.Fatal(err)
	}
	if len(times) < 2 {
		t.Fatalf("planned %d runs in the window, want several", len(times))
	}
	for i, at := range times {
		if s := at.Second(); s%2 != 0 && s%3 != 0 {
			t.Errorf("a run at %s: no schedule fires then", at)
		}
		if i > 0 && !at.After(times[i-1]) {
			t.Errorf("two runs at %s", at)
		}
	}
	// Every instant of the union between the first and last run has its run.
	want := 0
	for at := times[0]; !at.After(times[len(times)-1]); at = at.Add(time.Second) {
		if at.Second()%2 == 0 || at.Second()%3 == 0 {
			want++
		}
	}
	if len(times) != want {
		t.Errorf("%d runs from %s to %s, want %d (one per instant of the union): %v", len(times), times[0], times[len(times)-1], want, times)
	}
	for i, at := range preview {
		if i < len(times) && !at.Equal(times[i]) {
			t.Errorf("jobs next listed %v, the planner wrote %v", preview, times[:min(len(times), len(preview))])
			break
		}
	}
}
