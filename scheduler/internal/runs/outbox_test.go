package runs_test

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// A fire dispatch records SKIPPED by its misfire policy goes to the alert
// outbox in the statement that ends it (the event missed), once a rule
// covers its job; a fenced-out mark writes neither, and nothing goes to
// the outbox while no rule listens.
func TestSkippedMarkGoesToTheAlertOutbox(t *testing.T) {
	f := setup(t)
	in := f.plan(f.fire(0), f.fire(1), f.fire(2))
	now := time.Now()
	skip := func(owner string, r runs.Inserted) {
		t.Helper()
		if err := runs.Record(f.ctx, f.pool, owner, []runs.Mark{{RunID: r.RunID, ScheduledAt: r.ScheduledAt, Epoch: epoch,
			Status: wire.StatusSkipped, At: now, Message: "misfire: skipped"}}); err != nil {
			t.Fatal(err)
		}
	}
	outbox := func() (n int, run int64) {
		t.Helper()
		if err := f.pool.QueryRow(f.ctx, `SELECT count(*), COALESCE(max(run_id), 0) FROM alert_outbox WHERE status = 'SKIPPED'`).Scan(&n, &run); err != nil {
			t.Fatal(err)
		}
		return n, run
	}

	skip(me, in[0]) // no rule yet
	if n, _ := outbox(); n != 0 {
		t.Fatalf("%d outbox rows with no rule listening", n)
	}
	if _, err := f.pool.Exec(f.ctx, `WITH c AS (INSERT INTO alert_channels (name, kind, group_name, target)
			VALUES ('hook', 'webhook', 'g', 'https://hooks.example.com/in') RETURNING id),
		r AS (INSERT INTO alert_rules (name, group_name, events) VALUES ('missed', 'g', '{missed}') RETURNING id)
		INSERT INTO alert_rule_channels (rule_id, channel_id) SELECT r.id, c.id FROM r, c`); err != nil {
		t.Fatal(err)
	}
	skip("other", in[1]) // fenced out: not its shard
	if r := f.row(in[1].RunID); r.status != wire.StatusScheduled {
		t.Fatalf("a fenced-out SKIPPED mark moved the run to %s", r.status)
	}
	if n, _ := outbox(); n != 0 {
		t.Fatalf("%d outbox rows after a fenced-out mark", n)
	}
	skip(me, in[2])
	if n, run := outbox(); n != 1 || run != in[2].RunID {
		t.Fatalf("outbox after the holder's SKIPPED mark: %d rows (run %d), want run %d", n, run, in[2].RunID)
	}
	skip(me, in[2]) // again: the run is no longer SCHEDULED
	if n, _ := outbox(); n != 1 {
		t.Fatalf("%d outbox rows after marking the same run twice", n)
	}
}
