package route

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/shared/wire"
)

// The routing decisions that need no broker. failover and busyover ask
// real workers and are tested with them (scheduler/route_test.go).

func liveSet(ids ...string) func(string) []wire.WorkerInfo {
	return func(group string) []wire.WorkerInfo {
		var out []wire.WorkerInfo
		for _, id := range ids {
			out = append(out, wire.WorkerInfo{ID: id, Group: group, Handlers: []string{"h"}})
		}
		return out
	}
}

func TestConsistentHashMovesOnlyTheLeaversJobs(t *testing.T) {
	ctx := context.Background()
	five := New(liveSet("a", "b", "c", "d", "e"), nil, zap.NewNop())
	four := New(liveSet("a", "b", "c", "d"), nil, zap.NewNop())
	const jobs = 10_000
	perWorker := map[string]int{}
	moved := 0
	for j := int64(1); j <= jobs; j++ {
		before := five.Pick(ctx, j, "g", "h", policy.RouteConsistentHash)
		if again := five.Pick(ctx, j, "g", "h", policy.RouteConsistentHash); again != before {
			t.Fatalf("job %d: %s then %s over the same live set", j, before, again)
		}
		perWorker[before]++
		after := four.Pick(ctx, j, "g", "h", policy.RouteConsistentHash)
		if before != "e" && after != before {
			moved++
		}
	}
	if moved != 0 {
		t.Errorf("%d jobs not on the leaving worker moved", moved)
	}
	for w, n := range perWorker {
		if n < jobs/5/2 || n > jobs/5*2 {
			t.Errorf("worker %s got %d of %d jobs: the ring is uneven (%v)", w, n, jobs, perWorker)
		}
	}
}

func TestCountingStrategiesSpreadEvenly(t *testing.T) {
	ctx := context.Background()
	for _, s := range []policy.Route{policy.RouteRound, policy.RouteLFU, policy.RouteLRU} {
		p := New(liveSet("a", "b", "c"), nil, zap.NewNop())
		got := map[string]int{}
		var seq []string
		for range 9 {
			w := p.Pick(ctx, 1, "g", "h", s)
			got[w]++
			seq = append(seq, w)
		}
		if got["a"] != 3 || got["b"] != 3 || got["c"] != 3 {
			t.Errorf("%s: %v (%v), want 3 each", s, got, seq)
		}
		for i := 3; i < len(seq); i++ {
			if seq[i] != seq[i-3] {
				t.Errorf("%s: %v is not a cycle over the three workers", s, seq)
				break
			}
		}
	}
}

// A worker that joins is preferred by lfu and lru until it catches up.
func TestLeastUsedPrefersANewWorker(t *testing.T) {
	ctx := context.Background()
	ids := []string{"a", "b"}
	p := New(func(g string) []wire.WorkerInfo { return liveSet(ids...)(g) }, nil, zap.NewNop())
	for _, s := range []policy.Route{policy.RouteLFU, policy.RouteLRU} {
		ids = []string{"a", "b"}
		for range 4 {
			p.Pick(ctx, 7, "g", "h", s)
		}
		ids = []string{"a", "b", "c"}
		if w := p.Pick(ctx, 7, "g", "h", s); w != "c" {
			t.Errorf("%s: picked %s after c joined, want c", s, w)
		}
	}
}

func TestCandidates(t *testing.T) {
	p := New(func(g string) []wire.WorkerInfo {
		return []wire.WorkerInfo{{ID: "z", Handlers: []string{"h"}}, {ID: "a", Handlers: []string{"other"}}, {ID: "m", Handlers: []string{"h"}}}
	}, nil, zap.NewNop())
	if got := fmt.Sprint(p.Candidates("g", "h")); got != "[m z]" {
		t.Errorf("candidates for h: %s, want [m z] (those with the handler, by id)", got)
	}
	if got := fmt.Sprint(p.Candidates("g", "missing")); got != "[a m z]" {
		t.Errorf("candidates for a handler nobody has: %s, want every live worker", got)
	}
	empty := New(liveSet(), nil, zap.NewNop())
	if w := empty.Pick(context.Background(), 1, "g", "h", policy.RouteFirst); w != "" {
		t.Errorf("no live worker: picked %q, want the shared queue", w)
	}
}

// A batch of a consistent_hash job's runs goes to the worker a lone
// trigger of the job would, but only to one whose heartbeat says it reads
// batches on its directed subject; an older worker's jobs are batched on
// the group's subject instead.
func TestBatchTarget(t *testing.T) {
	ctx := context.Background()
	live := func(group string) []wire.WorkerInfo {
		return []wire.WorkerInfo{
			{ID: "new", Group: group, Handlers: []string{"h"}, DirectedBatches: true},
			{ID: "old", Group: group, Handlers: []string{"h"}},
		}
	}
	p := New(live, nil, zap.NewNop())
	got := map[string]int{}
	for j := int64(1); j <= 200; j++ {
		lone := p.Pick(ctx, j, "g", "h", policy.RouteConsistentHash)
		batch := p.BatchTarget(j, "g", "h")
		switch {
		case lone == "new" && batch != "new":
			t.Fatalf("job %d: lone trigger to new, batch to %q", j, batch)
		case lone == "old" && batch != "":
			t.Fatalf("job %d: batch to %q, want the group's batch subject (old cannot read it)", j, batch)
		}
		got[lone]++
	}
	if got["new"] == 0 || got["old"] == 0 {
		t.Fatalf("jobs per worker %v: both workers should have some", got)
	}
	if id := New(liveSet(), nil, zap.NewNop()).BatchTarget(1, "g", "h"); id != "" {
		t.Errorf("no live worker: %q, want the group's batch subject", id)
	}
}
