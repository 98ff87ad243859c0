package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// allowEgress lets the scheduler's user-chosen connections (alarm
// webhooks) reach targets its egress policy denies by default: tests'
// own receivers on 127.0.0.1.
func allowEgress(targets ...string) func(*systemConfig) {
	return func(c *systemConfig) { c.Egress.Allow = append(c.Egress.Allow, targets...) }
}

// Even with all of loopback allowed, the scheduler's own API is never an
// alarm target: refused when the job is saved if named by its address,
// refused at connect time if named through a host name. An internal
// receiver that is allowed and fails is recorded with its status code,
// never with what it answered.
func TestAlarmWebhookEgress(t *testing.T) {
	t.Parallel()
	const secretBody = "internal-only: db password hunter2"
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, secretBody, http.StatusInternalServerError)
	}))
	defer internal.Close()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("broken", func(context.Context, *worker.Job) error { return errors.New("broken") })
	}, allowEgress("127.0.0.0/8"))
	ctx := context.Background()
	_, apiPort, _ := net.SplitHostPort(strings.TrimPrefix(sys.url, "http://"))
	spec := func(name, hook string) apiv1.JobSpec {
		return apiv1.JobSpec{Group: "g", Name: name, Handler: "broken", ScheduleType: "none", AlarmWebhook: hook}
	}

	_, err := sys.api.CreateJob(ctx, spec("self-by-address", sys.url+"/api/v1/jobs"))
	if err == nil || !strings.Contains(err.Error(), "own listener") {
		t.Errorf("webhook to the scheduler's own API by address: %v, want refused as its own listener", err)
	}

	failing := map[string]string{ // job name -> the error its alarm's delivery must record
		"self-by-name": "denied by egress policy (this process's own listener)",
		"internal-500": "HTTP 500 Internal Server Error",
	}
	hooks := map[string]string{
		"self-by-name": fmt.Sprintf("http://localhost:%s/api/v1/jobs", apiPort),
		"internal-500": internal.URL + "/hook",
	}
	for name, want := range failing {
		job := createJob(t, sys.api, spec(name, hooks[name]))
		trigger(t, sys.api, job.ID, nil)
		// The job's alarm is a delivery of its managed rule's alert;
		// its first attempt records the failure.
		var got string
		testwait.Eventually(t, 30*time.Second, name+"'s alarm to fail", func() bool {
			alerts, err := sys.api.ListAlerts(ctx, "g", false, 50)
			if err != nil {
				return false
			}
			for _, a := range alerts {
				if a.JobID != job.ID {
					continue
				}
				full, err := sys.api.GetAlert(ctx, a.ID)
				if err != nil || len(full.Deliveries) != 1 || len(full.Deliveries[0].Attempts) == 0 {
					return false
				}
				got = full.Deliveries[0].Attempts[0].Error
				return full.Deliveries[0].Attempts[0].Result == "failed"
			}
			return false
		})
		if got != want {
			t.Errorf("%s: the delivery's error %q, want %q", name, got, want)
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("%s: the delivery's error shows the internal target's body: %q", name, got)
		}
	}
}
