package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/worker"
)

// fires records what handlers saw, by handler name.
type fires struct {
	mu   sync.Mutex
	jobs map[string][]worker.Job
}

func (f *fires) add(j *worker.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs == nil {
		f.jobs = map[string][]worker.Job{}
	}
	f.jobs[j.Handler] = append(f.jobs[j.Handler], *j)
}

func (f *fires) get(handler string) []worker.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]worker.Job(nil), f.jobs[handler]...)
}

func runsOf(t *testing.T, api *client.Client, jobID int64) []apiv1.Run {
	t.Helper()
	l, err := api.ListRuns(context.Background(), jobID, client.ListRunsOptions{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return l.Runs
}

func finished(runs []apiv1.Run) []apiv1.Run {
	var out []apiv1.Run
	for _, r := range runs {
		switch r.Status {
		case "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "SKIPPED", "DISCARDED", "EXPIRED", "LOST":
			out = append(out, r)
		}
	}
	return out
}

// The vertical slice: a job fires every second, a worker runs it, and the
// result lands in PostgreSQL; manual triggers, failures, timeouts and
// disabling behave as a user expects.
func TestVerticalSlice(t *testing.T) {
	t.Parallel()
	var seen fires
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("tick", func(ctx context.Context, j *worker.Job) error { seen.add(j); return nil })
		w.Handle("echo", func(ctx context.Context, j *worker.Job) error { seen.add(j); return nil })
		w.Handle("boom", func(ctx context.Context, j *worker.Job) error { return errors.New("disk full on /data") })
		w.Handle("slow", func(ctx context.Context, j *worker.Job) error {
			<-ctx.Done()
			return ctx.Err()
		})
	})
	ctx := context.Background()
	api := sys.api

	t.Run("every second", func(t *testing.T) {
		job := createJob(t, api, apiv1.JobSpec{Group: "g", Name: "tick", Handler: "tick",
			ScheduleType: "cron", ScheduleExpr: "@every 1s"})
		start := time.Now()
		var runs []apiv1.Run
		testwait.Eventually(t, 6*time.Second, "5 SUCCEEDED runs of an @every 1s job", func() bool {
			runs = finished(runsOf(t, api, job.ID))
			return len(runs) >= 5
		})
		if took := time.Since(start); took > 6*time.Second {
			t.Fatalf("5 runs took %s", took)
		}
		// Newest first: scheduled times one second apart, all SUCCEEDED.
		for i, r := range runs {
			if r.Status != "SUCCEEDED" {
				t.Errorf("run %d: status %s (%s), want SUCCEEDED", r.ID, r.Status, r.Message)
			}
			if r.StartedAt == nil || r.FinishedAt == nil {
				t.Errorf("run %d: missing started/finished time: %+v", r.ID, r)
			}
			if i > 0 {
				if gap := runs[i-1].ScheduledAt.Sub(r.ScheduledAt); gap != time.Second {
					t.Errorf("runs %d and %d scheduled %s apart, want 1s", r.ID, runs[i-1].ID, gap)
				}
			}
		}
		// TRIGGERED is recorded in batches after the publish ack, so a fast
		// worker's result may land first; the trigger's time and stream
		// sequence follow shortly after and never undo the final status.
		testwait.Eventually(t, 5*time.Second, "trigger time and stream sequence recorded", func() bool {
			for _, r := range runs {
				got, err := api.GetRun(ctx, r.ID)
				if err != nil || got.TriggeredAt == nil || got.StreamSeq == nil || got.Status != "SUCCEEDED" {
					return false
				}
			}
			return true
		})
		if _, err := api.DisableJob(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("manual trigger delivers params", func(t *testing.T) {
		job := createJob(t, api, apiv1.JobSpec{Group: "g", Name: "echo", Handler: "echo",
			ScheduleType: "none", Params: "default"})
		p := `{"file":"report.csv"}`
		run := trigger(t, api, job.ID, &p)
		if run.TriggerType != "manual" {
			t.Errorf("trigger type %q, want manual", run.TriggerType)
		}
		waitStatus(t, api, run.ID, "SUCCEEDED", 10*time.Second)
		got := seen.get("echo")
		if len(got) != 1 || got[0].Params != p || got[0].RunID != run.ID {
			t.Fatalf("handler saw %+v, want one run %d with params %s", got, run.ID, p)
		}
	})

	// A run that fails says why: the handler's error, or that no worker
	// has its handler.
	for _, tc := range []struct{ name, job, handler, why string }{
		{"handler error ends FAILED with its message", "boom", "boom", "disk full on /data"},
		{"unknown handler ends FAILED with the reason", "nohandler", "does-not-exist", "does-not-exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := createJob(t, api, apiv1.JobSpec{Group: "g", Name: tc.job, Handler: tc.handler, ScheduleType: "none"})
			r := waitStatus(t, api, trigger(t, api, job.ID, nil).ID, "FAILED", 10*time.Second)
			if !strings.Contains(r.Message, tc.why) {
				t.Errorf("message %q does not say %q", r.Message, tc.why)
			}
		})
	}

	t.Run("timeout ends TIMED_OUT", func(t *testing.T) {
		job := createJob(t, api, apiv1.JobSpec{Group: "g", Name: "slow", Handler: "slow",
			ScheduleType: "none", Timeout: apiv1.Duration(300 * time.Millisecond)})
		run := trigger(t, api, job.ID, nil)
		r := waitStatus(t, api, run.ID, "TIMED_OUT", 10*time.Second)
		if d := r.FinishedAt.Sub(*r.StartedAt); d < 300*time.Millisecond || d > 5*time.Second {
			t.Errorf("timed out after %s, want about 300ms", d)
		}
	})
}

// A disabled job stops firing: no run is scheduled after the disable.
func TestDisabledJobStopsFiring(t *testing.T) {
	t.Parallel()
	var seen fires
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("tick", func(ctx context.Context, j *worker.Job) error { seen.add(j); return nil })
	})
	ctx := context.Background()
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "tick", Handler: "tick",
		ScheduleType: "cron", ScheduleExpr: "@every 1s"})
	testwait.Eventually(t, 10*time.Second, "2 runs", func() bool { return len(finished(runsOf(t, sys.api, job.ID))) >= 2 })
	if _, err := sys.api.DisableJob(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	disabledAt := time.Now()
	before := len(runsOf(t, sys.api, job.ID))
	// Wait until three fire times have passed since the disable, observed
	// through a second job that keeps firing (no bare sleep).
	other := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "witness", Handler: "tick",
		ScheduleType: "cron", ScheduleExpr: "@every 1s"})
	testwait.Eventually(t, 15*time.Second, "3 runs of the witness job", func() bool { return len(finished(runsOf(t, sys.api, other.ID))) >= 3 })
	runs := runsOf(t, sys.api, job.ID)
	if len(runs) != before {
		t.Fatalf("disabled job has %d runs, had %d when disabled", len(runs), before)
	}
	for _, r := range runs {
		if r.ScheduledAt.After(disabledAt) {
			t.Errorf("run %d scheduled at %s, after the disable at %s", r.ID, r.ScheduledAt, disabledAt)
		}
		if r.Status == "SCHEDULED" {
			t.Errorf("run %d still SCHEDULED after disable", r.ID)
		}
	}
}

// Bad input answers 400 with a message that says what is wrong; a missing
// token answers 401.
func TestAPIRejectsBadInput(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("h", func(context.Context, *worker.Job) error { return nil })
	})
	ctx := context.Background()
	cases := []struct {
		name string
		spec apiv1.JobSpec
		want string
	}{
		{"bad cron", apiv1.JobSpec{Group: "g", Name: "a", Handler: "h", ScheduleType: "cron", ScheduleExpr: "61 * * * * *"}, "cron"},
		{"unknown time zone", apiv1.JobSpec{Group: "g", Name: "a", Handler: "h", ScheduleType: "cron", ScheduleExpr: "@every 1s", Timezone: "Mars/Olympus"}, "Mars/Olympus"},
		{"unknown group", apiv1.JobSpec{Group: "nope", Name: "a", Handler: "h", ScheduleType: "none"}, `unknown group "nope"`},
		{"oversize params", apiv1.JobSpec{Group: "g", Name: "a", Handler: "h", ScheduleType: "none", Params: strings.Repeat("x", 64<<10+1)}, "more than the limit of 65536"},
		{"unknown schedule type", apiv1.JobSpec{Group: "g", Name: "a", Handler: "h", ScheduleType: "hourly"}, "hourly"},
		{"missing handler", apiv1.JobSpec{Group: "g", Name: "a", ScheduleType: "none"}, "handler is required"},
		{"bad misfire policy", apiv1.JobSpec{Group: "g", Name: "a", Handler: "h", ScheduleType: "none", MisfirePolicy: "sometimes"}, "misfire_policy"},
		{"once in the past", apiv1.JobSpec{Group: "g", Name: "a", Handler: "h", ScheduleType: "once", ScheduleExpr: "2001-01-01T00:00:00Z"}, "in the past"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := sys.api.CreateJob(ctx, c.spec)
			var ae *client.APIError
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %v, want a 400", err)
			}
			if !strings.Contains(ae.Message, c.want) {
				t.Errorf("message %q does not mention %q", ae.Message, c.want)
			}
		})
	}

	t.Run("unknown field", func(t *testing.T) {
		resp := post(t, sys.url+"/api/v1/jobs", testToken, `{"group":"g","name":"a","handler":"h","schedule_type":"none","shedule_expr":"x"}`)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("no token", func(t *testing.T) {
		resp := post(t, sys.url+"/api/v1/jobs", "", `{}`)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", resp.StatusCode)
		}
	})
	t.Run("unknown job", func(t *testing.T) {
		_, err := sys.api.GetJob(ctx, 999999)
		if !isAPIError(err, http.StatusNotFound) {
			t.Fatalf("got %v, want a 404", err)
		}
	})
}

func post(t *testing.T, url, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", fmt.Sprintf("Bearer %s", token))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// fix_delay: each next fire is planned the delay after the previous run
// ended, not on a fixed rate.
func TestFixDelay(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("slow", func(ctx context.Context, j *worker.Job) error {
			select {
			case <-time.After(700 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	})
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "delay", Handler: "slow",
		ScheduleType: "fix_delay", ScheduleExpr: "1s"})
	var runs []apiv1.Run
	testwait.Eventually(t, 15*time.Second, "3 finished runs", func() bool {
		runs = finished(runsOf(t, sys.api, job.ID))
		return len(runs) >= 3
	})
	// Newest first: each run is scheduled exactly 1s after the previous
	// one finished (so about 1.7s apart, not 1s).
	for i := 0; i+1 < len(runs); i++ {
		prev, next := runs[i+1], runs[i]
		if gap := next.ScheduledAt.Sub(*prev.FinishedAt); gap != time.Second {
			t.Errorf("run %d scheduled %s after run %d finished, want exactly 1s", next.ID, gap, prev.ID)
		}
		if apart := next.ScheduledAt.Sub(prev.ScheduledAt); apart < 1500*time.Millisecond {
			t.Errorf("runs %d and %d scheduled %s apart, want at least 1.5s (delay after a 700ms run)", prev.ID, next.ID, apart)
		}
	}
}
