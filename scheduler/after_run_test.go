package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/smtptest"
	"github.com/jetjob/jetjob/worker"
)

// runsByAttempt returns a job's runs ordered by attempt.
func runsByAttempt(t *testing.T, api *client.Client, jobID int64) []apiv1.Run {
	runs := runsOf(t, api, jobID)
	out := make([]apiv1.Run, len(runs))
	for i := range runs {
		out[len(runs)-1-i] = runs[i]
	}
	return out
}

// A job that fails twice with max_retries=3 and exponential backoff is
// retried at the expected times and succeeds on its third attempt; no
// alarm is raised (its alarm_webhook, whose port is closed, is never
// queued: there is no delivery to fail).
func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("flaky", func(ctx context.Context, j *worker.Job) error {
			if calls.Add(1) <= 2 {
				return fmt.Errorf("attempt %d failed", j.Attempt)
			}
			return nil
		})
	}, allowEgress("127.0.0.1:1"))
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "flaky", Handler: "flaky", ScheduleType: "none",
		MaxRetries: 3, RetryBackoff: "exponential", RetryInitial: apiv1.Duration(500 * time.Millisecond),
		AlarmWebhook: "http://127.0.0.1:1/never-called"})
	trigger(t, sys.api, job.ID, nil)
	var runs []apiv1.Run
	testwait.Eventually(t, 20*time.Second, "a third attempt that succeeds", func() bool {
		runs = runsByAttempt(t, sys.api, job.ID)
		return len(runs) == 3 && runs[2].Status == "SUCCEEDED"
	})
	for i, r := range runs {
		if r.Attempt != i {
			t.Errorf("run %d has attempt %d, want %d", r.ID, r.Attempt, i)
		}
		if i > 0 {
			if r.TriggerType != "retry" || r.RetryOf == nil || *r.RetryOf != runs[i-1].ID {
				t.Errorf("run %d: trigger %s retry_of %v, want retry of run %d", r.ID, r.TriggerType, r.RetryOf, runs[i-1].ID)
			}
			// Backoff: 500ms × 2^(attempt-1), plus up to 20 % jitter.
			base := 500 * time.Millisecond << (i - 1)
			gap := r.ScheduledAt.Sub(*runs[i-1].FinishedAt)
			if gap < base || gap > base*12/10+time.Millisecond {
				t.Errorf("attempt %d scheduled %s after the previous one ended, want %s to %s", i, gap, base, base*12/10)
			}
			// Never before its backoff time. How late after it depends on
			// the machine's load (the failure's event applied, the retry
			// planned, fired and taken), so the bound is the system's own:
			// later than the misfire threshold is a misfire.
			if late := r.StartedAt.Sub(r.ScheduledAt); late < 0 || late > planner.DefaultMisfireThreshold {
				t.Errorf("attempt %d started %s after its backoff time, want 0 to %s", i, late, planner.DefaultMisfireThreshold)
			}
		}
	}
	alerts, err := sys.api.ListAlerts(t.Context(), "g", false, 10)
	if err != nil || len(alerts) != 0 {
		t.Errorf("alerts %+v (%v), want none: no attempt was the last", alerts, err)
	}
}

// With every attempt failing, exactly one alarm goes out per channel of
// the job's alarm fields, through the alert outbox (their managed rule,
// docs/alerts.md "Per-job alarm fields"): the webhook with the notice's
// JSON and a valid signature with the group's secret, and one email.
func TestAlarmAfterLastAttempt(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	groupSecret, err := alarm.GroupSecret(secret, "g") // the secret group g's receivers hold
	if err != nil {
		t.Fatal(err)
	}
	var hooks []alarm.Notice
	var hookMu sync.Mutex
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := alarm.VerifyWebhook(groupSecret, r.Header, body, time.Minute); err != nil {
			t.Errorf("webhook does not verify: %v", err)
		}
		var a alarm.Notice
		if err := json.Unmarshal(body, &a); err != nil {
			t.Errorf("webhook body %s: %v", body, err)
		}
		hookMu.Lock()
		hooks = append(hooks, a)
		hookMu.Unlock()
	}))
	defer hook.Close()
	mail := smtptest.Start(t, smtptest.Options{})

	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("broken", func(ctx context.Context, j *worker.Job) error {
			return errors.New("database unreachable")
		})
	}, func(c *systemConfig) {
		c.Alarm = alarm.Config{WebhookSecret: secret, ConsoleURL: "https://jetjob.example",
			SMTP: alarm.SMTP{Host: mail.IP.String(), Port: mail.Port, From: "jetjob@example.com"}}
	}, allowEgress(hook.Listener.Addr().String()))
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "broken", Handler: "broken", ScheduleType: "none",
		MaxRetries: 2, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(200 * time.Millisecond),
		AlarmWebhook: hook.URL, AlarmEmails: []string{"ops@example.com"}})
	trigger(t, sys.api, job.ID, nil)
	var runs []apiv1.Run
	var alert *apiv1.Alert
	testwait.Eventually(t, 20*time.Second, "the last attempt's alarm sent on both channels", func() bool {
		alerts, err := sys.api.ListAlerts(t.Context(), "g", false, 10)
		if err != nil || len(alerts) != 1 {
			return false
		}
		if alert, err = sys.api.GetAlert(t.Context(), alerts[0].ID); err != nil || len(alert.Deliveries) != 2 {
			return false
		}
		for _, d := range alert.Deliveries {
			if d.State != "sent" {
				return false
			}
		}
		return true
	})
	runs = runsByAttempt(t, sys.api, job.ID)
	if len(runs) != 3 || alert.Count != 1 || alert.LastRunID != runs[2].ID {
		t.Fatalf("runs %d, alert %+v; want 3 runs and the alert of the last only (retries remained before it)", len(runs), alert)
	}
	hookMu.Lock()
	defer hookMu.Unlock()
	if len(hooks) != 1 {
		t.Fatalf("%d webhook calls, want exactly 1", len(hooks))
	}
	a := hooks[0]
	if a.Event != alarm.EventRetriesExhausted || a.RunID != runs[2].ID || a.JobID != job.ID || a.Status != "FAILED" || a.Attempt != 2 ||
		!strings.Contains(a.Message, "database unreachable") || a.ConsoleLink != fmt.Sprintf("https://jetjob.example/runs/%d", runs[2].ID) {
		t.Errorf("webhook payload %+v", a)
	}
	msgs := mail.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d emails, want exactly 1", len(msgs))
	}
	if m := msgs[0].Data; !strings.Contains(m, "To: <ops@example.com>") || !strings.Contains(m, "database unreachable") ||
		!strings.Contains(m, "Subject: [jetjob] retries_exhausted: job broken") {
		t.Errorf("email:\n%s", m)
	}
}

// Children run after their parent succeeds, never after it fails; a cycle
// is refused with 400.
func TestChildJobs(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	var childRuns atomic.Int64
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("parent", func(ctx context.Context, j *worker.Job) error {
			if fail.Load() {
				return errors.New("parent failed")
			}
			return nil
		})
		w.Handle("child", func(ctx context.Context, j *worker.Job) error { childRuns.Add(1); return nil })
	})
	ctx := context.Background()
	child := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "child", Handler: "child", ScheduleType: "none"})
	parent := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "parent", Handler: "parent", ScheduleType: "none",
		ChildJobIDs: []int64{child.ID}})
	pr := trigger(t, sys.api, parent.ID, nil)
	var cr []apiv1.Run
	testwait.Eventually(t, 10*time.Second, "the child run to succeed", func() bool {
		cr = runsOf(t, sys.api, child.ID)
		return len(cr) == 1 && cr[0].Status == "SUCCEEDED"
	})
	if cr[0].TriggerType != "parent" || cr[0].ParentRun == nil || *cr[0].ParentRun != pr.ID {
		t.Errorf("child run %+v: want trigger type parent linked to run %d", cr[0], pr.ID)
	}

	fail.Store(true)
	failed := trigger(t, sys.api, parent.ID, nil)
	waitStatus(t, sys.api, failed.ID, "FAILED", 10*time.Second)
	// The results applier creates children in the same transaction as it
	// records the parent's end: once FAILED is visible, a child would be too.
	if n := len(runsOf(t, sys.api, child.ID)); n != 1 {
		t.Fatalf("child has %d runs after the parent failed, want still 1", n)
	}
	if childRuns.Load() != 1 {
		t.Fatalf("child handler ran %d times, want 1", childRuns.Load())
	}

	// child → parent would close a cycle.
	spec := child.JobSpec
	spec.ChildJobIDs = []int64{parent.ID}
	spec.Version = child.Version
	_, err := sys.api.UpdateJob(ctx, child.ID, spec)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || !strings.Contains(ae.Message, "cycle") {
		t.Fatalf("closing a cycle: %v, want 400 naming the cycle", err)
	}
}

// PostgreSQL is stopped while 100 runs finish: their results wait in
// JETJOB_EVENTS and are all applied when it returns, each run ending
// SUCCEEDED, each handler having run once.
func TestResultsSurvivePostgresOutage(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var started, finished atomic.Int64
	// Its own server: the outage would cut off every test beside it.
	pg, dbURL := pgtest.OwnServer(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("wait", func(ctx context.Context, j *worker.Job) error {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			finished.Add(1)
			return nil
		})
	}, func(c *systemConfig) { c.Pool = pool })
	ctx := context.Background()
	// 100 jobs, one run each: runs of one job would wait for each other
	// (block strategy serial).
	for i := range 100 {
		job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: fmt.Sprint("wait-", i), Handler: "wait", ScheduleType: "none"})
		trigger(t, sys.api, job.ID, nil)
	}
	testwait.Eventually(t, 30*time.Second, "100 handlers running", func() bool { return started.Load() == 100 })
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	close(release)
	testwait.Eventually(t, 30*time.Second, "100 handlers finished", func() bool { return finished.Load() == 100 })
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "100 runs SUCCEEDED", func() bool {
		var n int
		err := sys.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE status = 'SUCCEEDED'`).Scan(&n)
		return err == nil && n == 100
	})
	var other int
	if err := sys.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE status <> 'SUCCEEDED'`).Scan(&other); err != nil {
		t.Fatal(err)
	}
	if other != 0 || started.Load() != 100 {
		t.Fatalf("%d runs not SUCCEEDED, handlers started %d times: want 0 and 100", other, started.Load())
	}
}
