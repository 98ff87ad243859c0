package runs

import (
	"encoding/json"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/shared/wire"
)

// Planned is a run written as SCHEDULED together with what a trigger needs
// from its job: what the planner (or the API, a backfill, a recovery) hands
// the wheel and the wheel hands dispatch. It lives with the statements
// that write and read it rather than in the API's store, so that the
// wheel, which only holds runs, does not depend on the API's CRUD.
type Planned struct {
	RunID int64
	JobID int64
	Group string
	Shard int
	// Epoch is the lease epoch of Shard under which the run was planned
	// or recovered: it may be published, and recorded, only while this
	// scheduler still holds the shard at that epoch (see fence.go). 0 for
	// a manual run, which its API call publishes directly (its Msg-Id
	// de-duplicates a later recovery).
	Epoch int64
	// Recovered marks a run found SCHEDULED in the table rather than
	// planned by this process: it may already have been published.
	Recovered bool
	// Batch is the trigger batch the run was planned into (job_runs.batch,
	// the id of the batch's first run), 0 for a run published alone. A
	// run of a batch is only ever published inside its batch's message
	// (one message, Nats-Msg-Id wire.BatchMsgID(Batch), on its group's
	// batch subject), never alone and never routed to one worker: which
	// runs share a batch is fixed in PostgreSQL when they are planned, so
	// every publish of it carries the same runs under the same id and the
	// stream's duplicate window drops the copies. Its runs share Group,
	// Shard and ScheduledAt.
	Batch         int64
	Handler       string
	Params        string
	TriggerType   wire.TriggerType
	ScheduledAt   time.Time
	Attempt       int
	ShardIndex    int
	ShardTotal    int
	Timeout       time.Duration
	MisfirePolicy policy.Misfire
	RouteStrategy policy.Route
	BlockStrategy policy.Block
	// MaxConcurrency is the job's cap on overlapping runs (concurrent).
	MaxConcurrency int
	// Shards is the job's fixed shard count (jobs.fixed_shards; 0: none):
	// dispatch expands a fire of such a job into that many parts on the
	// group's shared queue (ExpandFire), and sends a part's retry there.
	Shards int
	// Target is the worker a directed trigger goes to, "" for the group's
	// shared queue. Dispatch sets it when it routes the run; a part of a
	// sharding broadcast keeps it in job_runs.worker_id, so that a
	// recovered part goes back to its worker (or to the shared queue if
	// that worker is gone).
	Target string
	// MisfireThreshold is the job's own threshold, 0 for the scheduler's.
	MisfireThreshold time.Duration
	// Workflow marks a run of a workflow's own jobs row: dispatch starts
	// the workflow run instead of publishing it (package wfengine), and
	// the planner never batches it.
	Workflow bool
	// WorkflowRun is the workflow run of a node run (0 for other runs):
	// its trace is the workflow run's (spans.Tracer.Publish).
	WorkflowRun int64
	// WorkflowAt is the fire time of a node run's workflow run when that
	// run is of the node's own group (zero otherwise): a workflow run of
	// a paused group that fell due after the pause began was a forced
	// trigger, and its node runs do not wait for the resume (held.go).
	WorkflowAt time.Time
	// Message is the run's message as written (job_runs.message): a
	// backfill's run names its backfill, a workflow run's re-run the run
	// it re-runs. A workflow run starts with it as its own message.
	Message string
	// Script is the job's current script version for a script job (nil
	// for any other): the trigger carries it (wire.Trigger.Script).
	Script *wire.Script
	// Secrets says that the run's job references secrets, which its
	// worker asks for when it starts (wire.Trigger.Secrets).
	Secrets bool
	// Flow is the run's flow controls as its job and group set them
	// (zero: none; the trigger then carries no flow).
	Flow Flow
	// MapFire is the fire (its root run) of a part of a map/reduce fire
	// or of its reduce run, 0 for any other run; MapItem is a part's item
	// (JSON), nil for the reduce run (wire.Trigger.Map; mapreduce.go).
	MapFire int64
	MapItem *string
}

// ScriptColumns scan a job row's script_language, script_version and
// script_source, NULL for a job that is not a script job.
type ScriptColumns struct {
	Language *string
	Version  *int
	Source   *string
}

// Script is the version the columns hold, nil when they hold none.
func (c ScriptColumns) Script() *wire.Script {
	if c.Language == nil || c.Version == nil || c.Source == nil {
		return nil
	}
	return &wire.Script{Language: *c.Language, Version: *c.Version, Source: *c.Source}
}

// Trigger is the wire message of a planned run; misfireThreshold is the
// scheduler's, used when the job has none of its own.
func (p *Planned) Trigger(misfireThreshold time.Duration) *wire.Trigger {
	if p.MisfireThreshold > 0 {
		misfireThreshold = p.MisfireThreshold
	}
	return &wire.Trigger{
		V:                  wire.Version,
		RunID:              p.RunID,
		JobID:              p.JobID,
		Group:              p.Group,
		Handler:            p.Handler,
		Params:             p.Params,
		TriggerType:        p.TriggerType,
		ScheduledAt:        p.ScheduledAt,
		Attempt:            p.Attempt,
		ShardIndex:         p.ShardIndex,
		ShardTotal:         p.ShardTotal,
		TimeoutMS:          p.Timeout.Milliseconds(),
		MisfirePolicy:      p.MisfirePolicy,
		MisfireThresholdMS: misfireThreshold.Milliseconds(),
		BlockStrategy:      p.BlockStrategy,
		MaxConcurrency:     p.MaxConcurrency,
		Script:             p.Script,
		Secrets:            p.Secrets,
		Flow:               p.Flow.Wire(p.Params, p.MaxConcurrency),
		Map:                p.mapRun(),
	}
}

// mapRun is the trigger's map/reduce field: nil unless the run is a part
// of a map/reduce fire or its reduce run.
func (p *Planned) mapRun() *wire.MapRun {
	switch {
	case p.MapFire == 0:
		return nil
	case p.MapItem != nil:
		return &wire.MapRun{Fire: p.MapFire, Item: json.RawMessage(*p.MapItem)}
	}
	return &wire.MapRun{Fire: p.MapFire, Reduce: true}
}
