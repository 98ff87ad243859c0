// Package errcount counts the failed operations of the scheduler's two
// dependencies, NATS and PostgreSQL, where the code already logs them and
// retries: jetjob_nats_errors_total{op} and jetjob_postgres_errors_total{op}.
// A failing dependency is often first seen as a steady rate of these while
// everything still works (retries succeed), and an operator alerts on the
// rate rather than on log lines.
//
// The counters are process-wide, so that each site is one call with no
// wiring: one scheduler runs per process in production. Tests that run
// several schedulers in one process see their sum. op values are the
// constants below, a bounded set.
package errcount

import "github.com/prometheus/client_golang/prometheus"

// NATS operations.
const (
	PublishTrigger = "publish_trigger" // dispatch: a trigger's publish was not acknowledged
	Provision      = "provision"       // streams, buckets and consumers at start
	BacklogSample  = "backlog_sample"  // backlog: reading consumer and stream state
	LostMonitor    = "lost_monitor"    // lost: handling a max-deliveries advisory
)

// PostgreSQL operations.
const (
	OpenStore       = "open_store"       // at start
	ApplyEvents     = "apply_events"     // results: a batch of run events
	RecordTriggered = "record_triggered" // dispatch: marking published runs TRIGGERED
	Plan            = "plan"             // planner: a shard's planning pass or sweep
	Recover         = "recover"          // a newly acquired shard's planned runs
	Lease           = "lease"            // lease: a renewal round
	Alarm           = "alarm"            // alarm: a claim or delivery round
)

var (
	natsErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jetjob_nats_errors_total",
		Help: "NATS or JetStream operations of the scheduler that failed (and are retried), by operation.",
	}, []string{"op"})
	postgresErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jetjob_postgres_errors_total",
		Help: "PostgreSQL operations of the scheduler that failed (and are retried), by operation.",
	}, []string{"op"})
)

// NATS counts a failed NATS operation op.
func NATS(op string) { natsErrors.WithLabelValues(op).Inc() }

// Postgres counts a failed PostgreSQL operation op.
func Postgres(op string) { postgresErrors.WithLabelValues(op).Inc() }

// Collectors are the two counters, for the scheduler's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{natsErrors, postgresErrors} }
