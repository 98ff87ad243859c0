package retention

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Workflow runs follow the run retention: those that ended before the
// cutoff go, with their node runs' keys, however many (more than one
// step's batch here); an active one and recent ones stay.
func TestRetentionForgetsOldWorkflowRuns(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	now := time.Now().UTC()
	today := store.DayStart(now)
	old, recent := today.AddDate(0, 0, -40), today.AddDate(0, 0, -10)
	insert := func(from, n int, status string, at time.Time) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO workflow_runs (id, workflow_id, group_name, scheduled_at, status, spec)
			SELECT i, 7, 'g', $3::timestamptz + i * interval '1 second', $4, '{}'::jsonb FROM generate_series($1::bigint, $2::bigint) AS i`,
			from, from+n-1, at, status); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO workflow_node_runs (workflow_run, node, node_attempt, item, run_id, scheduled_at)
			SELECT i, 'a', 0, 0, 100000 + i, $3 FROM generate_series($1::bigint, $2::bigint) AS i`, from, from+n-1, at); err != nil {
			t.Fatal(err)
		}
	}
	n := workflowRunBatch + 5
	insert(1, n, "SUCCEEDED", old)                // ids 1..n: to delete
	insert(n+1, 1, "FAILED", old.Add(-time.Hour)) // to delete
	insert(n+2, 1, "RUNNING", old)                // active: kept
	insert(n+3, 1, "QUEUED", old)                 // active: kept
	insert(n+4, 1, "CANCELLED", recent)           // inside the retention: kept

	m, err := New(Config{}, Deps{Pool: pool, Log: zaptest.NewLogger(t), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := m.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.WorkflowRuns != int64(n+1) {
		t.Errorf("round deleted %d workflow runs, want %d", rep.WorkflowRuns, n+1)
	}
	rows, _ := pool.Query(ctx, `SELECT id FROM workflow_runs ORDER BY id`)
	left, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{int64(n + 2), int64(n + 3), int64(n + 4)}; !slices.Equal(left, want) {
		t.Errorf("workflow runs left %v, want %v (the active and the recent ones)", left, want)
	}
	var keys int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM workflow_node_runs`).Scan(&keys); err != nil || keys != 3 {
		t.Errorf("%d node run keys left (%v), want the 3 of the runs kept", keys, err)
	}
	// A second round has nothing more to delete.
	if rep, err := m.Round(ctx); err != nil || rep.WorkflowRuns != 0 {
		t.Errorf("second round: %d deleted, %v", rep.WorkflowRuns, err)
	}
}
