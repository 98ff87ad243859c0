// Package foreign counts the messages a scheduler refuses because they came
// on one group's subject and speak of another group's run (or worker):
// jetjob_foreign_messages_total{source}.
//
// NATS permissions bind a worker credential to its group's subjects
// (stream.WorkerPermissions), never to run ids: a credential of group a may
// publish on jetjob.event.a, jetjob.log.a.* and its heartbeat key whatever
// run they name. So the group the subject names is the only group a message
// can prove, and every reader takes a message only for a run of that group.
// A refusal is logged where it happens; this counter lets an operator alert
// on a credential that is misused (or a worker that is broken) without
// reading logs. Like errcount the counter is process-wide: one scheduler
// runs per process in production.
package foreign

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sources of refused messages, a bounded set.
const (
	// Events: a run event on jetjob.event.<group> for a run that does not
	// exist in that group (results).
	Events = "events"
	// StartCheck: an event still waiting in JETJOB_EVENTS that a start
	// check read, on the subject of a group other than its run's.
	StartCheck = "start_check"
	// Lost: a spent trigger whose body names a group other than its
	// subject's.
	Lost = "lost"
	// LostUnsigned: a spent trigger not signed by a key the schedulers
	// trust (package lost): nobody but a scheduler can have made it.
	LostUnsigned = "lost_unsigned"
	// Heartbeat: a worker heartbeat under a key of another group or worker.
	Heartbeat = "heartbeat"
)

var refused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "jetjob_foreign_messages_total",
	Help: "Messages refused because the group (or worker) their subject names is not the one of the run or worker they speak of, or (lost_unsigned) a spent trigger no trusted key signed, by source.",
}, []string{"source"})

// Refused counts one refused message of source.
func Refused(source string) { refused.WithLabelValues(source).Inc() }

// Total is how many messages of source were refused so far in this process.
func Total(source string) float64 {
	var m dto.Metric
	if err := refused.WithLabelValues(source).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Collector is the counter, for the scheduler's registry.
func Collector() prometheus.Collector { return refused }
