package planner_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// A job whose params are a template gets them rendered per fire, in its
// zone, stored on each run (what the run page shows) and handed on with
// the run (what the worker gets); a job without one keeps NULL run params.
func TestParamsTemplateRenderedPerFireInTheJobsZone(t *testing.T) {
	st, pool, p, out := setup(t)
	ctx := context.Background()
	const tmpl = `{"at":"{{ .ScheduledAt | date "2006-01-02 15:04:05 MST" }}","prev":"{{ .ScheduledAt | addDays -1 | date "2006-01-02" }}"}`
	zones := []string{"Asia/Tokyo", "America/Los_Angeles"}
	ids := map[int64]string{}
	for _, zone := range zones {
		j := everySecond("t-" + zone)
		j.ScheduleExpr, j.Timezone, j.Params, j.ParamsTemplate = "* * * * * *", zone, tmpl, true
		j, err := st.CreateJob(ctx, store.System, j)
		if err != nil {
			t.Fatal(err)
		}
		ids[j.ID] = zone
	}
	plain, err := st.CreateJob(ctx, store.System, everySecond("plain"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PlanShard(ctx, held); err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, `SELECT job_id, scheduled_at, params FROM job_runs WHERE status = 'SCHEDULED'`)
	type run struct {
		job    int64
		at     time.Time
		params *string
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (run, error) {
		var x run
		return x, r.Scan(&x.job, &x.at, &x.params)
	})
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[int64]int{}
	for _, r := range got {
		zone, templated := ids[r.job]
		if !templated {
			if r.job == plain.ID && r.params != nil {
				t.Errorf("a run of a job without a template has params %q", *r.params)
			}
			continue
		}
		loc, _ := time.LoadLocation(zone)
		local := r.at.In(loc)
		want := `{"at":"` + local.Format("2006-01-02 15:04:05 MST") + `","prev":"` + local.AddDate(0, 0, -1).Format("2006-01-02") + `"}`
		if r.params == nil || *r.params != want {
			t.Errorf("run of job in %s at %s: params %v, want %s", zone, r.at, r.params, want)
		}
		rendered[r.job]++
	}
	for id, zone := range ids {
		if rendered[id] == 0 {
			t.Errorf("the job in %s planned no run", zone)
		}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, r := range out.runs {
		if _, ok := ids[r.JobID]; ok && (len(r.Params) == 0 || r.Params[0] != '{' || r.Params == tmpl) {
			t.Errorf("run %d was handed on with params %q, want them rendered", r.RunID, r.Params)
		}
	}
}
