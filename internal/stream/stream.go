// Package stream names jetjob's JetStream streams, subjects and buckets and
// provisions them idempotently.
//
// Subjects (the contract in docs/protocol.md):
//
//	jetjob.trigger.<group>.any           shared queue of a group   (JETJOB_TRIGGERS, work queue)
//	jetjob.trigger.<group>.batch         trigger batches of a group, several runs a message (JETJOB_TRIGGERS, work queue)
//	jetjob.trigger.<group>.w.<workerID>  directed to one worker     (JETJOB_TRIGGERS, work queue)
//	jetjob.event.<group>                 worker → scheduler events  (JETJOB_EVENTS, work queue)
//	jetjob.log.<group>.<runID>           run log lines              (JETJOB_LOGS, limits)
//	jetjob.ctl.<workerID>                control request/reply (ping, idle beat, run active), no stream
//	jetjob.sched.supersede               worker → schedulers: is a late fire_once trigger superseded? no stream
//	jetjob.sched.started                 worker → schedulers: had a redelivered run started? no stream
//	jetjob.sched.recorded                scheduler → schedulers: runs recorded triggered from events, no stream
package stream

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/shared/wire"
)

const (
	Triggers = "JETJOB_TRIGGERS"
	Events   = "JETJOB_EVENTS"
	Logs     = "JETJOB_LOGS"
	// WorkersBucket is the KV bucket of worker heartbeats.
	WorkersBucket = "JETJOB_WORKERS"
	// LocksBucket holds the per-job locks that make block strategies hold
	// across a whole group (see worker/internal/joblock).
	LocksBucket = "JETJOB_LOCKS"
	// RatesBucket holds the state of the flow controls' rate limits
	// (docs/flow-control.md): apart from the locks because a rate's state
	// must outlive its period (up to wire.MaxRatePeriod), far longer than
	// a lock's LockTTL.
	RatesBucket = "JETJOB_RATES"
	// KillsBucket holds kill requests, keyed by run id: every worker
	// watches it and cancels a run it executes, and checks it before
	// starting one, so a kill reaches a run wherever it is — running on
	// some worker, or still waiting in JETJOB_TRIGGERS.
	KillsBucket = "JETJOB_KILLS"

	// EventsConsumer is the durable consumer all schedulers share on JETJOB_EVENTS.
	EventsConsumer = "jetjob-results"

	// Advisories keeps JetStream's "max deliveries reached" advisories for
	// triggers, so that a run whose deliveries ran out is recorded LOST
	// even if no scheduler was listening at that moment.
	Advisories = "JETJOB_ADVISORIES"
	// LostConsumer is the durable consumer all schedulers share on Advisories.
	LostConsumer = "jetjob-lost"
)

// MaxDeliveriesSubject matches the advisories JetStream publishes when a
// trigger consumer gives up on a message.
const MaxDeliveriesSubject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + Triggers + ".>"

// TriggerAny is the subject of a group's shared queue.
func TriggerAny(group string) string { return "jetjob.trigger." + group + ".any" }

// TriggerBatch is the subject of a group's trigger batches (wire.EncodeTriggerBatch):
// apart from TriggerAny so that a worker too old to read a batch never
// receives one (it does not consume this subject) rather than reject it.
func TriggerBatch(group string) string { return "jetjob.trigger." + group + ".batch" }

// TriggerWorker is the subject of triggers directed to one worker.
func TriggerWorker(group, workerID string) string {
	return "jetjob.trigger." + group + ".w." + workerID
}

// Event is the subject workers of group publish run events on.
func Event(group string) string { return "jetjob.event." + group }

// ParseEvent returns the group of a run events subject, ok false for any
// other subject (or a group that is no valid name).
func ParseEvent(subject string) (group string, ok bool) {
	group, ok = strings.CutPrefix(subject, "jetjob.event.")
	if !ok || !wire.ValidName(group) {
		return "", false
	}
	return group, true
}

// Log is the subject of the log lines of one run.
func Log(group string, runID int64) string {
	return "jetjob.log." + group + "." + strconv.FormatInt(runID, 10)
}

// Control is the request/reply subject of one worker.
func Control(workerID string) string { return "jetjob.ctl." + workerID }

// Supersede is the request/reply subject all schedulers answer (as one
// queue group, SupersedeQueue) about late fire_once triggers.
const (
	Supersede      = "jetjob.sched.supersede"
	SupersedeQueue = "jetjob-schedulers"
)

// StartCheck is the request/reply subject all schedulers answer (in the
// queue group SupersedeQueue) about whether runs had started before
// (wire.StartRequest).
const StartCheck = "jetjob.sched.started"

// Secrets is the request/reply subject (in SupersedeQueue) on which a
// worker of a group asks for a run's secrets: SecretsSubject(group). The
// group is in the subject so that NATS permissions keep a worker
// credential of one group from asking for another group's runs.
const Secrets = "jetjob.sched.secrets"

// SecretsSubject is the secrets subject of group's workers.
func SecretsSubject(group string) string { return Secrets + "." + group }

// ParseSecrets returns the group of a secrets subject.
func ParseSecrets(subject string) (string, bool) {
	g, ok := strings.CutPrefix(subject, Secrets+".")
	return g, ok && g != "" && !strings.Contains(g, ".")
}

// MapOutputs is the request/reply subject (in SupersedeQueue) on which a
// worker of a group asks for the parts' outputs a reduce run of that group
// reduces (wire.MapOutputsRequest): MapOutputsSubject(group). The group is
// in the subject, as for Secrets, so that NATS permissions bind it.
const MapOutputs = "jetjob.sched.mapoutputs"

// MapOutputsSubject is the map outputs subject of group's workers.
func MapOutputsSubject(group string) string { return MapOutputs + "." + group }

// ParseMapOutputs returns the group of a map outputs subject.
func ParseMapOutputs(subject string) (string, bool) {
	g, ok := strings.CutPrefix(subject, MapOutputs+".")
	return g, ok && g != "" && !strings.Contains(g, ".")
}

// Recorded is where schedulers tell each other which runs their results
// applier recorded triggered (wire.RecordedNotice; plain NATS, no stream,
// every scheduler subscribes): the publishing scheduler of such a run
// drops its deferred TRIGGERED write.
const Recorded = "jetjob.sched.recorded"

// BatchHeader marks a trigger batch published on a worker's directed
// subject (the batches of jobs routed consistent_hash, sent only to a
// worker whose heartbeat says wire.WorkerInfo.DirectedBatches); its value
// is "1". A batch on the group's batch subject carries none.
const BatchHeader = "Jetjob-Batch"

// ReroutedHeader marks a trigger moved off a dead worker's directed queue;
// its value is how many times the original had been delivered to that
// worker. A worker treats such a trigger like a redelivery: its run may
// have started there.
const ReroutedHeader = "Jetjob-Rerouted"

// KillKey is the key of a run's kill request in KillsBucket.
func KillKey(runID int64) string { return strconv.FormatInt(runID, 10) }

// WorkerKey is the key of a worker's heartbeat in WorkersBucket.
func WorkerKey(group, workerID string) string { return group + "." + workerID }

// AnyConsumer is the durable consumer all workers of group share.
func AnyConsumer(group string) string { return "workers-" + group }

// BatchConsumer is the durable consumer all workers of group share for its
// trigger batches. Its prefix differs from AnyConsumer's so that no group
// name can make the two collide ("workers-a-batch" would be group
// a-batch's shared consumer).
func BatchConsumer(group string) string { return "batches-" + group }

// WorkerConsumer is the durable consumer of one worker's directed triggers.
func WorkerConsumer(group, workerID string) string {
	return fmt.Sprintf("worker-%s-%s", group, workerID)
}

// Trigger consumer defaults: a worker's ack wait (in-progress acks every
// third of it while a run lasts) and how many deliveries a trigger gets
// before it is given up (and its run recorded LOST).
const (
	DefaultAckWait    = 30 * time.Second
	DefaultMaxDeliver = 5
)

// DirectedInactive is how long a worker's directed consumer outlives its
// last pull. Schedulers re-route what a dead worker left in it (see
// scheduler/internal/reroute) long before; the threshold only cleans up after
// workers with one-off ids.
const DirectedInactive = time.Hour

// DirectedConsumerConfig is the config of a worker's directed consumer.
// The worker creates it at start; a scheduler re-routing the triggers of a
// dead worker creates the same one if it is missing, so the two never
// fight over its settings.
func DirectedConsumerConfig(group, workerID string, ackWait time.Duration, maxDeliver int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:           WorkerConsumer(group, workerID),
		Description:       "jetjob worker " + workerID + " of group " + group + " (directed triggers)",
		FilterSubject:     TriggerWorker(group, workerID),
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           ackWait,
		MaxDeliver:        maxDeliver,
		MaxAckPending:     10_000,
		InactiveThreshold: DirectedInactive,
	}
}

// ParseTrigger returns the group of any trigger subject (shared queue,
// batches or a worker's directed one), ok false for any other subject.
func ParseTrigger(subject string) (group string, ok bool) {
	if g, ok := ParseTriggerAny(subject); ok {
		return g, true
	}
	if g, ok := ParseTriggerBatch(subject); ok {
		return g, true
	}
	g, _, ok := ParseTriggerWorker(subject)
	return g, ok
}

// ParseTriggerAny returns the group of a shared-queue trigger subject (or
// consumer filter), ok false for any other subject.
func ParseTriggerAny(subject string) (group string, ok bool) {
	t := strings.Split(subject, ".")
	if len(t) != 4 || t[0] != "jetjob" || t[1] != "trigger" || t[3] != "any" {
		return "", false
	}
	return t[2], true
}

// ParseTriggerBatch returns the group of a trigger-batch subject (or
// consumer filter), ok false for any other subject.
func ParseTriggerBatch(subject string) (group string, ok bool) {
	t := strings.Split(subject, ".")
	if len(t) != 4 || t[0] != "jetjob" || t[1] != "trigger" || t[3] != "batch" {
		return "", false
	}
	return t[2], true
}

// ParseTriggerWorker returns the group and worker of a directed trigger
// subject (or consumer filter), ok false for any other subject.
func ParseTriggerWorker(subject string) (group, workerID string, ok bool) {
	t := strings.Split(subject, ".")
	if len(t) != 5 || t[0] != "jetjob" || t[1] != "trigger" || t[3] != "w" {
		return "", "", false
	}
	return t[2], t[4], true
}
