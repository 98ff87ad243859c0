package runs_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// Delete removes a terminal run with its idempotency keys and SLA events,
// and never a run not ended or one of a workflow run, whatever its caller
// checked.
func TestDeleteOnlyEndedRunsOutsideWorkflows(t *testing.T) {
	f := setup(t)
	in := f.plan(f.fire(0), f.fire(1), f.fire(2))
	ended, live, node := in[0], in[1], in[2]
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_runs SET status = 'FAILED', finished_at = now() WHERE id = ANY($1)`,
		[]int64{ended.RunID, node.RunID}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE job_runs SET workflow_run = 999, node = 'n' WHERE id = $1`, node.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `INSERT INTO trigger_keys (job_id, key, request, run_id) VALUES ($1, 'k1', '\x00', $2), ($1, 'k2', '\x00', $3)`,
		f.jobID, ended.RunID, live.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `WITH r AS (INSERT INTO alert_rules (name, group_name, events) VALUES ('late', 'g', '{late_start}') RETURNING id)
		INSERT INTO alert_sla (rule_id, run_id, event) SELECT r.id, x, 'late_start' FROM r, unnest($1::bigint[]) x`,
		[]int64{ended.RunID, live.RunID}); err != nil {
		t.Fatal(err)
	}
	del := func(in runs.Inserted) bool {
		t.Helper()
		var done bool
		if err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			var err error
			done, err = runs.Delete(f.ctx, tx, in.RunID, in.ScheduledAt)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return done
	}
	if del(live) || del(node) {
		t.Fatal("Delete removed a SCHEDULED run or a node run")
	}
	if !del(ended) {
		t.Fatal("Delete of an ended run did nothing")
	}
	if del(ended) {
		t.Fatal("a second Delete of the same run reported done")
	}
	count := func(q string, id int64) int {
		t.Helper()
		var n int
		if err := f.pool.QueryRow(f.ctx, q, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		what string
		q    string
		id   int64
		want int
	}{
		{"the deleted run's row", `SELECT count(*) FROM job_runs WHERE id = $1`, ended.RunID, 0},
		{"its idempotency key", `SELECT count(*) FROM trigger_keys WHERE run_id = $1`, ended.RunID, 0},
		{"its SLA event", `SELECT count(*) FROM alert_sla WHERE run_id = $1`, ended.RunID, 0},
		{"the live run's row", `SELECT count(*) FROM job_runs WHERE id = $1`, live.RunID, 1},
		{"the live run's key", `SELECT count(*) FROM trigger_keys WHERE run_id = $1`, live.RunID, 1},
		{"the live run's SLA event", `SELECT count(*) FROM alert_sla WHERE run_id = $1`, live.RunID, 1},
		{"the node run's row", `SELECT count(*) FROM job_runs WHERE id = $1`, node.RunID, 1},
	} {
		if got := count(c.q, c.id); got != c.want {
			t.Errorf("%s: %d rows, want %d", c.what, got, c.want)
		}
	}
}
