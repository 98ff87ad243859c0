package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// series gathers c and returns every sample as `name{label="value",…}` →
// value: a counter's or gauge's value, a histogram's observation count.
func series(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[sampleKey(mf.GetName(), m)] = sampleValue(m)
		}
	}
	return out
}

// wantSeries checks that each series in want has its value in c (series
// c has and want does not name are not checked) and returns all of c's.
func wantSeries(t *testing.T, c prometheus.Collector, want map[string]float64) map[string]float64 {
	t.Helper()
	got := series(t, c)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	return got
}

func sampleKey(name string, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestCollectorCountsRuns runs handlers that succeed, fail, hold a slot and
// wait for a serial job's lock, plus a trigger for a handler the worker
// lacks, and checks the series an operator reads: runs by handler and
// status, durations, busy slots, lock waits, pick-up delays, and no event
// left pending.
func TestCollectorCountsRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := make(chan struct{})
	holding := make(chan struct{}, 1)
	r := e.start(Config{Concurrency: 4}, func(w *Worker) {
		w.Handle("ok", func(context.Context, *Job) error { return nil })
		w.Handle("fail", func(context.Context, *Job) error { return errors.New("boom") })
		w.Handle("hold", func(ctx context.Context, _ *Job) error {
			select {
			case holding <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	})
	c := r.w.metrics
	ev := e.events()
	const g = `group="g"`

	e.publish(trigger(1, "ok", ""))
	e.publish(trigger(2, "ok", ""))
	e.publish(trigger(3, "fail", ""))
	e.publish(trigger(4, "nosuch", ""))
	ev.waitFinished(1, 2, 3, 4)

	// Two runs of one serial job: the second waits for the first's lock.
	first, second := trigger(5, "hold", ""), trigger(6, "hold", "")
	second.JobID = first.JobID
	e.publish(first)
	recv(t, "the first serial run holding its slot", holding)
	e.publish(second)
	// Released only once the second run waits for the lock: released
	// earlier, it would find the lock free and observe no wait.
	r.w.signals.locks.Waiting.WaitFor(t, waitLimit, "the second serial run waiting for the lock",
		func(run int64) bool { return run == second.RunID })
	if busy := series(t, c)[`jetjob_worker_slots_busy{`+g+`,lane="shared"}`]; busy != 2 {
		t.Errorf("shared slots busy while the second run waits: %v, want 2", busy)
	}
	close(release)
	ev.waitFinished(5, 6)

	want := map[string]float64{
		`jetjob_worker_runs_started_total{` + g + `,handler="ok"}`:                            2,
		`jetjob_worker_runs_started_total{` + g + `,handler="fail"}`:                          1,
		`jetjob_worker_runs_started_total{` + g + `,handler="hold"}`:                          2,
		`jetjob_worker_runs_finished_total{` + g + `,handler="ok",status="SUCCEEDED"}`:        2,
		`jetjob_worker_runs_finished_total{` + g + `,handler="fail",status="FAILED"}`:         1,
		`jetjob_worker_runs_finished_total{` + g + `,handler="unregistered",status="FAILED"}`: 1,
		`jetjob_worker_runs_finished_total{` + g + `,handler="hold",status="SUCCEEDED"}`:      2,
		`jetjob_worker_run_duration_seconds{` + g + `,handler="ok"}`:                          2,
		`jetjob_worker_run_duration_seconds{` + g + `,handler="hold"}`:                        2,
		`jetjob_worker_job_lock_wait_seconds{` + g + `,handler="hold"}`:                       1,
		`jetjob_worker_trigger_pickup_seconds{` + g + `,lane="shared"}`:                       6,
		`jetjob_worker_slots{` + g + `,lane="shared"}`:                                        4,
		`jetjob_worker_slots{` + g + `,lane="directed"}`:                                      4,
		`jetjob_worker_slots_busy{` + g + `,lane="shared"}`:                                   0,
		`jetjob_worker_events_pending{` + g + `}`:                                             0,
		`jetjob_worker_handlers_abandoned_total{` + g + `}`:                                   0,
	}
	// Every series is updated before a run's processing ends.
	r.waitProcessed(1, 2, 3, 4, 5, 6)
	got := wantSeries(t, c, want)
	for k := range got {
		if strings.Contains(k, "nosuch") {
			t.Errorf("a trigger's unknown handler became a label value: %s", k)
		}
	}
}
