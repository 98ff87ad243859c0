package runs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// ClaimAlarms hands a due alarm to one claimer for a minute, with its
// job's targets, and settles the alarm of a deleted job's run as none;
// SetAlarm records the outcome.
func TestClaimAndSetAlarms(t *testing.T) {
	f := setup(t)
	gone := f.job("gone")
	in := f.plan(f.fire(0), runs.Fire{JobID: gone, Group: "g", TriggerType: wire.TriggerSchedule, Status: wire.StatusScheduled,
		ScheduledAt: f.fire(1).ScheduledAt})
	run, orphan := in[0], in[1]
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_runs SET status = 'FAILED', message = 'boom', finished_at = now(),
		alarm_status = 'pending', alarm_next_at = now() WHERE id = ANY($1)`, []int64{run.RunID, orphan.RunID}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET alarm_webhook = 'https://hooks.example/x', alarm_emails = '{ops@example.com}' WHERE id = $1`, f.jobID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `DELETE FROM jobs WHERE id = $1`, gone); err != nil {
		t.Fatal(err)
	}

	due, err := runs.ClaimAlarms(f.ctx, f.pool, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 {
		t.Fatalf("claimed %d alarms, want the one whose job exists: %+v", len(due), due)
	}
	d := due[0]
	if d.RunID != run.RunID || d.JobName != "a" || d.Status != "FAILED" || d.Message != "boom" || !d.ScheduledAt.Equal(run.ScheduledAt) ||
		d.Webhook != "https://hooks.example/x" || !slices.Equal(d.Emails, []string{"ops@example.com"}) || len(d.Sent) != 0 || d.Attempts != 0 {
		t.Fatalf("claimed %+v", d)
	}
	if again, err := runs.ClaimAlarms(f.ctx, f.pool, 10); err != nil || len(again) != 0 {
		t.Fatalf("second claim: %d alarms, %v; want none (claimed for a minute)", len(again), err)
	}
	alarm := func(id int64) (status, msg string, sent []string, attempts int, next time.Time) {
		t.Helper()
		if err := f.pool.QueryRow(f.ctx, `SELECT alarm_status, alarm_error, alarm_sent, alarm_attempts, alarm_next_at FROM job_runs WHERE id = $1`,
			id).Scan(&status, &msg, &sent, &attempts, &next); err != nil {
			t.Fatal(err)
		}
		return
	}
	if status, _, _, _, _ := alarm(orphan.RunID); status != "none" {
		t.Fatalf("alarm of a deleted job's run: %s, want none", status)
	}

	next := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	if err := runs.SetAlarm(f.ctx, f.pool, runs.AlarmOutcome{RunID: run.RunID, ScheduledAt: run.ScheduledAt, Status: "pending",
		Error: "email: refused", Sent: []string{"webhook"}, Attempts: 1, Next: &next}); err != nil {
		t.Fatal(err)
	}
	status, msg, sent, attempts, at := alarm(run.RunID)
	if status != "pending" || msg != "email: refused" || !slices.Equal(sent, []string{"webhook"}) || attempts != 1 || !at.Equal(next) {
		t.Fatalf("alarm after SetAlarm: %s %q %v %d at %v; want pending, the error, webhook sent, 1 attempt, next at %v", status, msg, sent, attempts, at, next)
	}
}
