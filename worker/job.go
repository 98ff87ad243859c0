package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/wire"
)

// Job is what a handler learns about its run.
type Job struct {
	RunID       int64
	JobID       int64
	Group       string
	Handler     string
	Params      string
	TriggerType TriggerType
	ScheduledAt time.Time
	// Attempt is the scheduler's attempt number of this fire; retries
	// count up.
	Attempt int
	// ShardIndex and ShardTotal are this run's part of a sharding
	// broadcast, of a job's fixed shard count (sharding: {total: N}) or
	// of a map/reduce fire (its item's place in the list: IsMapPart):
	// part ShardIndex of ShardTotal (0-based). Any other run is
	// part 0 of 1, as in xxl-job, so `i % ShardTotal` and "am I part 0"
	// need no special case.
	ShardIndex int
	ShardTotal int
	// Delivery is how many times this trigger has been delivered; above 1
	// an earlier execution may have done part of the work (its worker died).
	Delivery int
	// Script is the stored script a run of a script job runs (handler
	// "script", builtin.Script): the job's version when the run was
	// planned, the same on every delivery. nil for other jobs.
	Script *wire.Script
	// SecretEnv is the run's secrets as environment variables ("K=V", by
	// the job's secret_env): command handlers add them to the command's
	// environment. The values are masked in what the run reports (its
	// log, message and output), never in what the handler does with them.
	SecretEnv []string
	// Logger logs with the run's fields to the worker's log and publishes
	// each line to the run's log on JETJOB_LOGS.
	Logger *zap.Logger

	output *outputBox
	// mapped holds what Map set; item and mapFire are a part's item and
	// the fire of a part or reduce run (mapreduce.go).
	mapped  *outputBox // the items the handler mapped (Map)
	item    json.RawMessage
	mapFire int64
}

// MaxOutputBytes bounds a run's output as JSON (64 KiB).
const MaxOutputBytes = wire.MaxOutputBytes

// SetOutput sets the run's output: v as JSON, at most MaxOutputBytes. It
// travels with the run's result and is stored with the run; in a workflow
// the nodes after this one read it in their params templates
// ({{ .nodes.<node>.output.<key> }}) and a for_each node iterates over a
// list in it. A later call replaces an earlier one; a value that cannot
// be encoded or is too big is refused, and the output stays as it was.
func (j *Job) SetOutput(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("set output: %w", err)
	}
	if len(b) > MaxOutputBytes {
		return fmt.Errorf("set output: %d bytes of JSON, at most %d", len(b), MaxOutputBytes)
	}
	if j.output == nil {
		return errors.New("set output: this Job was not given by a worker")
	}
	j.output.set(b)
	return nil
}

// outputBox holds a run's output, or the items it mapped: its handler may
// set them from any goroutine while the worker reads them when the run
// ends.
type outputBox struct {
	mu sync.Mutex
	v  json.RawMessage
}

func (o *outputBox) set(b []byte) {
	o.mu.Lock()
	o.v = b
	o.mu.Unlock()
}

func (o *outputBox) get() json.RawMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.v
}

// TriggerType says why a run exists. A newer scheduler may send a type
// this build does not list.
type TriggerType string

// The trigger types (shared/wire's, for a worker in another language).
const (
	TriggerSchedule = TriggerType(wire.TriggerSchedule) // the job's schedule came due
	TriggerMisfire  = TriggerType(wire.TriggerMisfire)  // catch-up of a missed fire
	TriggerManual   = TriggerType(wire.TriggerManual)   // from the API, CLI or console: run now
	TriggerRetry    = TriggerType(wire.TriggerRetry)    // retry of a failed run
	TriggerParent   = TriggerType(wire.TriggerParent)   // child job after its parent succeeded
	TriggerBackfill = TriggerType(wire.TriggerBackfill) // a past fire run by a backfill
	TriggerWorkflow = TriggerType(wire.TriggerWorkflow) // a node of a workflow run
	TriggerMap      = TriggerType(wire.TriggerMap)      // a part of a map/reduce fire
	TriggerReduce   = TriggerType(wire.TriggerReduce)   // the reduce run of a map/reduce fire
)

// job is what the handler of r learns.
func (r *run) job() *Job {
	t := r.trig
	j := &Job{
		RunID: t.RunID, JobID: t.JobID, Group: t.Group, Handler: t.Handler, Params: r.secrets.params(t.Params),
		SecretEnv:   r.secrets.envList(),
		TriggerType: TriggerType(t.TriggerType), ScheduledAt: t.ScheduledAt, Attempt: t.Attempt,
		ShardIndex: t.ShardIndex, ShardTotal: max(t.ShardTotal, 1), Delivery: int(r.delivery), Script: t.Script,
		Logger: r.logs.logger(r.log), output: &r.output, mapped: &r.mapped,
	}
	if m := t.Map; m != nil {
		j.item, j.mapFire = m.Item, m.Fire
		if m.Reduce {
			j.item = nil
		}
	}
	return j
}
