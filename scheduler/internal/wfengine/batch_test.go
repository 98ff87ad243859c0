package wfengine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/shared/wire"
)

// endAll records the ends of ids in one transaction, as one applier batch
// does, and returns the node runs that created.
func (e *env) endAll(status wire.Status, ids ...int64) []int64 {
	e.t.Helper()
	return e.endCapped(0, status, ids...)
}

// endCapped is endAll with the applier's cap on the runs of one fire
// (--max-chain-runs; 0: none).
func (e *env) endCapped(maxChainRuns int, status wire.Status, ids ...int64) []int64 {
	e.t.Helper()
	now := time.Now()
	var ups []runs.Update
	for _, id := range ids {
		var at time.Time
		if err := e.pool.QueryRow(e.ctx, `SELECT scheduled_at FROM job_runs WHERE id = $1`, id).Scan(&at); err != nil {
			e.t.Fatal(err)
		}
		ups = append(ups, runs.Update{RunID: id, Group: "g", ScheduledAt: at, Status: status, StartedAt: &now, FinishedAt: &now})
	}
	var spawned []int64
	err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		done, err := runs.ApplyEvents(e.ctx, tx, ups, maxChainRuns)
		if err != nil {
			return err
		}
		advanced, err := wfengine.Advance(e.ctx, tx, done.NodeEnds, maxChainRuns)
		spawned = advanced.Spawned
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return spawned
}

// StartAll starts fires of several workflows together as each alone
// would: two fires of a serial workflow run one and queue the other, two
// of a concurrent one both run, a fire handed over twice starts once. One
// applier batch then advances all their runs, and the end of the serial
// workflow's run starts its queued one in the same transaction.
func TestStartAllAndAdvanceTogether(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{})
	conc, err := e.st.CreateWorkflow(e.ctx, store.System, store.Workflow{
		Job:    store.Job{Group: "g", Name: "w2", ScheduleType: "none", Timezone: "UTC", MisfirePolicy: "skip", Enabled: true},
		Spec:   e.wf.Spec,
		Policy: wfengine.Policy{Overlap: wfengine.OverlapConcurrent},
	})
	if err != nil {
		t.Fatal(err)
	}
	fire := func(wf int64) runs.Planned {
		p, err := e.st.InsertManualRun(e.ctx, store.System, wf, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	s1, s2, c1, c2 := fire(e.wf.ID), fire(e.wf.ID), fire(conc.ID), fire(conc.ID)
	// Out of order, and s1 twice.
	sts, done, err := wfengine.StartAll(e.ctx, e.pool, "me", []runs.Planned{c2, s2, s1, c1, s1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{wfengine.RunRunning, wfengine.RunQueued, wfengine.RunRunning, wfengine.RunRunning, ""}
	if !slices.Equal(sts, want) {
		t.Fatalf("statuses %v, want %v", sts, want)
	}
	if len(done.Spawned) != 3 {
		t.Fatalf("spawned %v, want the first node of the three running runs", done.Spawned)
	}
	a := func(p runs.Planned) int64 {
		t.Helper()
		nr := e.nodeRuns(p.RunID)
		if len(nr["a"]) != 1 {
			t.Fatalf("run %d: node runs %v, want one of a", p.RunID, nr)
		}
		return nr["a"][0]
	}
	if got := e.endAll(wire.StatusSucceeded, a(s1), a(c1), a(c2)); len(got) != 3 {
		t.Fatalf("the ends of three a's created %v, want three b's", got)
	}
	b := func(p runs.Planned) int64 { return e.nodeRuns(p.RunID)["b"][0] }
	// s1 ends, and s2 starts: its a is created in the same transaction.
	if got := e.endAll(wire.StatusSucceeded, b(s1), b(c1), b(c2)); len(got) != 1 {
		t.Fatalf("the ends of three b's created %v, want the queued run's a", got)
	}
	for _, p := range []runs.Planned{s1, c1, c2} {
		if wf, own := e.status(p.RunID); wf != wfengine.RunSucceeded || own != wire.StatusSucceeded {
			t.Errorf("run %d: %s (own %s), want SUCCEEDED", p.RunID, wf, own)
		}
	}
	if wf, own := e.status(s2.RunID); wf != wfengine.RunRunning || own != wire.StatusRunning || len(e.nodeRuns(s2.RunID)["a"]) != 1 {
		t.Errorf("queued run %s (own %s), runs %v: want RUNNING with a started", wf, own, e.nodeRuns(s2.RunID))
	}
}
