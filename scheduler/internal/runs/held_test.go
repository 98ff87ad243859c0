package runs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// While group g is paused, its retries, child and node runs due after the
// pause began wait: the sweep leaves them out and Paused.Holds says so;
// a run of those types due before the pause, and a manual run, do not
// wait. After the resume the sweep reads them all.
func TestWaitingRunsOfAPausedGroup(t *testing.T) {
	f := setup(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	pausedAt := now.Add(-time.Minute)
	at := func(typ wire.TriggerType, d time.Duration) runs.Fire {
		fire := f.fire(0)
		fire.TriggerType, fire.ScheduledAt = typ, now.Add(d)
		return fire
	}
	in := f.plan(at(wire.TriggerRetry, -2*time.Minute), at(wire.TriggerRetry, -30*time.Second),
		at(wire.TriggerManual, -20*time.Second), at(wire.TriggerParent, -10*time.Second), at(wire.TriggerWorkflow, -5*time.Second),
		at(wire.TriggerWorkflow, -3*time.Second))
	before, retry, manual, child, node, forcedNode := in[0].RunID, in[1].RunID, in[2].RunID, in[3].RunID, in[4].RunID, in[5].RunID
	// node belongs to a workflow run started before the pause, forcedNode
	// to one started after it (a forced trigger): only node waits.
	for _, w := range []struct {
		id, run int64
		at      time.Time
	}{{9001, node, pausedAt.Add(-time.Second)}, {9002, forcedNode, pausedAt.Add(time.Second)}} {
		if _, err := f.pool.Exec(f.ctx, `INSERT INTO workflow_runs (id, workflow_id, group_name, scheduled_at, status, spec)
			VALUES ($1, 1, 'g', $2, 'RUNNING', '{}')`, w.id, w.at); err != nil {
			t.Fatal(err)
		}
		if _, err := f.pool.Exec(f.ctx, `UPDATE job_runs SET workflow_run = $1, node = 'x', node_attempt = 0, item = 0
			WHERE id = $2`, w.id, w.run); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_groups SET flow_state = 'paused', flow_at = $1 WHERE name = 'g'`, pausedAt); err != nil {
		t.Fatal(err)
	}
	sweep := func() []int64 {
		t.Helper()
		rs, err := runs.LoadOrphans(f.ctx, f.pool, 0, now.Add(time.Minute), now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range rs {
			ids = append(ids, r.RunID)
		}
		slices.Sort(ids)
		return ids
	}
	if got, want := sweep(), []int64{before, manual, forcedNode}; !slices.Equal(got, want) {
		t.Fatalf("the sweep of a paused group read %v, want the retry due before the pause, the manual run and the forced workflow's node run %v", got, want)
	}
	rs, err := runs.LoadShard(f.ctx, f.pool, 0, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	paused, err := runs.LoadPaused(f.ctx, f.pool)
	if err != nil {
		t.Fatal(err)
	}
	if !paused["g"].Equal(pausedAt) || len(paused) != 1 {
		t.Fatalf("paused groups %v, want g since %s", paused, pausedAt)
	}
	for _, r := range rs {
		if r.RunID != before && r.RunID != manual && r.RunID != forcedNode {
			t.Errorf("recovery read run %d (%s), which waits", r.RunID, r.TriggerType)
		}
	}
	// Every run as dispatch would get it (the waiting ones are read by id).
	ids := make([]int64, len(in))
	for i, r := range in {
		ids[i] = r.RunID
	}
	all, err := runs.LoadScheduled(f.ctx, f.pool, ids)
	if err != nil || len(all) != len(in) {
		t.Fatalf("read %d of %d runs: %v", len(all), len(in), err)
	}
	for i := range all {
		r := &all[i]
		want := r.RunID == retry || r.RunID == child || r.RunID == node
		if got := paused.Holds(r); got != want {
			t.Errorf("Holds(run %d, %s, its workflow run's time %s) = %v, want %v", r.RunID, r.TriggerType, r.WorkflowAt, got, want)
		}
	}
	if runs.Paused(nil).Holds(&runs.Planned{Group: "g", TriggerType: wire.TriggerRetry, ScheduledAt: now}) {
		t.Error("with no group paused a run is held")
	}

	if _, err := f.pool.Exec(f.ctx, `UPDATE job_groups SET flow_state = 'active', flow_at = now() WHERE name = 'g'`); err != nil {
		t.Fatal(err)
	}
	if got, want := sweep(), []int64{before, retry, manual, child, node, forcedNode}; !slices.Equal(got, want) {
		t.Fatalf("the sweep after the resume read %v, want every run %v", got, want)
	}
	if paused, err = runs.LoadPaused(f.ctx, f.pool); err != nil || len(paused) != 0 {
		t.Fatalf("paused groups after the resume: %v %v, want none", paused, err)
	}
}

// A group's pause keeps a job's retries not yet due (they wait for the
// resume) and deletes its other planned runs not yet due, as a disable
// does; a disable deletes the retries too.
func TestDeletePlannedForPauseKeepsRetries(t *testing.T) {
	f := setup(t)
	now := time.Now().UTC().Truncate(time.Second)
	at := func(typ wire.TriggerType, d time.Duration) runs.Fire {
		fire := f.fire(0)
		fire.TriggerType, fire.ScheduledAt = typ, now.Add(d)
		return fire
	}
	in := f.plan(at(wire.TriggerSchedule, time.Hour), at(wire.TriggerRetry, 2*time.Hour), at(wire.TriggerManual, 3*time.Hour))
	del := func(fn func(context.Context, pgx.Tx, int64) (time.Time, *time.Time, error)) []int64 {
		t.Helper()
		if err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			_, _, err := fn(f.ctx, tx, f.jobID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		rows, _ := f.pool.Query(f.ctx, `SELECT id FROM job_runs WHERE job_id = $1 ORDER BY id`, f.jobID)
		left, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		return left
	}
	if left := del(runs.DeletePlannedForPause); !slices.Equal(left, []int64{in[1].RunID}) {
		t.Fatalf("after a pause runs %v are left, want the retry %d only", left, in[1].RunID)
	}
	if left := del(runs.DeletePlanned); len(left) != 0 {
		t.Fatalf("after a disable runs %v are left, want none", left)
	}
}
