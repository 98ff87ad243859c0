package scheduler_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// After runs succeed and fail, /metrics shows what an operator pages on:
// runs by group and final status, one start lag and one duration per run,
// the failed alarm delivery, API requests by route pattern and status
// code (never by raw path), the events backlog and the build.
func TestMetricsFollowRuns(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("ok", func(context.Context, *worker.Job) error { return nil })
		w.Handle("fail", func(context.Context, *worker.Job) error { return errors.New("boom") })
	}, allowEgress("127.0.0.1:1"))
	ok := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "ok", Handler: "ok", ScheduleType: "none"})
	fail := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "fail", Handler: "fail", ScheduleType: "none",
		AlarmWebhook: "http://127.0.0.1:1/refused"})
	for _, id := range []int64{ok.ID, ok.ID, fail.ID} {
		trigger(t, sys.api, id, nil)
	}
	// A missing job and an unknown endpoint: counted under their patterns.
	for _, path := range []string{"/api/v1/jobs/987654", "/api/v1/no-such-thing"} {
		req, _ := http.NewRequest(http.MethodGet, sys.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}

	want := map[string]float64{
		`jetjob_runs_finished_total{group="g",status="SUCCEEDED"}`:                     2,
		`jetjob_runs_finished_total{group="g",status="FAILED"}`:                        1,
		`jetjob_run_start_lag_seconds_count{group="g"}`:                                3,
		`jetjob_run_duration_seconds_count{group="g"}`:                                 3,
		`jetjob_api_requests_total{code="404",method="get",route="/api/v1/jobs/{id}"}`: 1,
		`jetjob_api_requests_total{code="404",method="get",route="/api/"}`:             1,
		`jetjob_events_unapplied`:                                                      0,
		`jetjob_events_oldest_unapplied_seconds`:                                       0,
	}
	var got map[string]float64
	var off []string
	defer func() {
		if t.Failed() {
			t.Logf("/metrics: wrong or missing %v; jetjob series: %v", off, got)
		}
	}()
	testwait.Eventually(t, 30*time.Second, "the documented series in /metrics", func() bool {
		got, off = scrape(t, sys.metrics), nil
		for k, v := range want {
			if g, present := got[k]; !present || g != v {
				off = append(off, k)
			}
		}
		if triggers := sumMatching(got, `jetjob_api_requests_total{code="2`, `route="/api/v1/jobs/{id}/trigger"`); triggers != 3 {
			off = append(off, "3 successful trigger requests")
		}
		if sumMatching(got, `jetjob_alarm_deliveries_total{channel="webhook",result="failed"}`) < 1 {
			off = append(off, "a failed webhook delivery")
		}
		if sumMatching(got, `jetjob_build_info{commit=`, `go_version="go`) != 1 {
			off = append(off, "jetjob_build_info")
		}
		return len(off) == 0
	})
	for k := range got {
		if strings.Contains(k, "987654") || strings.Contains(k, "no-such-thing") {
			t.Errorf("a raw path became a label value: %s", k)
		}
	}
}

// sumMatching adds the series whose key starts with prefix and contains
// every part.
func sumMatching(series map[string]float64, prefix string, parts ...string) float64 {
	var sum float64
next:
	for k, v := range series {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(k, p) {
				continue next
			}
		}
		sum += v
	}
	return sum
}
