package worker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/joblock"
)

// The worker's Prometheus series (docs/metrics.md lists them with what to
// alert on). They answer what an operator of a group asks of its workers:
// are runs succeeding (runs by handler and status, durations), are the
// workers saturated (slots busy against slots, how long triggers wait to
// be picked up), are block strategies holding runs back (lock waits), and
// are results stuck on their way to JetStream (events pending).
//
// Every series carries the group as a constant label, so that a service
// running workers of several groups can register all their collectors in
// one registry. Handler labels take only registered handler names (plus
// "unregistered" and "invalid"): a trigger cannot grow the label set.
//
// Each instrumentation point in the run path is one call here, so that the
// path itself reads as before.

// Handler label values for triggers whose handler is not one of the
// worker's.
const (
	handlerUnregistered = "unregistered"
	handlerInvalid      = "invalid"
)

// Lane names, as the lane label shows them (and fetch.go names lanes).
const (
	laneShared   = "shared"
	laneDirected = "directed"
	laneBatch    = "batch"
)

type metrics struct {
	started       *prometheus.CounterVec
	finishedRuns  *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	slots         *prometheus.GaugeVec
	busy          *prometheus.GaugeVec
	pickup        *prometheus.HistogramVec
	lockWait      *prometheus.HistogramVec
	flowWaits     *prometheus.CounterVec
	eventsPending prometheus.Gauge
	rejected      *prometheus.CounterVec
	all           []prometheus.Collector
}

func newMetrics(w *Worker) *metrics {
	group := prometheus.Labels{"group": w.cfg.Group}
	m := &metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_worker_runs_started_total", ConstLabels: group,
			Help: "Runs whose handler was called, after their started event was stored.",
		}, []string{"handler"}),
		finishedRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_worker_runs_finished_total", ConstLabels: group,
			Help: "Run results this worker reported, by handler and final status.",
		}, []string{"handler", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "jetjob_worker_run_duration_seconds", ConstLabels: group,
			Help:    "How long handlers ran, until they returned or were abandoned.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"handler"}),
		slots: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetjob_worker_slots", ConstLabels: group,
			Help: "Run slots per lane (the group's shared queue, this worker's directed consumer, the group's trigger batches).",
		}, []string{"lane"}),
		busy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "jetjob_worker_slots_busy", ConstLabels: group,
			Help: "Slots holding a trigger: its run executes or waits for its job's lock.",
		}, []string{"lane"}),
		pickup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "jetjob_worker_trigger_pickup_seconds", ConstLabels: group,
			Help:    "Time from a trigger's storing in JETJOB_TRIGGERS (NATS clock) to its first delivery here (local clock).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"lane"}),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "jetjob_worker_job_lock_wait_seconds", ConstLabels: group,
			Help:    "Runs that found their job's lock held (block strategy): time until they held it or ended.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"handler"}),
		flowWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_worker_flow_waits_total", ConstLabels: group,
			Help: "Runs that waited at a flow control before their handler started (docs/flow-control.md): a concurrency key's cap (key_cap), their group's cap (group_cap), a rate limit (rate).",
		}, []string{"control"}),
		eventsPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "jetjob_worker_events_pending", ConstLabels: group,
			Help: "Run events handed to the publisher and not yet acknowledged by JetStream.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_worker_triggers_rejected_total", ConstLabels: group,
			Help: "Deliveries of trigger messages refused and handed back unrun because their signature is missing (unsigned), by a key not accepted (unknown_key) or does not verify (bad_signature).",
		}, []string{"reason"}),
	}
	for _, r := range []string{"unsigned", "unknown_key", "bad_signature"} {
		m.rejected.WithLabelValues(r)
	}
	for _, c := range []string{joblock.WaitKeyCap, joblock.WaitGroupCap, joblock.WaitRate} {
		m.flowWaits.WithLabelValues(c)
	}
	for _, l := range []string{laneShared, laneDirected, laneBatch} {
		m.slots.WithLabelValues(l).Set(float64(w.cfg.Concurrency))
		m.busy.WithLabelValues(l)
	}
	m.all = []prometheus.Collector{m.started, m.finishedRuns, m.duration, m.slots, m.busy, m.pickup, m.lockWait,
		m.flowWaits, m.eventsPending, m.rejected,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "jetjob_worker_handlers_abandoned_total", ConstLabels: group,
			Help: "Handlers abandoned because they ignored their cancelled context.",
		}, func() float64 { return float64(w.counts.abandonedTotal.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "jetjob_worker_abandoned_handlers", ConstLabels: group,
			Help: "Abandoned handler goroutines that have not returned yet.",
		}, func() float64 { return float64(w.counts.abandonedLive.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "jetjob_worker_late_triggers_judging", ConstLabels: group,
			Help: "Late triggers whose misfire policy is being judged without a run slot.",
		}, func() float64 { return float64(len(w.judges)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "jetjob_worker_log_lines_dropped_total", ConstLabels: group,
			Help: "Job log lines that could not be published to JETJOB_LOGS.",
		}, func() float64 { return float64(w.counts.logDropped.Load()) }),
	}
	// jetjob_worker_component_restarts_total{group, component}: supervise.go.
	m.all = append(m.all, w.sup.super.Collector())
	return m
}

// metrics is a prometheus.Collector of every series: New registers it in
// Config.Metrics.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all {
		c.Describe(ch)
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all {
		c.Collect(ch)
	}
}

// slotTaken marks one slot of lane busy; the returned func frees it.
func (m *metrics) slotTaken(lane string) (free func()) {
	g := m.busy.WithLabelValues(lane)
	g.Inc()
	return g.Dec
}

// pickedUp observes a trigger's wait in the stream, on its first delivery
// only: a redelivery's wait includes the ack wait or a hand-back's delay,
// which say nothing about free slots.
func (m *metrics) pickedUp(lane string, delivery uint64, storedAt time.Time) {
	if delivery == 1 && !storedAt.IsZero() {
		m.pickup.WithLabelValues(lane).Observe(max(time.Since(storedAt), 0).Seconds())
	}
}

// handlerStarted counts a run whose handler is being called; the returned
// func observes its duration when the handler is done.
func (m *metrics) handlerStarted(handler string) (done func()) {
	m.started.WithLabelValues(handler).Inc()
	began := time.Now()
	return func() { m.duration.WithLabelValues(handler).Observe(time.Since(began).Seconds()) }
}

func (m *metrics) finished(handler string, status wire.Status) {
	m.finishedRuns.WithLabelValues(handler, string(status)).Inc()
}

// lockWaited observes the block strategy's wait of a run that found its
// job's lock held (run.waitedLock, set by block); asked is when it asked.
func (m *metrics) lockWaited(r *run, asked time.Time) {
	if r.waitedLock {
		m.lockWait.WithLabelValues(r.trig.Handler).Observe(time.Since(asked).Seconds())
	}
}

// flowWaited counts a run that waited at a flow control.
func (m *metrics) flowWaited(control string) { m.flowWaits.WithLabelValues(control).Inc() }

// eventQueued counts an event until JetStream acknowledged it or its
// publishing was given up; the returned func ends that.
func (m *metrics) eventQueued() (done func()) {
	m.eventsPending.Inc()
	return m.eventsPending.Dec
}

// handlerLabel is the run's handler as the metrics name it: the trigger's
// handler if this worker registered it, else "unregistered".
func (r *run) handlerLabel() string {
	if r.w.lookup(r.trig.Handler) == nil {
		return handlerUnregistered
	}
	return r.trig.Handler
}
