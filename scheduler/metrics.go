package scheduler

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetjob/jetjob/scheduler/results"
	"github.com/jetjob/jetjob/scheduler/store"
)

// metrics are what an operator pages on: fire lag (are we late?), planned
// versus published (are we keeping up?), the wheel's size, and outcomes.
type metrics struct {
	planned   prometheus.Counter
	published prometheus.Counter
	fireLag   prometheus.Histogram
	applied   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		planned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_runs_planned_total", Help: "Runs planned and handed to the wheel.",
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_triggers_published_total", Help: "Triggers acknowledged by JetStream.",
		}),
		fireLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "jetjob_fire_lag_seconds",
			Help:    "Publish acknowledged minus scheduled time, per trigger.",
			Buckets: []float64{.001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_run_status_changes_total", Help: "Run status changes applied from worker events, by new status.",
		}, []string{"status"}),
	}
	reg.MustRegister(m.planned, m.published, m.fireLag, m.applied)
	return m
}

func (m *metrics) observeFire(_ store.PlannedRun, lag time.Duration) {
	m.published.Inc()
	m.fireLag.Observe(lag.Seconds())
}

func (m *metrics) observeApplied(cs []results.Change) {
	for _, c := range cs {
		m.applied.WithLabelValues(string(c.Status)).Inc()
	}
}
