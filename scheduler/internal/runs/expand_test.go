package runs_test

import (
	"slices"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// A broadcast is expanded once: the first Expand writes one part per
// target, part 0 being the run itself; a second (a recovery, another
// scheduler) writes nothing and returns nothing, and the table keeps the
// first one's parts. A scheduler that lost the lease expands nothing.
func TestExpandWrittenOnce(t *testing.T) {
	f := setup(t)
	in := f.plan(f.fire(0), f.fire(1))
	r := planned(in[0])
	targets := []string{"w1", "w2", "w3"}

	parts, err := runs.Expand(f.ctx, f.pool, me, &r, targets)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != len(targets) {
		t.Fatalf("first expand: %d parts, want %d", len(parts), len(targets))
	}
	slices.SortFunc(parts, func(a, b runs.Part) int { return a.Index - b.Index })
	if parts[0].RunID != r.RunID {
		t.Errorf("part 0 is run %d, want the expanded run %d", parts[0].RunID, r.RunID)
	}
	for i, p := range parts {
		got := f.row(p.RunID)
		if p.Index != i || got.status != wire.StatusScheduled || got.shardIndex != i || got.shardTotal != len(targets) || got.workerID != targets[i] {
			t.Errorf("part %d (run %d): %+v, want SCHEDULED part %d of %d on %s", p.Index, p.RunID, got, i, len(targets), targets[i])
		}
	}
	before := f.count()

	for _, again := range [][]string{targets, {"w1", "w2"}} {
		parts2, err := runs.Expand(f.ctx, f.pool, me, &r, again)
		if err != nil {
			t.Fatal(err)
		}
		if len(parts2) != 0 {
			t.Fatalf("second expand returned %v, want nothing", parts2)
		}
	}
	if n := f.count(); n != before {
		t.Fatalf("%d runs after expanding again, want %d", n, before)
	}
	for i, p := range parts {
		if got := f.row(p.RunID); got.shardIndex != i || got.shardTotal != len(targets) || got.workerID != targets[i] {
			t.Errorf("part %d after expanding again: %+v, want the first expand's", i, got)
		}
	}

	lost := planned(in[1])
	lost.Epoch = epoch + 1
	if parts, err := runs.Expand(f.ctx, f.pool, me, &lost, targets); err != nil || len(parts) != 0 {
		t.Fatalf("expand under a lost lease: %v, %v; want nothing", parts, err)
	}
	if got := f.row(lost.RunID); got.shardTotal != 0 {
		t.Fatalf("run expanded under a lost lease: %+v", got)
	}
}
