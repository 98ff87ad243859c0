package planner

import (
	"context"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// SweepInterval is how often the owner of a shard sweeps it for orphans,
// and OrphanAge how old a planned run must be to count as one.
const (
	SweepInterval = 10 * time.Second
	OrphanAge     = 30 * time.Second
)

// Recover returns a shard's planned runs that were never published: those
// left by a scheduler that stopped or died, or whose publish was cut short.
// Its new owner hands them to the wheel like freshly planned runs. A run
// that was in fact published before the crash carries the same
// Nats-Msg-Id and is dropped by the stream's duplicate window; one that
// reaches a worker later than its misfire threshold follows the job's
// misfire policy there. Runs already TRIGGERED are never read again.
func (p *Planner) Recover(ctx context.Context, l lease.Lease) ([]runs.Planned, error) {
	rs, err := runs.LoadShard(ctx, p.pool, l.Shard, p.unplannedHorizon())
	return recovered(rs, l), err
}

// unplannedHorizon is how far ahead the wheel takes runs written outside
// planning (a manual trigger for later, a retry after its backoff): one
// window and one sweep, so that a run due just after one sweep's horizon
// is in the wheel a window before its time after the next. Later ones
// stay in the table, and out of memory, until a sweep reaches them.
func (p *Planner) unplannedHorizon() time.Time {
	return p.now().Add(p.cfg.Window + SweepInterval)
}

// Load returns the given runs that are still SCHEDULED, with what their
// triggers need: for runs created outside planning (retries, child runs),
// which the scheduler that created them fires itself. They carry no lease
// epoch, like manual runs: their Msg-Id de-duplicates a later recovery by
// the shard's owner.
func (p *Planner) Load(ctx context.Context, ids []int64) ([]runs.Planned, error) {
	return runs.LoadScheduled(ctx, p.pool, ids)
}

// Sweep returns a shard's orphaned runs (see runs.LoadOrphans).
func (p *Planner) Sweep(ctx context.Context, l lease.Lease) ([]runs.Planned, error) {
	rs, err := runs.LoadOrphans(ctx, p.pool, l.Shard, p.unplannedHorizon(), p.now().Add(-OrphanAge))
	return recovered(rs, l), err
}

// recovered marks runs read back from the table under lease l: they may
// have been published already, and are published again only while l holds.
func recovered(rs []runs.Planned, l lease.Lease) []runs.Planned {
	for i := range rs {
		rs[i].Epoch, rs[i].Recovered = l.Epoch, true
	}
	return rs
}
