package runs_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
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

	loaded, err := runs.LoadShard(f.ctx, f.pool, 0, time.Now().Add(time.Hour))
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
			out, err = runs.InsertBackfill(f.ctx, tx, 42, job, at, nil)
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

// Trigger batches are fixed by the statement that plans their runs: each
// numbered chunk gets one batch id, the id of one of its runs (its first
// one); a fire planned alone has none (NULL), and recovery reads every
// run's batch back. Planning the same fires again, in other chunks,
// writes nothing and leaves every run in the batch it was planned in; a
// new fire planned beside existing ones gets a batch of its own, not
// theirs.
func TestInsertPlannedBatches(t *testing.T) {
	f := setup(t)
	a, b, c, d, e := f.jobID, f.job("b"), f.job("c"), f.job("d"), f.job("e")
	at := f.fire(0).ScheduledAt
	fire := func(job int64, batch int) runs.Fire {
		fr := f.fire(0)
		fr.JobID, fr.Batch = job, batch
		return fr
	}
	lone := f.fire(1) // job a, a second later, alone
	first := f.plan(fire(a, 1), fire(b, 1), fire(c, 1), fire(d, 2), fire(e, 0), lone)
	if len(first) != 6 || !first[5].ScheduledAt.Equal(lone.ScheduledAt) {
		t.Fatalf("wrote %+v, want 6 runs in the order of fires", first)
	}
	byJob := map[int64]runs.Inserted{}
	for _, in := range first {
		if in.ScheduledAt.Equal(at) {
			byJob[in.JobID] = in
		}
	}
	chunk1 := []runs.Inserted{byJob[a], byJob[b], byJob[c]}
	batch1 := min(chunk1[0].RunID, chunk1[1].RunID, chunk1[2].RunID)
	for _, in := range chunk1 {
		if in.Batch != batch1 {
			t.Errorf("run %d of chunk 1: batch %d, want %d (the chunk's first run id)", in.RunID, in.Batch, batch1)
		}
		if r := f.row(in.RunID); r.batch == nil || *r.batch != batch1 {
			t.Errorf("run %d of chunk 1: job_runs.batch %v, want %d", in.RunID, r.batch, batch1)
		}
	}
	if got := byJob[d]; got.Batch != got.RunID {
		t.Errorf("chunk 2 (one run %d): batch %d, want its own id", got.RunID, got.Batch)
	}
	for _, in := range []runs.Inserted{byJob[e], first[5]} { // first[5]: lone, in the order of fires
		if in.Batch != 0 || f.row(in.RunID).batch != nil {
			t.Errorf("run %d planned alone: batch %d, job_runs.batch %v; want 0 and NULL", in.RunID, in.Batch, f.row(in.RunID).batch)
		}
	}

	loaded, err := runs.LoadShard(f.ctx, f.pool, 0, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for _, p := range loaded {
		got[p.RunID] = p.Batch
	}
	for _, in := range first {
		if b, ok := got[in.RunID]; !ok || b != in.Batch {
			t.Errorf("recovery read run %d with batch %d (found %v), want %d", in.RunID, b, ok, in.Batch)
		}
	}

	// The same fires again, chunked otherwise: nothing is written, and
	// nothing moves to another batch.
	if again := f.plan(fire(a, 1), fire(d, 1), fire(e, 1), fire(b, 2), fire(c, 0)); len(again) != 0 {
		t.Fatalf("planning the same fires again wrote %+v", again)
	}
	for _, in := range first {
		r := f.row(in.RunID)
		if (in.Batch == 0) != (r.batch == nil) || (r.batch != nil && *r.batch != in.Batch) {
			t.Errorf("run %d: batch %v after re-planning, want %d", in.RunID, r.batch, in.Batch)
		}
	}

	// A new fire chunked with planned ones: only it is written, in a
	// batch none of the planned runs is in.
	g := f.job("g")
	mixed := f.plan(fire(a, 1), fire(g, 1), fire(b, 1))
	if len(mixed) != 1 || mixed[0].JobID != g || mixed[0].Batch == 0 || mixed[0].Batch == batch1 || mixed[0].Batch == byJob[d].Batch {
		t.Fatalf("planning a new fire beside planned ones wrote %+v; want only job %d's run, in a batch of its own", mixed, g)
	}
}

// A chunk that would put runs of two instants, or a SKIPPED run, into one
// message is refused and nothing is written.
func TestInsertPlannedRefusesMixedBatches(t *testing.T) {
	f := setup(t)
	b := f.job("b")
	later := f.fire(1)
	later.JobID, later.Batch = b, 1
	now := f.fire(0)
	now.Batch = 1
	skipped := f.fire(2)
	skipped.Status, skipped.Batch = wire.StatusSkipped, 2
	for _, fires := range [][]runs.Fire{{now, later}, {skipped}} {
		err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			if err := runs.Fence(f.ctx, tx, 0, me, epoch, time.Minute); err != nil {
				return err
			}
			_, err := runs.InsertPlanned(f.ctx, tx, 0, fires)
			return err
		})
		if err == nil {
			t.Errorf("InsertPlanned(%+v) succeeded, want it refused", fires)
		}
	}
	if n := f.count(); n != 0 {
		t.Fatalf("%d runs written, want none", n)
	}
}
