package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The tests write as scheduler "me", holding shard 0 (the only one) at
// epoch 1 for an hour.
const (
	me    = "me"
	epoch = 1
)

// fixture is a fresh database with one group "g", one disabled job in it
// (so no planner's pass competes) and shard 0 held by me at epoch.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	st    *store.Store
	jobID int64
}

func setup(t *testing.T) *fixture {
	t.Helper()
	t.Parallel()
	pool, st := pgtest.Store(t)
	pgtest.HoldShard(t, pool, me, epoch)
	return &fixture{t: t, ctx: context.Background(), pool: pool, st: st, jobID: pgtest.Job(t, st, "a", "skip")}
}

// job creates another disabled job in group "g" and returns its id.
func (f *fixture) job(name string) int64 {
	f.t.Helper()
	return pgtest.Job(f.t, f.st, name, "skip")
}

// fire is a SCHEDULED fire of the job, i seconds from a fixed base time.
func (f *fixture) fire(i int) runs.Fire {
	base := time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC)
	return runs.Fire{JobID: f.jobID, Group: "g", TriggerType: wire.TriggerSchedule, Status: wire.StatusScheduled,
		ScheduledAt: base.Add(time.Duration(i) * time.Second)}
}

// plan writes fires the way the planner does: fenced, in one transaction.
func (f *fixture) plan(fires ...runs.Fire) []runs.Inserted {
	f.t.Helper()
	return pgtest.Plan(f.t, f.pool, me, epoch, fires...)
}

// planned is an inserted run as the wheel would hold it.
func planned(in runs.Inserted) runs.Planned {
	return runs.Planned{RunID: in.RunID, JobID: in.JobID, Group: "g", Shard: 0, Epoch: epoch, ScheduledAt: in.ScheduledAt}
}

// row is what the tests read back of a run.
type row struct {
	status     wire.Status
	seq        *int64
	shardIndex int
	shardTotal int
	workerID   string
	finished   *time.Time
	batch      *int64
}

func (f *fixture) row(id int64) row {
	f.t.Helper()
	var r row
	if err := f.pool.QueryRow(f.ctx, `SELECT status, stream_seq, shard_index, shard_total, worker_id, finished_at, batch
		FROM job_runs WHERE id = $1`, id).Scan(&r.status, &r.seq, &r.shardIndex, &r.shardTotal, &r.workerID, &r.finished, &r.batch); err != nil {
		f.t.Fatalf("read run %d: %v", id, err)
	}
	return r
}

func (f *fixture) count() int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM job_runs WHERE job_id = $1`, f.jobID).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// apply applies one update the way the results applier does.
func (f *fixture) apply(u runs.Update) []runs.Moved {
	f.t.Helper()
	var moved []runs.Moved
	err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		a, err := runs.ApplyEvents(f.ctx, tx, []runs.Update{u}, 0)
		moved = a.Moved
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return moved
}
