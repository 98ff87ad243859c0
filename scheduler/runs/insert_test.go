package runs_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Inserting planned runs is idempotent on (job, scheduled_at, shard
// index, attempt): a fire planned again is left out, not written twice.
// A SKIPPED fire is written ended; only SCHEDULED ones are read back for
// publishing.
func TestInsertPlannedIdempotent(t *testing.T) {
	f := setup(t)
	skip := f.fire(1)
	skip.Status, skip.Message = wire.StatusSkipped, "missed"
	fires := []runs.Fire{f.fire(0), skip}

	first := f.plan(fires...)
	if len(first) != 2 {
		t.Fatalf("first insert wrote %d runs, want 2", len(first))
	}
	for i, in := range first {
		if in.JobID != f.jobID || !in.ScheduledAt.Equal(fires[i].ScheduledAt) {
			t.Errorf("inserted %+v, want job %d at %s", in, f.jobID, fires[i].ScheduledAt)
		}
	}
	if again := f.plan(append(fires, f.fire(2))...); len(again) != 1 || !again[0].ScheduledAt.Equal(f.fire(2).ScheduledAt) {
		t.Fatalf("second insert wrote %+v, want only the new fire", again)
	}
	if n := f.count(); n != 3 {
		t.Fatalf("%d runs, want 3", n)
	}
	if r := f.row(first[1].RunID); r.status != wire.StatusSkipped || r.finished == nil {
		t.Fatalf("skipped fire: %+v, want SKIPPED and finished", r)
	}

	loaded, err := runs.LoadShard(f.ctx, f.pool, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 2 || loaded[0].RunID != first[0].RunID || loaded[0].Handler != "h" || loaded[0].TriggerType != wire.TriggerSchedule {
		t.Fatalf("loaded %+v, want the two SCHEDULED runs, oldest first, with their job's handler", loaded)
	}
}

// A backfill's fires that already have runs are left alone.
func TestInsertBackfillIdempotent(t *testing.T) {
	f := setup(t)
	at := []time.Time{f.fire(0).ScheduledAt, f.fire(1).ScheduledAt}
	job := runs.Planned{JobID: f.jobID, Group: "g", Shard: 0, Handler: "h"}
	insert := func(at []time.Time) []runs.Planned {
		var out []runs.Planned
		err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			var err error
			out, err = runs.InsertBackfill(f.ctx, tx, 42, job, at)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := insert(at[:1]); len(got) != 1 || got[0].TriggerType != wire.TriggerBackfill || got[0].Handler != "h" {
		t.Fatalf("first backfill insert: %+v", got)
	}
	if got := insert(at); len(got) != 1 || !got[0].ScheduledAt.Equal(at[1]) {
		t.Fatalf("second backfill insert: %+v, want only the new fire", got)
	}
	if n := f.count(); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
}
