package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The schedule operation flags reach the job, a disable note is shown and
// cleared, and backfills are started, listed and cancelled by id.
func TestJobsScheduleOps(t *testing.T) {
	r := isolatedAPI(t, "demo")
	start := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	job := adminJSON[apiv1.Job](t, r, "jobs", "create",
		"--group", "demo", "--name", "hourly", "--handler", "h", "--cron", "0 0 * * * *",
		"--jitter", "10s", "--max-catchup", "3", "--misfire-threshold", "1m", "--start-at", start)
	if time.Duration(job.Jitter) != 10*time.Second || job.MaxCatchup != 3 || time.Duration(job.MisfireThreshold) != time.Minute ||
		job.StartAt == nil || job.StartAt.Format(time.RFC3339) != start {
		t.Fatalf("created %+v: the schedule flags did not reach the job", job)
	}
	id := fmt.Sprint(job.ID)

	must(t, r.as(t, bootstrapToken, "", "jobs", "disable", id, "--note", "quarter close"), "disable --note")
	for _, args := range [][]string{{"jobs", "get", id}, {"jobs", "list"}} {
		if res := must(t, r.as(t, bootstrapToken, "", args...), strings.Join(args, " ")); !strings.Contains(res.stdout, "quarter close") {
			t.Errorf("%s does not show the note:\n%s", strings.Join(args, " "), res.stdout)
		}
	}
	got := adminJSON[apiv1.Job](t, r, "jobs", "enable", id, "--catch-up", "none")
	if !got.Enabled || got.PausedNote != "" {
		t.Errorf("enabled job %+v: want enabled with the note cleared", got)
	}
	if res := r.as(t, bootstrapToken, "", "jobs", "enable", id, "--catch-up", "all"); res.code != 2 || !strings.Contains(res.stderr, "--catch-up") {
		t.Errorf("--catch-up all: exit %d, stderr %q; want a usage error naming --catch-up", res.code, res.stderr)
	}

	from := time.Now().Add(-5 * time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if res := r.as(t, bootstrapToken, "", "jobs", "backfill", id, "--from", to, "--to", from); res.code != 2 || !strings.Contains(res.stderr, "--from") {
		t.Errorf("backfill with from after to: exit %d, stderr %q; want a usage error", res.code, res.stderr)
	}
	if res := r.as(t, bootstrapToken, "", "jobs", "backfill", id, "--from", from, "--to", to); res.code != 1 || !strings.Contains(res.stderr, "start_at") {
		t.Errorf("backfill before start_at: exit %d, stderr %q; want the server's refusal", res.code, res.stderr)
	}
	// An empty --start-at clears it.
	must(t, r.as(t, bootstrapToken, "", "jobs", "update", id, "--start-at", ""), "update --start-at ''")
	if res := r.as(t, bootstrapToken, "", "jobs", "backfill", id, "--from", from, "--to", to, "--max", "2"); res.code != 1 || !strings.Contains(res.stderr, "max=2") {
		t.Errorf("backfill of 4 fires with --max 2: exit %d, stderr %q; want the server's refusal naming max", res.code, res.stderr)
	}
	op := adminJSON[apiv1.Backfill](t, r, "jobs", "backfill", id, "--from", from, "--to", to)
	if op.Planned != 4 || op.State != apiv1.BackfillRunning {
		t.Fatalf("backfill %+v: want 4 planned, running", op)
	}
	if res := must(t, r.as(t, bootstrapToken, "", "jobs", "backfills", id), "backfills"); !strings.Contains(res.stdout, fmt.Sprint(op.ID)) {
		t.Errorf("jobs backfills does not list operation %d:\n%s", op.ID, res.stdout)
	}
	res := must(t, r.as(t, bootstrapToken, "", "jobs", "backfill-cancel", fmt.Sprint(op.ID)), "backfill-cancel")
	if !strings.Contains(res.stdout, "cancelled") {
		t.Errorf("backfill-cancel printed:\n%s", res.stdout)
	}
}
