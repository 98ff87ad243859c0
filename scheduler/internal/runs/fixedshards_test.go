package runs_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// expandFire plans fire i of the fixture's job and expands it into n
// parts of a fixed shard count, in index order.
func (f *fixture) expandFire(i, n int) []runs.Planned {
	f.t.Helper()
	p := planned(f.plan(f.fire(i))[0])
	parts, err := runs.ExpandFire(f.ctx, f.pool, me, &p, n)
	if err != nil || len(parts) != n {
		f.t.Fatalf("expand fire %d into %d: %v, %v", i, n, parts, err)
	}
	out := make([]runs.Planned, n)
	for _, part := range parts {
		q := p
		q.RunID, q.ShardIndex, q.ShardTotal = part.RunID, part.Index, n
		out[part.Index] = q
	}
	return out
}

// children counts the child runs of fire (its part 0's id).
func (f *fixture) children(fire int64) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM job_runs WHERE parent_run = $1`, fire).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// A fire of a fixed shard count triggers its children once, when its last
// part succeeds: not before, once when its last two parts end in one
// batch, and once when they end in two transactions at the same time (the
// chain lock orders them; the second sees the first).
func TestFixedShardChildrenOnce(t *testing.T) {
	f := setup(t)
	child := f.job("child")
	f.link(f.jobID, child)
	if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET fixed_shards = 3 WHERE id = $1`, f.jobID); err != nil {
		t.Fatal(err)
	}
	end := func(p runs.Planned) runs.Update { return ended(p.RunID, p.ScheduledAt, wire.StatusSucceeded) }

	// One part at a time.
	parts := f.expandFire(0, 3)
	for i, p := range parts {
		if r := f.row(p.RunID); r.shardIndex != i || r.shardTotal != 3 || r.workerID != "" {
			t.Fatalf("part %d: %+v, want part %d of 3 for the shared queue", i, r, i)
		}
	}
	for _, p := range parts[:2] {
		if a := f.applyAll(0, end(p)); len(a.Spawned) != 0 {
			t.Fatalf("part %d's success triggered %v before the last part", p.ShardIndex, a.Spawned)
		}
	}
	if a := f.applyAll(0, end(parts[2])); len(a.Spawned) != 1 || f.children(parts[0].RunID) != 1 {
		t.Fatalf("last part's success: %+v, %d children of the fire; want one", a, f.children(parts[0].RunID))
	}

	// The last two in one batch.
	parts = f.expandFire(1, 3)
	f.applyAll(0, end(parts[0]))
	if a := f.applyAll(0, end(parts[1]), end(parts[2])); len(a.Spawned) != 1 || f.children(parts[0].RunID) != 1 {
		t.Fatalf("last two parts in one batch: %+v, %d children; want one", a, f.children(parts[0].RunID))
	}

	// The last two in two transactions at once.
	parts = f.expandFire(2, 3)
	f.applyAll(0, end(parts[0]))
	txA, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = txA.Rollback(f.ctx) }()
	if _, err := runs.ApplyEvents(f.ctx, txA, []runs.Update{end(parts[1])}, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			_, err := runs.ApplyEvents(f.ctx, tx, []runs.Update{end(parts[2])}, 0)
			return err
		})
	}()
	if err := txA.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := f.children(parts[0].RunID); n != 1 {
		t.Fatalf("last two parts in two transactions: %d children of the fire, want 1", n)
	}
}
