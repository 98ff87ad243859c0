package stream

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jetjob/jetjob/shared/wire"
)

// NATS permissions per role.
//
// A NATS user that runs workers of one group gets exactly the subjects those
// workers use (WorkerPermissions), so that a worker credential of group a
// can neither take, read or acknowledge group b's triggers nor publish
// group b's events or logs: the server refuses it with a permissions
// violation. deploy/natsperm turns these lists into the `authorization`
// block of a NATS server configuration (deploy/nats/permissions.conf), and
// the integration test there starts a real worker under them, so the
// shipped configuration and the code cannot drift apart.
//
// What cannot be isolated per group with the current subject layout (the
// residual risks, see docs/operations.md, "NATS permissions per group"):
//
//   - job locks (JETJOB_LOCKS) are keyed job.<jobID> and kill requests
//     (JETJOB_KILLS) by run id, with no group in the key: a worker of any
//     group may read and write any job's lock (and so delay or overlap
//     another group's serial runs) and put a kill request for any run id
//     (cover_early needs it), and it reads every kill request;
//   - stream info (which every worker reads at start) shows the stream's
//     state, including per-subject counts when asked for them: how many
//     triggers wait for another group and its worker ids.

// Permissions are the subjects a NATS user may publish to and subscribe
// to: NATS server allow lists, everything else is denied.
type Permissions struct {
	Publish   []string
	Subscribe []string
	// AllowResponses lets the user answer the requests it receives (one
	// publish to each request's reply subject) without a publish
	// permission on other clients' inboxes: workers answer control
	// requests this way.
	AllowResponses bool
}

// WorkerInboxPrefix is the inbox prefix a worker of group must connect
// with (nats.CustomInboxPrefix): replies to its requests, its pulled
// triggers and its JetStream acknowledgements all arrive on inboxes. A
// worker allowed to subscribe to every inbox (_INBOX.>) would receive
// every other group's pulled triggers too, so a group's credential may
// only subscribe to the inboxes under this prefix.
func WorkerInboxPrefix(group string) string { return "_INBOX.jetjob." + group }

// WorkerPermissions returns what workers of group need, for the worker ids
// given (at least one). The ids are part of the credential because
// JetStream names consumers in single subject tokens: a worker's directed
// consumer is worker-<group>-<id>, and a NATS permission cannot match
// "worker-a-" followed by anything. Allowing any consumer name would let
// the credential pull from other groups' consumers (workers-b) by name.
// So every worker of a group with a least-privilege credential needs an id
// fixed in advance (--id, JETJOB_WORKER_ID; a StatefulSet's pod names), and
// the group's credential lists them.
func WorkerPermissions(group string, workerIDs []string) (Permissions, error) {
	if err := wire.CheckName("group", group); err != nil {
		return Permissions{}, err
	}
	if len(workerIDs) == 0 {
		return Permissions{}, fmt.Errorf("group %s: no worker ids (a least-privilege credential names its workers' ids, see WorkerPermissions)", group)
	}
	ids := slices.Clone(workerIDs)
	slices.Sort(ids)
	for i, id := range ids {
		if err := wire.CheckName("worker id", id); err != nil {
			return Permissions{}, err
		}
		if i > 0 && ids[i-1] == id {
			return Permissions{}, errors.New("worker id " + id + " given twice")
		}
	}
	api := "$JS.API."
	pub := []string{
		// Run events and log lines of the group's runs only.
		Event(group),
		"jetjob.log." + group + ".*",
		// Questions to the schedulers (misfire.go, started.go).
		Supersede,
		StartCheck,
		// The group's runs' secrets (scheduler/internal/secrets).
		SecretsSubject(group),
		// The parts' outputs of the group's reduce runs
		// (scheduler/internal/mapout).
		MapOutputsSubject(group),
	}
	// Start-up: stream.Provision (LeaveExisting) and the buckets' handles
	// read the streams' info; creating or updating a stream is the
	// schedulers' job.
	for _, s := range []string{Triggers, Events, Logs, Advisories,
		"KV_" + WorkersBucket, "KV_" + KillsBucket, "KV_" + LocksBucket, "KV_" + RatesBucket} {
		pub = append(pub, api+"STREAM.INFO."+s)
	}
	// The group's shared consumer: create or update it (the filter is part
	// of the subject, and the server checks it against the consumer's
	// config), pull from it, acknowledge its messages.
	pub = append(pub,
		api+"CONSUMER.CREATE."+Triggers+"."+AnyConsumer(group)+"."+TriggerAny(group),
		api+"CONSUMER.MSG.NEXT."+Triggers+"."+AnyConsumer(group),
		"$JS.ACK."+Triggers+"."+AnyConsumer(group)+".>",
		// The group's batch consumer, the same three rights.
		api+"CONSUMER.CREATE."+Triggers+"."+BatchConsumer(group)+"."+TriggerBatch(group),
		api+"CONSUMER.MSG.NEXT."+Triggers+"."+BatchConsumer(group),
		"$JS.ACK."+Triggers+"."+BatchConsumer(group)+".>",
	)
	for _, id := range ids {
		pub = append(pub,
			// Each worker's directed consumer, the same three rights.
			api+"CONSUMER.CREATE."+Triggers+"."+WorkerConsumer(group, id)+"."+TriggerWorker(group, id),
			api+"CONSUMER.MSG.NEXT."+Triggers+"."+WorkerConsumer(group, id),
			"$JS.ACK."+Triggers+"."+WorkerConsumer(group, id)+".>",
			// Control requests to the group's workers (run_active before
			// taking over a job lock or ending a redelivered run LOST).
			Control(id),
			// The heartbeat (put, and delete at stop).
			"$KV."+WorkersBucket+"."+WorkerKey(group, id),
		)
	}
	pub = append(pub,
		// Job locks: create, update, delete (conditional writes) and read
		// from the stream leader (joblock's readLock) or directly (the
		// client's Create reads a deleted key's revision). Not per group:
		// keys are job.<jobID>.
		"$KV."+LocksBucket+".job.*",
		// Flow controls' slots (docs/flow-control.md): the group's cap,
		// group.<group>_slots, only its own group's; a concurrency key's,
		// key.<jobID>.<hash>_slots, any job's, as job locks.
		"$KV."+LocksBucket+".group."+group+"_slots",
		"$KV."+LocksBucket+".key.*.*",
		api+"STREAM.MSG.GET.KV_"+LocksBucket,
		api+"DIRECT.GET.KV_"+LocksBucket+".>",
		// Rate limits' state: rate.job.<jobID>, rate.key.<jobID>.<hash>
		// (any job's) and rate.group.<group> (its own group's).
		"$KV."+RatesBucket+".rate.job.*",
		"$KV."+RatesBucket+".rate.key.*.*",
		"$KV."+RatesBucket+".rate.group."+group,
		api+"STREAM.MSG.GET.KV_"+RatesBucket,
		// Kill requests: the watch is an ordered consumer (created under a
		// random name, deleted when it resets, flow-controlled) over the
		// whole bucket; cover_early puts a kill of the run it covers. Not
		// per group: keys are run ids.
		api+"CONSUMER.CREATE.KV_"+KillsBucket+".*.$KV."+KillsBucket+".>",
		api+"CONSUMER.DELETE.KV_"+KillsBucket+".*",
		"$JS.FC.KV_"+KillsBucket+".>",
		"$KV."+KillsBucket+".*",
	)
	sub := []string{WorkerInboxPrefix(group) + ".>"}
	for _, id := range ids {
		sub = append(sub, Control(id)) // answers control requests (control.go)
	}
	return Permissions{Publish: pub, Subscribe: sub, AllowResponses: true}, nil
}

// SchedulerPermissions is what schedulers need: everything in the account.
// They create and update every stream, bucket and consumer, publish every
// group's triggers, apply every group's events, re-route dead workers'
// triggers and answer every worker's questions; a narrower list would
// protect nothing a scheduler credential could not reach anyway. Keep the
// scheduler's credential (and the account) to jetjob alone.
func SchedulerPermissions() Permissions {
	return Permissions{Publish: []string{">"}, Subscribe: []string{">"}}
}
