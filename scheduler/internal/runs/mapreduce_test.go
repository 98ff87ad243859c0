package runs_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// mapped is the success of run p with a map of items, asking for a reduce.
func mapped(p runs.Planned, items ...string) runs.Update {
	u := ended(p.RunID, p.ScheduledAt, wire.StatusSucceeded)
	u.Map, u.Reduce = items, true
	return u
}

// applyConcurrently applies a and b in two transactions at once: b's
// waits on a's locks, and sees what a committed.
func (f *fixture) applyConcurrently(a, b runs.Update) {
	f.t.Helper()
	txA, err := f.pool.Begin(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = txA.Rollback(f.ctx) }()
	if _, err := runs.ApplyEvents(f.ctx, txA, []runs.Update{a}, 0); err != nil {
		f.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			_, err := runs.ApplyEvents(f.ctx, tx, []runs.Update{b}, 0)
			return err
		})
	}()
	if err := txA.Commit(f.ctx); err != nil {
		f.t.Fatal(err)
	}
	if err := <-done; err != nil {
		f.t.Fatal(err)
	}
}

// countWhere counts runs matching cond ($1: arg).
func (f *fixture) countWhere(cond string, arg any) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, `SELECT count(*) FROM job_runs WHERE `+cond, arg).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// A map's parts are written once by the transaction recording the root's
// success: not again for a redelivered event, nor by a second scheduler
// applying the same event at once. Each part carries its item into its
// trigger and its retry; the last part, even when the last two end in two
// transactions at once, writes one reduce run, whose trigger says so and
// whose retry keeps it.
func TestMapFireOnce(t *testing.T) {
	f := setup(t)
	root := planned(f.plan(f.fire(0))[0])
	a := f.applyAll(0, mapped(root, `"a"`, `{"b":2}`, `3`))
	if len(a.Spawned) != 3 {
		t.Fatalf("the root's success wrote parts %v, want 3", a.Spawned)
	}
	if a := f.applyAll(0, mapped(root, `"x"`)); len(a.Spawned) != 0 || f.countWhere(`shard_fire = $1 AND shard_total > 0`, root.RunID) != 3 {
		t.Fatalf("the event again wrote %v", a.Spawned)
	}
	second := planned(f.plan(f.fire(1))[0])
	f.applyConcurrently(mapped(second, `1`, `2`), mapped(second, `1`, `2`))
	if n := f.countWhere(`shard_fire = $1 AND shard_total > 0`, second.RunID); n != 2 {
		t.Fatalf("the same event applied by two schedulers at once wrote %d parts, want 2", n)
	}

	parts, err := runs.LoadScheduled(f.ctx, f.pool, a.Spawned)
	if err != nil || len(parts) != 3 {
		t.Fatalf("load parts: %v, %v", parts, err)
	}
	items := map[int]string{0: `"a"`, 1: `{"b":2}`, 2: `3`}
	for _, p := range parts {
		tr := p.Trigger(0)
		if tr.TriggerType != wire.TriggerMap || tr.ShardTotal != 3 || tr.Map == nil || tr.Map.Fire != root.RunID ||
			string(tr.Map.Item) != items[tr.ShardIndex] || tr.Map.Reduce {
			t.Errorf("part trigger: %+v, map %+v", tr, tr.Map)
		}
		if _, err := wire.EncodeTrigger(tr); err != nil {
			t.Errorf("part %d: %v", tr.ShardIndex, err)
		}
	}
	byIndex := map[int]runs.Planned{}
	for _, p := range parts {
		byIndex[p.ShardIndex] = p
	}

	// Part 1 fails with no retry left (the job's max_retries is 0).
	f.applyAll(0, ended(byIndex[1].RunID, byIndex[1].ScheduledAt, wire.StatusFailed))
	if _, err := f.pool.Exec(f.ctx, `UPDATE jobs SET max_retries = 1 WHERE id = $1`, f.jobID); err != nil {
		t.Fatal(err)
	}
	// The fire is undone: no reduce, however the other parts end.
	if a := f.applyAll(0, ended(byIndex[0].RunID, byIndex[0].ScheduledAt, wire.StatusSucceeded),
		ended(byIndex[2].RunID, byIndex[2].ScheduledAt, wire.StatusSucceeded)); len(a.Spawned) != 0 {
		t.Fatalf("a fire with a part failed for good wrote %v", a.Spawned)
	}
	if n := f.countWhere(`map_reduce = $1 AND id <> $1`, root.RunID); n != 0 {
		t.Fatalf("%d reduce runs of a fire with a part failed for good", n)
	}

	// The second fire, with retries: part 0 fails once, its retry keeps
	// its item; the last two parts end at once and write one reduce run.
	ps, err := runs.LoadScheduled(f.ctx, f.pool, f.ids(`SELECT id FROM job_runs WHERE shard_fire = $1 AND shard_total > 0 ORDER BY shard_index`, second.RunID))
	if err != nil || len(ps) != 2 {
		t.Fatalf("load the second fire's parts: %v, %v", ps, err)
	}
	slices.SortFunc(ps, func(a, b runs.Planned) int { return a.ShardIndex - b.ShardIndex })
	r := f.applyAll(0, ended(ps[0].RunID, ps[0].ScheduledAt, wire.StatusFailed))
	if len(r.Spawned) != 1 {
		t.Fatalf("part 0's failure wrote %v, want its retry", r.Spawned)
	}
	retry, err := runs.LoadScheduled(f.ctx, f.pool, r.Spawned)
	if err != nil || len(retry) != 1 {
		t.Fatal(err)
	}
	if tr := retry[0].Trigger(0); tr.TriggerType != wire.TriggerRetry || tr.ShardIndex != 0 || tr.Map == nil || string(tr.Map.Item) != `1` {
		t.Fatalf("part 0's retry: %+v, map %+v", tr, tr.Map)
	}
	f.applyConcurrently(ended(ps[1].RunID, ps[1].ScheduledAt, wire.StatusSucceeded),
		ended(retry[0].RunID, retry[0].ScheduledAt, wire.StatusSucceeded))
	ids := f.ids(`SELECT id FROM job_runs WHERE map_reduce = $1 AND id <> $1`, second.RunID)
	if len(ids) != 1 {
		t.Fatalf("the last two parts at once wrote %d reduce runs, want 1", len(ids))
	}
	red, err := runs.LoadScheduled(f.ctx, f.pool, ids)
	if err != nil || len(red) != 1 {
		t.Fatal(err)
	}
	if tr := red[0].Trigger(0); tr.TriggerType != wire.TriggerReduce || tr.ShardTotal != 0 || tr.Map == nil || !tr.Map.Reduce || tr.Map.Fire != second.RunID {
		t.Fatalf("reduce trigger: %+v, map %+v", tr, tr.Map)
	}
	r = f.applyAll(0, ended(red[0].RunID, red[0].ScheduledAt, wire.StatusFailed))
	retried, err := runs.LoadScheduled(f.ctx, f.pool, r.Spawned)
	if err != nil || len(retried) != 1 || retried[0].MapFire != second.RunID || retried[0].MapItem != nil {
		t.Fatalf("the reduce run's retry: %+v, %v", retried, err)
	}
}

// A part does not map: its success keeps its fire's course and says why
// its map was ignored.
func TestMapIgnoredInAPart(t *testing.T) {
	f := setup(t)
	root := planned(f.plan(f.fire(0))[0])
	parts := f.applyAll(0, mapped(root, `1`)).Spawned
	ps, err := runs.LoadScheduled(f.ctx, f.pool, parts)
	if err != nil || len(ps) != 1 {
		t.Fatal(err)
	}
	a := f.applyAll(0, mapped(ps[0], `7`, `8`))
	if len(a.Spawned) != 1 || f.countWhere(`shard_fire = $1 AND shard_total > 0`, ps[0].RunID) != 0 {
		t.Fatalf("a part's map wrote %v, want only its fire's reduce run", a.Spawned)
	}
	var msg string
	if err := f.pool.QueryRow(f.ctx, `SELECT message FROM job_runs WHERE id = $1`, ps[0].RunID).Scan(&msg); err != nil || !strings.Contains(msg, "map ignored") {
		t.Fatalf("the part's message %q (%v), want it to say its map was ignored", msg, err)
	}
}

// ids runs a query of run ids.
func (f *fixture) ids(query string, args ...any) []int64 {
	f.t.Helper()
	rows, _ := f.pool.Query(f.ctx, query, args...)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}
