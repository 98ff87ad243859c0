package runs_test

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// A scheduler that lost the lease — a newer epoch, another owner, or an
// expired lease — writes nothing with Record; the holder does. Epoch 0 (a
// run created outside planning) is not fenced.
func TestRecordFenced(t *testing.T) {
	f := setup(t)
	in := f.plan(f.fire(0), f.fire(1))
	a, b := in[0], in[1]
	now := time.Now()
	triggered := func(in runs.Inserted, ep int64, seq uint64) runs.Mark {
		return runs.Mark{RunID: in.RunID, ScheduledAt: in.ScheduledAt, Epoch: ep, Status: wire.StatusTriggered, Seq: seq, At: now}
	}
	skipped := runs.Mark{RunID: b.RunID, ScheduledAt: b.ScheduledAt, Epoch: epoch + 1, Status: wire.StatusSkipped, At: now, Message: "late"}

	for _, owner := range []string{me, "other"} {
		ep := int64(epoch + 1)
		if owner != me {
			ep = epoch
		}
		if err := runs.Record(f.ctx, f.pool, owner, []runs.Mark{triggered(a, ep, 7), skipped}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{a.RunID, b.RunID} {
			if r := f.row(id); r.status != wire.StatusScheduled || r.seq != nil {
				t.Fatalf("run %d after marks by %s at epoch %d: %s seq %v, want SCHEDULED untouched", id, owner, ep, r.status, r.seq)
			}
		}
	}

	if _, err := f.pool.Exec(f.ctx, `UPDATE scheduler_shards SET expires_at = now() - interval '1 second' WHERE shard = 0`); err != nil {
		t.Fatal(err)
	}
	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{triggered(a, epoch, 7)}); err != nil {
		t.Fatal(err)
	}
	if r := f.row(a.RunID); r.status != wire.StatusScheduled {
		t.Fatalf("run after a mark under an expired lease: %s, want SCHEDULED", r.status)
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE scheduler_shards SET expires_at = now() + interval '1 hour' WHERE shard = 0`); err != nil {
		t.Fatal(err)
	}

	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{triggered(a, epoch, 7)}); err != nil {
		t.Fatal(err)
	}
	if r := f.row(a.RunID); r.status != wire.StatusTriggered || r.seq == nil || *r.seq != 7 {
		t.Fatalf("run after the holder's mark: %s seq %v, want TRIGGERED seq 7", r.status, r.seq)
	}
	if err := runs.Record(f.ctx, f.pool, "other", []runs.Mark{triggered(b, 0, 8)}); err != nil {
		t.Fatal(err)
	}
	if r := f.row(b.RunID); r.status != wire.StatusTriggered || r.seq == nil || *r.seq != 8 {
		t.Fatalf("unfenced run after another scheduler's mark: %s seq %v, want TRIGGERED seq 8", r.status, r.seq)
	}
}

// Marking TRIGGERED never moves a run backwards: a run the applier moved
// with the trigger's sequence is left alone, one moved without it (an
// older worker) only gets the sequence, and an end mark touches nothing
// but a SCHEDULED run.
func TestRecordNeverMovesBack(t *testing.T) {
	f := setup(t)
	in := f.plan(f.fire(0), f.fire(1), f.fire(2))
	running, ended, published := in[0], in[1], in[2]
	now := time.Now().UTC().Truncate(time.Microsecond)
	mark := func(in runs.Inserted, st wire.Status, seq uint64) runs.Mark {
		return runs.Mark{RunID: in.RunID, ScheduledAt: in.ScheduledAt, Epoch: epoch, Status: st, Seq: seq, At: now}
	}

	f.apply(runs.Update{RunID: running.RunID, Group: "g", ScheduledAt: running.ScheduledAt, Status: wire.StatusRunning,
		StartedAt: &now, StreamSeq: 5, TriggeredAt: &now})
	f.apply(runs.Update{RunID: ended.RunID, Group: "g", ScheduledAt: ended.ScheduledAt, Status: wire.StatusSucceeded,
		StartedAt: &now, FinishedAt: &now})
	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{mark(running, wire.StatusTriggered, 9), mark(ended, wire.StatusTriggered, 9),
		mark(published, wire.StatusTriggered, 3)}); err != nil {
		t.Fatal(err)
	}
	if r := f.row(running.RunID); r.status != wire.StatusRunning || r.seq == nil || *r.seq != 5 {
		t.Errorf("RUNNING run with its sequence after a TRIGGERED mark: %s seq %v, want RUNNING seq 5", r.status, r.seq)
	}
	if r := f.row(ended.RunID); r.status != wire.StatusSucceeded || r.seq == nil || *r.seq != 9 {
		t.Errorf("SUCCEEDED run without a sequence after a TRIGGERED mark: %s seq %v, want SUCCEEDED seq 9", r.status, r.seq)
	}

	// Once TRIGGERED with a sequence, a repeated mark and an end mark
	// change nothing.
	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{mark(published, wire.StatusTriggered, 4)}); err != nil {
		t.Fatal(err)
	}
	if err := runs.Record(f.ctx, f.pool, me, []runs.Mark{mark(published, wire.StatusSkipped, 0), mark(running, wire.StatusFailed, 0)}); err != nil {
		t.Fatal(err)
	}
	if r := f.row(published.RunID); r.status != wire.StatusTriggered || r.seq == nil || *r.seq != 3 || r.finished != nil {
		t.Errorf("TRIGGERED run after later marks: %s seq %v finished %v, want TRIGGERED seq 3 unfinished", r.status, r.seq, r.finished)
	}
	if r := f.row(running.RunID); r.status != wire.StatusRunning {
		t.Errorf("RUNNING run after an end mark: %s, want RUNNING", r.status)
	}
}
