package scheduler

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/results"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// metrics are what an operator pages on: fire lag (are we late?), planning
// lag per shard (is a shard stuck?), planned versus published (are we
// keeping up?), owned shards and lease changes (is ownership flapping?),
// the wheel's size, and outcomes: runs by final status, how late they
// start and how long they take, per group (docs/metrics.md).
type metrics struct {
	planned      prometheus.Counter
	published    prometheus.Counter
	fireLag      prometheus.Histogram
	applied      *prometheus.CounterVec
	finished     *prometheus.CounterVec
	startLag     *prometheus.HistogramVec
	duration     *prometheus.HistogramVec
	leaseChanges *prometheus.CounterVec
	rerouted     prometheus.Counter
	held         prometheus.Counter
	lag          *planningLag
	workflowRuns *prometheus.CounterVec
	nodeWait     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		planned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_runs_planned_total", Help: "Runs planned or recovered and handed to the wheel.",
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
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_runs_finished_total", Help: "Runs that reached a final status through an event, by group and status.",
		}, []string{"group", "status"}),
		startLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "jetjob_run_start_lag_seconds",
			Help:    "Run started minus scheduled time, observed when the start is recorded, by group.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"group"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "jetjob_run_duration_seconds",
			Help:    "Run finished minus started time, observed when the final status is recorded, by group.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"group"}),
		leaseChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_shard_lease_changes_total", Help: "Shard leases acquired or lost by this scheduler.",
		}, []string{"change"}),
		rerouted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_triggers_rerouted_total", Help: "Directed triggers of dead workers moved to their group's shared queue.",
		}),
		held: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "jetjob_planning_held_seconds_total",
			Help: "Seconds planning waited for dispatch or the events applier to catch up (backpressure).",
		}),
		lag: &planningLag{last: map[int]time.Time{}},
		workflowRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_workflow_runs_total",
			Help: "Workflow runs ended by this scheduler, by final status (a run retried and ended again counts again).",
		}, []string{"status"}),
		nodeWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "jetjob_workflow_node_wait_seconds",
			Help:    "Workflow node run started minus ready (created, or due for a retry), observed when its start is recorded.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
	}
	reg.MustRegister(m.planned, m.published, m.fireLag, m.applied, m.finished, m.startLag, m.duration,
		m.leaseChanges, m.rerouted, m.held, m.workflowRuns, m.nodeWait)
	return m
}

// register adds the metrics that read live state once the parts exist.
func (m *metrics) register(reg prometheus.Registerer, wheelLen func() int, held func() []lease.Lease) {
	m.lag.held = held
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "jetjob_wheel_runs", Help: "Planned runs held in memory awaiting their fire time.",
		}, func() float64 { return float64(wheelLen()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "jetjob_owned_shards", Help: "Shards this scheduler holds a valid lease on.",
		}, func() float64 { return float64(len(held())) }),
		m.lag,
	)
}

// registerDispatchLag adds dispatch's lag, one of those planning waits
// for (planner/admit.go; the others are the backlog sampler's).
func (m *metrics) registerDispatchLag(reg prometheus.Registerer, lag func() time.Duration) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "jetjob_dispatch_lag_seconds",
		Help: "How long the oldest due run has waited in the wheel to be published (0 when none waits).",
	}, func() float64 { return lag().Seconds() }))
}

func (m *metrics) observeHeld(d time.Duration) { m.held.Add(d.Seconds()) }

func (m *metrics) observeFire(_ runs.Planned, lag time.Duration) {
	m.published.Inc()
	m.fireLag.Observe(lag.Seconds())
}

func (m *metrics) observeRerouted(n int) { m.rerouted.Add(float64(n)) }

// observeApplied records a committed batch of status changes. Each run
// reaches a final status once (changes are monotonic), so it is counted
// and its duration observed once, by the scheduler whose write moved it.
func (m *metrics) observeApplied(cs []results.Change) {
	for _, c := range cs {
		m.applied.WithLabelValues(string(c.Status)).Inc()
		if c.StartApplied && !c.StartedAt.IsZero() && !c.ScheduledAt.IsZero() {
			lag := max(c.StartedAt.Sub(c.ScheduledAt), 0).Seconds()
			m.startLag.WithLabelValues(c.Group).Observe(lag)
			if c.WorkflowRun != 0 {
				// A node run is created when it becomes ready (its
				// retries: due after their backoff), due at once.
				m.nodeWait.Observe(lag)
			}
		}
		if !c.Status.Terminal() {
			continue
		}
		m.finished.WithLabelValues(c.Group, string(c.Status)).Inc()
		if !c.StartedAt.IsZero() && !c.FinishedAt.IsZero() {
			m.duration.WithLabelValues(c.Group).Observe(max(c.FinishedAt.Sub(c.StartedAt), 0).Seconds())
		}
	}
}

// observeWorkflowsEnded counts workflow runs that ended, by final status,
// once each: every end is reported by the one transaction that made it
// (the applier's, an operation's, the timeout sweep's, a start's), after
// its commit.
func (m *metrics) observeWorkflowsEnded(statuses []string) {
	for _, s := range statuses {
		m.workflowRuns.WithLabelValues(s).Inc()
	}
}

// planningLag reports, per owned shard, the time since its last complete
// planning pass: about the planning interval when healthy, growing while a
// shard cannot be planned.
type planningLag struct {
	mu   sync.Mutex
	last map[int]time.Time
	held func() []lease.Lease
}

var planningLagDesc = prometheus.NewDesc("jetjob_shard_planning_lag_seconds",
	"Seconds since the shard's last complete planning pass, per owned shard.", []string{"shard"}, nil)

func (p *planningLag) planned(shard int, at time.Time) {
	p.mu.Lock()
	p.last[shard] = at
	p.mu.Unlock()
}

func (p *planningLag) Describe(ch chan<- *prometheus.Desc) { ch <- planningLagDesc }

func (p *planningLag) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.held() {
		t, ok := p.last[l.Shard]
		lag := 0.0
		if ok {
			lag = now.Sub(t).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(planningLagDesc, prometheus.GaugeValue, lag, strconv.Itoa(l.Shard))
	}
}
