package runs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// applyAll applies updates in one transaction with a cap of limit runs
// per root fire.
func (f *fixture) applyAll(limit int, ups ...runs.Update) runs.Applied {
	f.t.Helper()
	var out runs.Applied
	err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		out, err = runs.ApplyEvents(f.ctx, tx, ups, limit)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// ended is the update that ends run id (scheduled at at) with status.
func ended(id int64, at time.Time, st wire.Status) runs.Update {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return runs.Update{RunID: id, Group: "g", ScheduledAt: at, Status: st, StartedAt: &now, FinishedAt: &now}
}

// chainRow is what the chain tests read of a run.
type chainRow struct {
	jobID       int64
	trigger     string
	root        *int64
	scheduledAt time.Time
	message     string
}

func (f *fixture) chainRow(id int64) chainRow {
	f.t.Helper()
	var r chainRow
	if err := f.pool.QueryRow(f.ctx, `SELECT job_id, trigger_type, chain_root, scheduled_at, message FROM job_runs WHERE id = $1`, id).
		Scan(&r.jobID, &r.trigger, &r.root, &r.scheduledAt, &r.message); err != nil {
		f.t.Fatalf("read run %d: %v", id, err)
	}
	return r
}

func (f *fixture) link(parent int64, children ...int64) {
	f.t.Helper()
	if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET child_job_ids = $1, enabled = true WHERE id = $2`, children, parent); err != nil {
		f.t.Fatal(err)
	}
	for _, c := range children {
		if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET enabled = true WHERE id = $1`, c); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) chainCount(root int64) int {
	f.t.Helper()
	var n int
	err := f.pool.QueryRow(f.ctx, `SELECT COALESCE((SELECT runs FROM run_chains WHERE root_run = $1), -1)`, root).Scan(&n)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// A fire's chain follows its child runs, their retries and the parts of a
// broadcast: each carries the root fire it descends from, and the root's
// count grows by the child runs it causes, once the chain goes deeper
// than a first level of leaves.
func TestChainRootFollowsRuns(t *testing.T) {
	f := setup(t)
	mid, leaf := f.job("mid"), f.job("leaf")
	f.link(f.jobID, mid)
	f.link(mid, leaf)
	if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET max_retries = 1 WHERE id = $1`, mid); err != nil {
		t.Fatal(err)
	}
	root := f.plan(f.fire(0))[0]

	a := f.applyAll(0, ended(root.RunID, root.ScheduledAt, wire.StatusSucceeded))
	if len(a.Spawned) != 1 || len(a.Capped) != 0 {
		t.Fatalf("root's success: %+v, want one child run", a)
	}
	m := f.chainRow(a.Spawned[0])
	if m.jobID != mid || m.trigger != "parent" || m.root == nil || *m.root != root.RunID {
		t.Fatalf("child run %+v, want mid's, trigger parent, root %d", m, root.RunID)
	}
	if n := f.chainCount(root.RunID); n != 1 {
		t.Fatalf("root's count after its first level (mid has children): %d, want 1", n)
	}

	a = f.applyAll(0, ended(a.Spawned[0], m.scheduledAt, wire.StatusFailed))
	if len(a.Spawned) != 1 {
		t.Fatalf("mid's failure: %+v, want a retry", a)
	}
	retry := f.chainRow(a.Spawned[0])
	if retry.trigger != "retry" || retry.root == nil || *retry.root != root.RunID {
		t.Fatalf("retry %+v, want root %d", retry, root.RunID)
	}
	a = f.applyAll(0, ended(a.Spawned[0], retry.scheduledAt, wire.StatusSucceeded))
	if len(a.Spawned) != 1 {
		t.Fatalf("the retry's success: %+v, want leaf's run", a)
	}
	if l := f.chainRow(a.Spawned[0]); l.jobID != leaf || l.root == nil || *l.root != root.RunID {
		t.Fatalf("leaf run %+v, want root %d", l, root.RunID)
	}
	if n := f.chainCount(root.RunID); n != 2 {
		t.Fatalf("root's count: %d, want 2 (mid and leaf)", n)
	}

	// A first level of leaves writes no count.
	other := f.plan(f.fire(1))[0]
	f.link(f.jobID, leaf)
	a = f.applyAll(0, ended(other.RunID, other.ScheduledAt, wire.StatusSucceeded))
	if len(a.Spawned) != 1 || f.chainCount(other.RunID) != -1 {
		t.Fatalf("leaves only: %+v, count %d, want one child and no row", a, f.chainCount(other.RunID))
	}

	// The parts of a broadcast belong to their fire's chain.
	b := f.plan(f.fire(2))[0]
	p := planned(b)
	parts, err := runs.Expand(f.ctx, f.pool, me, &p, []string{"w1", "w2", "w3"})
	if err != nil || len(parts) != 3 {
		t.Fatalf("expand: %v, %v", parts, err)
	}
	for _, part := range parts[1:] {
		if r := f.chainRow(part.RunID); r.root == nil || *r.root != b.RunID {
			t.Errorf("part %d: root %v, want %d", part.Index, r.root, b.RunID)
		}
	}
}

// With the cap reached, a run that succeeds triggers none of its children
// and its message says why (after the worker's own).
func TestChainCapRefuses(t *testing.T) {
	f := setup(t)
	x, y := f.job("x"), f.job("y")
	f.link(f.jobID, x, y)
	root := f.plan(f.fire(0))[0]
	u := ended(root.RunID, root.ScheduledAt, wire.StatusSucceeded)
	u.Message = "done"
	a := f.applyAll(1, u)
	if len(a.Spawned) != 0 || len(a.Capped) != 1 || a.Capped[0].RunID != root.RunID {
		t.Fatalf("two children under a cap of 1: %+v, want none triggered and the run capped", a)
	}
	r := f.chainRow(root.RunID)
	if !strings.HasPrefix(r.message, "done; child jobs not triggered: ") || !strings.Contains(r.message, "these 2 would pass the limit of 1") {
		t.Fatalf("message %q", r.message)
	}
	var n int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM job_runs WHERE job_id = ANY($1)`, []int64{x, y}).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d child runs (%v), want none", n, err)
	}
}
