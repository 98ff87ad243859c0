package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/backfill"
	"github.com/jetjob/jetjob/worker"
)

func noopWorker(w *worker.Worker) {
	w.Handle("noop", func(context.Context, *worker.Job) error { return nil })
}

// heldUntil is a handler that runs until release is closed, then
// succeeds, or ends with its context (a kill, the worker stopping).
func heldUntil(release <-chan struct{}) worker.HandlerFunc {
	return func(ctx context.Context, _ *worker.Job) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *system) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// firesAfter reads the scheduled_at of a job's runs after t, in order.
func (s *system) firesAfter(t *testing.T, job int64, after time.Time) []time.Time {
	t.Helper()
	rows, _ := s.pool.Query(context.Background(), `SELECT scheduled_at FROM job_runs
		WHERE job_id = $1 AND scheduled_at > $2 AND trigger_type = 'schedule' ORDER BY scheduled_at`, job, after)
	times, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		t.Fatal(err)
	}
	return times
}

// `jobs next` lists the times the job really fires: for "@every 5s" asked
// in a second whose phase differs from the job's (it used to compute from
// the request's time, so a job created at :22 firing :47, :52 was shown
// :50, :55), and for a jittered job the jittered times.
func TestNextFiresAgreeWithRealFires(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, noopWorker)
	ctx := context.Background()
	every5 := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "every5", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: "@every 5s"})
	jittered := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "jittered", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: "@every 3s", Jitter: apiv1.Duration(time.Second)})
	// Scheduled fires are rows only the planner writes: each shard pass is
	// the moment to look.
	planned := &sys.signals.Planner.ShardPlanned
	var first []time.Time
	planned.WaitUntil(t, 30*time.Second, "the first fire of every5", func() bool {
		first = sys.firesAfter(t, every5.ID, time.Time{})
		return len(first) > 0
	})
	// Ask two seconds into the job's 5-second phase: a wall-clock
	// instant the scenario needs, not something to wait for.
	ask := first[0].Add(2 * time.Second)
	for time.Since(ask) >= time.Second {
		ask = ask.Add(5 * time.Second)
	}
	testwait.SleepUntil(ask)
	for _, j := range []*apiv1.Job{every5, jittered} {
		asked := time.Now()
		next, err := sys.api.NextFires(ctx, j.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Times) != 3 {
			t.Fatalf("job %s: next lists %v, want 3 times", j.Name, next.Times)
		}
		var real []time.Time
		planned.WaitUntil(t, 30*time.Second, j.Name+"'s next 2 real fires", func() bool {
			real = sys.firesAfter(t, j.ID, asked)
			return len(real) >= 2
		})
		for i := range 2 {
			if !real[i].Equal(next.Times[i]) {
				t.Errorf("job %s: next[%d] = %s, but the job fired at %s (fires %v, next %v)",
					j.Name, i, next.Times[i], real[i], real[:2], next.Times)
			}
		}
	}
	// The jitter moved the fires off the schedule's whole seconds.
	off := 0
	for _, at := range sys.firesAfter(t, jittered.ID, time.Time{}) {
		if at.Nanosecond() != 0 {
			off++
		}
	}
	if off == 0 {
		t.Error("no fire of the jittered job is off the whole second")
	}
}

// A daily fire_once job disabled with a note, then re-enabled 200 days
// later (the state set through the database), runs its newest missed fire
// and records the rest, those within max_catchup and those past it, as one
// SKIPPED run. Resumed with catch_up none instead, it records nothing for
// the gap.
func TestReenableAfter200Days(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, noopWorker)
	ctx := context.Background()
	// The job fires daily at the minute two hours ago, so that its
	// newest fire is always missed and well past, whenever the test runs.
	newest := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "daily", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: fmt.Sprintf("0 %d %d * * *", newest.Minute(), newest.Hour()),
		MisfirePolicy: "fire_once", MaxCatchup: 5})
	pause := func(daysAgo int) {
		t.Helper()
		j, err := sys.api.DisableJobWith(ctx, job.ID, apiv1.DisableRequest{Note: "db maintenance"})
		if err != nil {
			t.Fatal(err)
		}
		if j.PausedNote != "db maintenance" || j.PausedAt == nil || j.PausedBy == "" {
			t.Fatalf("disabled job shows paused note %q at %v by %q, want the note, a time and the caller", j.PausedNote, j.PausedAt, j.PausedBy)
		}
		list, err := sys.api.ListJobs(ctx, client.ListJobsOptions{Group: "g"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Jobs) != 1 || list.Jobs[0].PausedNote != "db maintenance" {
			t.Fatalf("job list does not show the note: %+v", list.Jobs)
		}
		if _, err := sys.pool.Exec(ctx, `UPDATE jobs SET next_fire_at = $2 WHERE id = $1`, job.ID, newest.AddDate(0, 0, -daysAgo)); err != nil {
			t.Fatal(err)
		}
	}

	pause(3)
	j, err := sys.api.EnableJobWith(ctx, job.ID, apiv1.EnableRequest{CatchUp: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if j.NextFireAt == nil || !j.NextFireAt.Equal(newest.AddDate(0, 0, 1)) || j.PausedNote != "" || j.PausedAt != nil {
		t.Fatalf("resumed without catch-up: next fire %v (want %s), paused note %q at %v (want cleared)", j.NextFireAt, newest.AddDate(0, 0, 1), j.PausedNote, j.PausedAt)
	}

	pause(200)
	if _, err := sys.api.EnableJobWith(ctx, job.ID, apiv1.EnableRequest{}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, "the catch-up run to succeed", func() bool {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND trigger_type = 'misfire' AND status = 'SUCCEEDED'`, job.ID) == 1
	})
	var ranAt time.Time
	if err := sys.pool.QueryRow(ctx, `SELECT scheduled_at FROM job_runs WHERE job_id = $1 AND trigger_type = 'misfire'`, job.ID).Scan(&ranAt); err != nil {
		t.Fatal(err)
	}
	if !ranAt.Equal(newest) {
		t.Errorf("the catch-up ran the fire of %s, want the newest missed one, %s", ranAt.UTC(), newest)
	}
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SKIPPED'`, job.ID); n != 1 {
		t.Errorf("%d SKIPPED runs, want one for the 200 missed fires before the newest", n)
	}
	var msg string
	if err := sys.pool.QueryRow(ctx, `SELECT message FROM job_runs WHERE job_id = $1 AND status = 'SKIPPED'
		ORDER BY scheduled_at DESC LIMIT 1`, job.ID).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	// 201 daily fires from 200 days ago to today: today's runs, the 200
	// before it are one SKIPPED run.
	if n, _, first, last, ok := policy.ParseSkipped(msg); !ok || n != 200 || !first.Equal(newest.AddDate(0, 0, -200)) || !last.Equal(newest.AddDate(0, 0, -1)) {
		t.Errorf("SKIPPED run's message %q: want 200 missed fires from 200 days ago to yesterday", msg)
	}
	// Neither resume recorded the last days one by one: catch_up none
	// records nothing, and the SKIPPED run (at the first missed fire,
	// 200 days ago) stands for them.
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at < $2 AND scheduled_at > $3`,
		job.ID, newest, newest.AddDate(0, 0, -4)); n != 0 {
		t.Errorf("%d runs recorded for the 3 days before today, want none", n)
	}
}

// A backfill runs every fire of the range once, at its fire time, through
// the normal dispatch path, never more than its in-flight bound at once;
// backfilling the range again runs nothing twice; a cancelled backfill
// writes no further run; bad requests answer 400 naming the field.
func TestBackfill(t *testing.T) {
	t.Parallel()
	const inFlight = 3
	sys := startSystem(t, noopWorker, func(c *systemConfig) {
		c.Backfill = backfill.Config{Interval: 100 * time.Millisecond, PerSecond: 20, InFlight: inFlight}
	})
	ctx := context.Background()
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "minutely", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: "0 * * * * *"})
	now := time.Now().UTC().Truncate(time.Minute)
	from, to := now.Add(-30*time.Minute), now.Add(-10*time.Minute)

	for _, bad := range []struct {
		req  apiv1.BackfillRequest
		want string
	}{
		{apiv1.BackfillRequest{From: to, To: from}, "from"},
		{apiv1.BackfillRequest{From: from, To: now.Add(time.Hour)}, "to"},
		{apiv1.BackfillRequest{From: from, To: to, Max: 5}, "max=5"},
		{apiv1.BackfillRequest{To: to}, "from is required"},
		{apiv1.BackfillRequest{From: from, To: to, Max: backfill.DefaultMax + 1}, "max"},
	} {
		_, err := sys.api.Backfill(ctx, job.ID, bad.req)
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, bad.want) {
			t.Errorf("backfill %+v: %v, want 400 mentioning %q", bad.req, err, bad.want)
		}
	}

	op, err := sys.api.Backfill(ctx, job.ID, apiv1.BackfillRequest{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if op.Planned != 20 || op.State != apiv1.BackfillRunning {
		t.Fatalf("backfill %+v: want 20 planned fires, running", op)
	}
	peak := 0
	wait := func(id int64) *apiv1.Backfill {
		t.Helper()
		var b *apiv1.Backfill
		testwait.Eventually(t, 60*time.Second, "the backfill to complete", func() bool {
			peak = max(peak, sys.count(t, `SELECT count(*) FROM job_runs WHERE backfill_id = $1
				AND status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING')`, id))
			var err error
			if b, err = sys.api.GetBackfill(ctx, id); err != nil {
				t.Fatal(err)
			}
			return b.State != apiv1.BackfillRunning
		})
		return b
	}
	done := wait(op.ID)
	if done.State != apiv1.BackfillCompleted || done.Triggered != 20 || done.Done != 20 || done.Existing != 0 {
		t.Errorf("finished backfill %+v: want completed with 20 triggered and done", done)
	}
	if peak > inFlight {
		t.Errorf("%d runs of the backfill in flight at once, more than its bound %d", peak, inFlight)
	}
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE backfill_id = $1 AND trigger_type = 'backfill'
		AND status = 'SUCCEEDED' AND scheduled_at >= $2 AND scheduled_at < $3 AND extract(second FROM scheduled_at) = 0`,
		op.ID, from, to); n != 20 {
		t.Errorf("%d backfill runs SUCCEEDED at the range's minute marks, want 20", n)
	}

	again, err := sys.api.Backfill(ctx, job.ID, apiv1.BackfillRequest{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if b := wait(again.ID); b.State != apiv1.BackfillCompleted || b.Existing != 20 || b.Triggered != 0 {
		t.Errorf("backfilling the range again: %+v, want completed with 20 existing fires and nothing run", b)
	}

	long, err := sys.api.Backfill(ctx, job.ID, apiv1.BackfillRequest{From: now.Add(-3000 * time.Minute), To: from})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, "the long backfill to trigger a run", func() bool {
		b, err := sys.api.GetBackfill(ctx, long.ID)
		return err == nil && b.Triggered > 0
	})
	cancelled, err := sys.api.CancelBackfill(ctx, long.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.State != apiv1.BackfillCancelled {
		t.Fatalf("cancelled backfill is %s", cancelled.State)
	}
	// A backfill started after the cancel completing shows the runner
	// stepped since; the cancelled one wrote nothing more meanwhile.
	probe, err := sys.api.Backfill(ctx, job.ID, apiv1.BackfillRequest{From: to, To: to.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	wait(probe.ID)
	b, err := sys.api.GetBackfill(ctx, long.ID)
	if err != nil {
		t.Fatal(err)
	}
	written := sys.count(t, `SELECT count(*) FROM job_runs WHERE backfill_id = $1`, long.ID)
	if written != cancelled.Triggered || b.Triggered != cancelled.Triggered || written >= long.Planned {
		t.Errorf("after the cancel: %d runs written, counted %d then %d, of %d planned: want no run written after the cancel",
			written, cancelled.Triggered, b.Triggered, long.Planned)
	}
	list, err := sys.api.ListBackfills(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Backfills) != 4 || list.Backfills[0].ID != probe.ID {
		t.Errorf("job's backfills %+v: want the 4, newest first", list.Backfills)
	}
}
