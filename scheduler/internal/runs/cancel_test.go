package runs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Cancel ends a SCHEDULED run CANCELLED, and only such a run. It races the
// shard owner unfenced (cancel.go): a deferred TRIGGERED mark that lands
// after the cancel leaves the run CANCELLED, and a cancel after the mark
// changes nothing.
func TestCancelOnlyFromScheduled(t *testing.T) {
	f := setup(t)
	in := f.plan(f.fire(0), f.fire(1))
	a, b := in[0], in[1]
	triggered := func(in runs.Inserted) runs.Mark {
		return runs.Mark{RunID: in.RunID, ScheduledAt: in.ScheduledAt, Epoch: epoch, Status: wire.StatusTriggered, Seq: 9, At: time.Now()}
	}
	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{triggered(b)}); err != nil {
		t.Fatal(err)
	}
	cancel := func(in runs.Inserted) bool {
		t.Helper()
		var done bool
		if err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			var err error
			done, err = runs.Cancel(f.ctx, tx, in.RunID, in.ScheduledAt, "killed by ann")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return done
	}
	if !cancel(a) {
		t.Fatal("cancel of a SCHEDULED run did nothing")
	}
	var msg string
	if err := f.pool.QueryRow(f.ctx, `SELECT message FROM job_runs WHERE id = $1`, a.RunID).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if r := f.row(a.RunID); r.status != wire.StatusCancelled || r.finished == nil || msg != "killed by ann" {
		t.Fatalf("cancelled run: %s, finished %v, message %q; want CANCELLED, finished, the reason", r.status, r.finished, msg)
	}
	if cancel(a) || cancel(b) {
		t.Fatal("cancel of a CANCELLED or TRIGGERED run reported done")
	}
	if r := f.row(b.RunID); r.status != wire.StatusTriggered {
		t.Fatalf("TRIGGERED run after a cancel: %s, want TRIGGERED (its worker ends it)", r.status)
	}
	// Dispatch's deferred mark of a, published before the cancel, lands after it.
	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{triggered(a)}); err != nil {
		t.Fatal(err)
	}
	if r := f.row(a.RunID); r.status != wire.StatusCancelled {
		t.Fatalf("cancelled run after a late TRIGGERED mark: %s, want CANCELLED", r.status)
	}
}

// CancelBackfill ends the operation's SCHEDULED runs and returns them; its
// runs already out and other runs are left alone.
func TestCancelBackfill(t *testing.T) {
	f := setup(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	job := runs.Planned{JobID: f.jobID, Group: "g", Shard: 0}
	var written []runs.Planned
	if err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		written, err = runs.InsertBackfill(f.ctx, tx, 42, job, []time.Time{base, base.Add(time.Hour), base.Add(2 * time.Hour)}, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	other := f.plan(f.fire(0))[0]
	started := written[0]
	startedAt := time.Now()
	f.apply(runs.Update{RunID: started.RunID, ScheduledAt: started.ScheduledAt, Group: "g", Status: wire.StatusRunning, StartedAt: &startedAt})

	var ids []int64
	if err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		ids, err = runs.CancelBackfill(f.ctx, tx, 42)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if want := []int64{written[1].RunID, written[2].RunID}; !slices.Equal(ids, want) {
		t.Fatalf("cancelled %v, want the backfill's SCHEDULED runs %v", ids, want)
	}
	for id, want := range map[int64]wire.Status{written[1].RunID: wire.StatusCancelled, written[2].RunID: wire.StatusCancelled,
		started.RunID: wire.StatusRunning, other.RunID: wire.StatusScheduled} {
		if r := f.row(id); r.status != want {
			t.Errorf("run %d: %s, want %s", id, r.status, want)
		}
	}
}

// DeletePlanned deletes a job's SCHEDULED runs not yet due, and returns
// the earliest scheduled one; a due run (it may be out), a run already
// published and a workflow's node run not yet due (a retry in its backoff:
// its workflow run waits for it) stay.
func TestDeletePlanned(t *testing.T) {
	f := setup(t)
	now := time.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) runs.Fire {
		fire := f.fire(0)
		fire.ScheduledAt = now.Add(d)
		return fire
	}
	in := f.plan(at(-time.Minute), at(time.Hour), at(2*time.Hour), at(3*time.Hour), at(4*time.Hour))
	due, first, second, out, node := in[0], in[1], in[2], in[3], in[4]
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_runs SET workflow_run = 1, node = 'x', node_attempt = 0, item = 0
		WHERE id = $1`, node.RunID); err != nil {
		t.Fatal(err)
	}
	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{{RunID: out.RunID, ScheduledAt: out.ScheduledAt, Epoch: epoch,
		Status: wire.StatusTriggered, Seq: 3, At: now}}); err != nil {
		t.Fatal(err)
	}
	var (
		cutoff   time.Time
		earliest *time.Time
	)
	if err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		cutoff, earliest, err = runs.DeletePlanned(f.ctx, tx, f.jobID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if earliest == nil || !earliest.Equal(first.ScheduledAt) || cutoff.Before(due.ScheduledAt) || !cutoff.Before(first.ScheduledAt) {
		t.Fatalf("earliest deleted %v, cutoff %v; want %v and a cutoff between the due run and it", earliest, cutoff, first.ScheduledAt)
	}
	var left []int64
	rows, _ := f.pool.Query(f.ctx, `SELECT id FROM job_runs WHERE job_id = $1 ORDER BY id`, f.jobID)
	left, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{due.RunID, out.RunID, node.RunID}; !slices.Equal(left, want) {
		t.Fatalf("runs left %v, want the due one, the published one and the node run %v (deleted %d, %d)", left, want, first.RunID, second.RunID)
	}
}
