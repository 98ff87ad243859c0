package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// History imported from another scheduler: the runs appear as finished
// runs of their job marked import, a repeated import adds nothing, a day
// already rolled up counts them at once, a day whose runs were dropped
// after its rollup takes none (its statistics would be replaced by theirs
// alone), and what is not a finished run in the past is refused.
func TestImportRuns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	job := e.job("a", "echo")
	day := func(n int) time.Time { return store.DayStart(time.Now()).AddDate(0, 0, -n) }
	run := func(at time.Time, status string, shard ...int) apiv1.ImportedRun {
		fin := at.Add(3 * time.Second)
		r := apiv1.ImportedRun{JobID: job.ID, ScheduledAt: at, StartedAt: &at, FinishedAt: &fin, Status: status,
			WorkerID: "10.0.0.5:9999", Message: "imported from xxl-job log 7"}
		if len(shard) == 2 {
			r.ShardIndex, r.ShardTotal = shard[0], shard[1]
		}
		return r
	}
	post := func(runs ...apiv1.ImportedRun) (int, apiv1.RunImportResult, string) {
		t.Helper()
		code, body := e.do("admin", "POST", "/api/v1/runs/import", apiv1.RunImport{Runs: runs})
		var res apiv1.RunImportResult
		if code == http.StatusOK {
			if err := json.Unmarshal(body, &res); err != nil {
				t.Fatal(err)
			}
		}
		return code, res, string(body)
	}
	rolledUp := func(d time.Time) {
		t.Helper()
		if err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error { _, _, err := store.RollUpDay(ctx, tx, d); return err }); err != nil {
			t.Fatal(err)
		}
	}
	statRuns := func(d time.Time) (n int64) {
		t.Helper()
		if err := e.pool.QueryRow(ctx, `SELECT coalesce(sum(runs), 0) FROM run_stats_daily WHERE day = $1 AND job_id = $2`, d, job.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	d3, d2, d1 := day(3), day(2), day(1)
	rolledUp(d2) // a day the maintenance loop rolled up before the import
	batch := []apiv1.ImportedRun{run(d3.Add(2*time.Hour), "SUCCEEDED"), run(d3.Add(3*time.Hour), "FAILED"),
		run(d2.Add(time.Hour), "TIMED_OUT"), run(d2.Add(time.Hour), "SUCCEEDED", 1, 2)}
	code, res, body := post(batch...)
	if code != http.StatusOK || res.Imported != 4 || res.Existing != 0 || res.TooOld != 0 {
		t.Fatalf("import: %d %s", code, body)
	}
	if _, res, _ = post(batch...); res.Imported != 0 || res.Existing != 4 {
		t.Errorf("the same import again: %+v, want 4 existing", res)
	}
	code, body2 := e.do("admin", "GET", fmt.Sprintf("/api/v1/audit?target=job:%d&action=runs.import", job.ID), nil)
	var audit apiv1.AuditList
	if err := json.Unmarshal(body2, &audit); code != http.StatusOK || err != nil || len(audit.Entries) != 1 || audit.Entries[0].Actor != "admin" {
		t.Errorf("audit of the import: %d %s, want one entry by admin (the repeat wrote nothing)", code, body2)
	}
	code, body2 = e.do("admin", "GET", fmt.Sprintf("/api/v1/runs?job=%d&trigger_type=import", job.ID), nil)
	var list apiv1.RunList
	if err := json.Unmarshal(body2, &list); code != http.StatusOK || err != nil {
		t.Fatalf("search: %d %s", code, body2)
	}
	if len(list.Runs) != 4 {
		t.Fatalf("%d imported runs found, want 4: %s", len(list.Runs), body2)
	}
	for _, r := range list.Runs {
		if r.TriggerType != "import" || r.WorkerID != "10.0.0.5:9999" || r.FinishedAt == nil || r.Message == "" {
			t.Errorf("imported run %+v", r)
		}
	}
	if n := statRuns(d2); n != 2 {
		t.Errorf("day %s, rolled up before the import, counts %d runs of the job, want its 2 imported ones", d2.Format(time.DateOnly), n)
	}

	// A day rolled up and then dropped (older than the retention).
	e.job("a", "echo") // another job's run on d1, rolled up, then dropped
	if _, err := e.pool.Exec(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at)
		VALUES ($1, 'a', $2, 'schedule', 'SUCCEEDED', $3)`, e.plain.ID, e.plain.Shard, d1.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rolledUp(d1)
	if _, err := e.pool.Exec(ctx, `DELETE FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2`, d1, d1.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if _, res, body = post(run(d1.Add(2*time.Hour), "SUCCEEDED")); res.TooOld != 1 || res.Imported != 0 {
		t.Errorf("a run of a dropped day: %s, want too_old 1", body)
	}

	// Daily totals without jobs (xxl_job_log_report) fill a day jetjob
	// knows nothing of, not one it has runs of; that day then takes no
	// runs (its figures would be counted twice).
	d5 := day(5)
	code, body3 := e.do("admin", "POST", "/api/v1/stats/import", apiv1.StatsImport{Days: []apiv1.ImportedDay{
		{Day: d5.Format(time.DateOnly), Succeeded: 7, Failed: 2}, {Day: d3.Format(time.DateOnly), Succeeded: 9}}})
	var sres apiv1.StatsImportResult
	if err := json.Unmarshal(body3, &sres); code != http.StatusOK || err != nil || sres.Written != 1 || sres.Skipped != 1 {
		t.Fatalf("stats import: %d %s, want 1 written, 1 skipped", code, body3)
	}
	code, body3 = e.do("admin", "GET", "/api/v1/stats?from="+d5.Format(time.DateOnly)+"&to="+d5.Format(time.DateOnly), nil)
	var stats apiv1.Stats
	if err := json.Unmarshal(body3, &stats); code != http.StatusOK || err != nil {
		t.Fatalf("stats: %d %s", code, body3)
	}
	counts := map[string]int64{}
	for _, r := range stats.Rows {
		counts[r.Status] += r.Runs
	}
	if counts["SUCCEEDED"] != 7 || counts["FAILED"] != 2 {
		t.Errorf("day %s counts %v, want the imported 7 succeeded and 2 failed", d5.Format(time.DateOnly), counts)
	}
	if _, res, body = post(run(d5.Add(time.Hour), "SUCCEEDED")); res.TooOld != 1 {
		t.Errorf("a run on a day of imported totals: %s, want too_old", body)
	}
	if code, body3 = e.do("admin", "POST", "/api/v1/stats/import", apiv1.StatsImport{Days: []apiv1.ImportedDay{
		{Day: time.Now().UTC().Format(time.DateOnly), Succeeded: 1}}}); code != http.StatusBadRequest {
		t.Errorf("totals of today, not over yet: %d %s", code, body3)
	}

	for name, r := range map[string]apiv1.ImportedRun{
		"a run still running":    run(d3, "RUNNING"),
		"a run in the future":    run(time.Now().Add(time.Hour), "SUCCEEDED"),
		"a shard out of range":   run(d3, "SUCCEEDED", 2, 2),
		"an unknown status":      run(d3, "DONE"),
		"finished before it ran": {JobID: job.ID, ScheduledAt: d3, FinishedAt: &d1, StartedAt: &d1, Status: "FAILED"},
	} {
		if name == "finished before it ran" {
			early := d3.Add(-time.Hour)
			r.FinishedAt = &early
		}
		if code, _, body := post(r); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, code, body)
		}
	}
	missing := run(d3, "SUCCEEDED")
	missing.JobID = 1 << 40
	if code, _, body := post(missing); code != http.StatusNotFound {
		t.Errorf("a job that does not exist: %d %s, want 404", code, body)
	}
}
