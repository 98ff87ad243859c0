package dispatch

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// route decides where run due[i] goes and returns what to publish for it:
// the run itself (its Target set, "" for the shared queue), or, for a
// sharding broadcast, one part per live worker, or, for a job with a fixed
// shard count, its parts, all for the shared queue. Nothing when a broadcast
// could not be expanded (the run is no longer SCHEDULED here, or its
// write failed: it stays SCHEDULED and recovery or the sweep fires it).
func (d *Dispatcher) route(ctx context.Context, due []runs.Planned, i int) []runs.Planned {
	r := &due[i]
	pick := d.cfg.Route
	switch {
	case r.MapItem != nil:
		// A part of a map/reduce fire: the group's shared queue, as a
		// fixed shard count's parts (runs/mapreduce.go).
		r.Target = ""
	case r.Shards > 0 && r.ShardTotal == 0 && !r.Workflow && r.MapFire == 0:
		return d.fixedShards(ctx, r)
	case r.Shards > 0 && r.ShardTotal > 0 && r.Target == "":
		// A part of a fixed shard count, recovered or retried: any live
		// worker of the group takes it, whatever the route strategy.
	case pick == nil:
		r.Target = ""
	case r.ShardTotal > 0 && r.Target != "":
		// A recovered part of a broadcast: back to its worker, or to the
		// shared queue if that worker is gone.
		if !pick.Live(r.Group, r.Target) {
			r.Target = ""
		}
	case r.RouteStrategy == policy.RouteShardingBroadcast && r.ShardTotal == 0:
		return d.broadcast(ctx, r)
	default:
		r.Target = pick.Pick(ctx, r.JobID, r.Group, r.Handler, r.RouteStrategy)
	}
	return due[i : i+1]
}

// broadcast expands a sharding-broadcast run into one run per live worker
// that can run its handler (index i of n, in worker id order) and returns
// them, each directed to its worker. With no live worker the run becomes
// part 0 of 1 and goes to the shared queue, where it waits for a worker.
func (d *Dispatcher) broadcast(ctx context.Context, r *runs.Planned) []runs.Planned {
	ids := d.cfg.Route.Candidates(r.Group, r.Handler)
	targets := ids
	if len(targets) == 0 {
		targets = []string{""}
	}
	n := len(targets)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := runs.Expand(wctx, d.pool, d.cfg.Owner, r, targets)
	if err != nil {
		d.log.Warn("expanding a sharding broadcast failed; the run stays SCHEDULED for recovery",
			logging.Run(r.RunID), logging.Job(r.JobID), zap.Error(err))
		return nil
	}
	if len(got) == 0 {
		d.log.Debug("broadcast run no longer planned here; not publishing", logging.Run(r.RunID), logging.Job(r.JobID))
		return nil
	}
	out := make([]runs.Planned, 0, n)
	for _, p := range got {
		pr := *r
		pr.RunID, pr.ShardIndex, pr.ShardTotal, pr.Target = p.RunID, p.Index, n, targets[p.Index]
		out = append(out, pr)
	}
	if len(out) != n {
		// Parts already there (ON CONFLICT) cannot be: part 0 moves once.
		d.log.Warn("sharding broadcast expanded to fewer parts than workers",
			logging.Run(r.RunID), zap.Int("parts", len(out)), zap.Int("workers", n))
	}
	d.log.Debug("sharding broadcast", logging.Run(r.RunID), logging.Job(r.JobID), zap.Strings("workers", ids))
	return out
}

// fixedShards expands a run of a job with a fixed shard count into its
// parts (index i of r.Shards), each for the group's shared queue: any live
// worker with a free slot takes the next part, so the parts spread over
// the group's workers as they free up. Nothing to publish when the run
// could not be expanded (see route).
func (d *Dispatcher) fixedShards(ctx context.Context, r *runs.Planned) []runs.Planned {
	n := r.Shards
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := runs.ExpandFire(wctx, d.pool, d.cfg.Owner, r, n)
	if err != nil {
		d.log.Warn("expanding a fire into its shards failed; the run stays SCHEDULED for recovery",
			logging.Run(r.RunID), logging.Job(r.JobID), zap.Error(err))
		return nil
	}
	if len(got) == 0 {
		d.log.Debug("sharded run no longer planned here; not publishing", logging.Run(r.RunID), logging.Job(r.JobID))
		return nil
	}
	out := make([]runs.Planned, 0, n)
	for _, p := range got {
		pr := *r
		pr.RunID, pr.ShardIndex, pr.ShardTotal, pr.Target = p.RunID, p.Index, n, ""
		out = append(out, pr)
	}
	d.log.Debug("fixed shard count", logging.Run(r.RunID), logging.Job(r.JobID), zap.Int("parts", len(out)))
	return out
}
