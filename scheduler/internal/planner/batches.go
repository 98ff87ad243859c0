package planner

import (
	"cmp"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Trigger batches. Every trigger message costs NATS and both processes a
// store, a delivery, an ack and a removal whatever it carries, so runs of
// one group due at the same instant share one message (issue #16). Which
// runs share it is decided here, when they are planned, and written with
// them (runs.InsertPlanned, job_runs.batch): every later publish of the
// batch — a retry, a shard's next owner recovering it — then carries the
// same runs under the same Msg-Id, and the stream's duplicate window drops
// the copy. A batch is never re-formed after planning.
//
// Only runs that would go to one queue anyway may share a message: a
// scheduled fire or a misfire catch-up (the newest missed fire fire_once
// runs, or a missed fire fire_all runs: a worker runs it without asking
// anyone, and under overload, where backpressure sheds at planning, a job
// with missed fires gets one catch-up at each pass) of a job routed "any"
// (the group's batch subject), or of a job routed "consistent_hash" when
// the scheduler can
// tell which worker the hash picks (Deps.BatchTarget): such runs share a
// batch only with runs bound for the same worker, and dispatch sends the
// batch to that worker's directed subject, so a job keeps meeting the same
// worker and its job lock stays there (no cross-worker hand-over per run).
// A job routed any other way, or a sharding broadcast, keeps its own
// trigger.

// maxBatchBytes bounds a batch message's estimated size, well under NATS's
// default max payload (1 MiB): a message over the server's limit can never
// be published.
const maxBatchBytes = 512 << 10

// triggerBytes bounds the size of a trigger of j's encoded: the fixed
// fields (ids, times, names; a group is at most 64 bytes) and the handler
// and params, which JSON escaping may blow up to six times (\u00XX). A
// flow adds its numbers and its concurrency key, which is no longer than
// the params it is taken from or its sha256: form.
func triggerBytes(j *dueJob) int {
	n := 1024 + 6*(len(j.handler)+len(j.params))
	if j.script != nil {
		n += 6 * len(j.script.Source)
	}
	if !j.flow.IsZero() {
		n += 512
		if j.flow.KeyExpr != "" {
			n += 6 * max(len(j.params), 80)
		}
	}
	return n
}

// batchable reports whether fire f of job j may share a trigger message;
// hashed says whether the planner can batch consistent_hash jobs.
func batchable(j *dueJob, f fire, hashed bool) bool {
	return !j.workflow && j.shards == 0 && f.status == wire.StatusScheduled && (f.typ == wire.TriggerSchedule || f.typ == wire.TriggerMisfire) &&
		(j.route == policy.RouteAny || j.route == "" || hashed && j.route == policy.RouteConsistentHash) &&
		triggerBytes(j) <= maxBatchBytes/2
}

// batchLane is the worker a batch of j's runs is bound for: "" for route
// any (the group's batch subject). A consistent_hash job whose hash picks
// no worker that reads directed batches gets a lane of its own, noWorker,
// so that its runs never share a batch with runs of jobs routed any: such
// a batch could be sent, whole, to one worker.
func (p *Planner) batchLane(j *dueJob) string {
	if j.route != policy.RouteConsistentHash {
		return ""
	}
	return cmp.Or(p.target(j.id, j.group, j.handler), noWorker)
}

// noWorker is batchLane's lane for consistent_hash runs bound for no
// worker: "." is in no worker id.
const noWorker = "."

// chunkBatches numbers the trigger batches of fires in place
// (runs.Fire.Batch): the fires whose size (triggerBytes) is non-zero,
// grouped by group, scheduled time and lane (the worker the batch is bound
// for, batchLane) in the order they come, in chunks of at most limit fires
// and maxBatchBytes. A chunk of one is no batch (0): the run is published
// alone. limit ≤ 1 batches nothing.
func chunkBatches(fires []runs.Fire, sizes []int, lanes []string, limit int) {
	if limit <= 1 {
		return
	}
	type key struct {
		group string
		at    int64 // µs: what PostgreSQL keeps, as runs.InsertPlanned compares
		lane  string
	}
	type chunk struct{ id, first, n, bytes int }
	open := map[key]*chunk{}
	alone := func(c *chunk) {
		if c != nil && c.n == 1 {
			fires[c.first].Batch = 0
		}
	}
	next := 0
	for i := range fires {
		if sizes[i] == 0 {
			continue
		}
		k := key{fires[i].Group, fires[i].ScheduledAt.UnixMicro(), lanes[i]}
		c := open[k]
		if c == nil || c.n == limit || c.bytes+sizes[i] > maxBatchBytes {
			alone(c)
			next++
			c = &chunk{id: next, first: i}
			open[k] = c
		}
		fires[i].Batch = c.id
		c.n++
		c.bytes += sizes[i]
	}
	for _, c := range open {
		alone(c)
	}
}
