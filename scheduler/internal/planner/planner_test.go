package planner_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

type sink struct {
	mu   sync.Mutex
	runs []runs.Planned
}

func (s *sink) add(rs []runs.Planned) {
	s.mu.Lock()
	s.runs = append(s.runs, rs...)
	s.mu.Unlock()
}

// held is the lease the tests plan under: shard 0, written to
// scheduler_shards by setup so that fencing passes.
var held = lease.Lease{Shard: 0, Epoch: 1, Deadline: time.Now().Add(time.Hour)}

func setup(t *testing.T) (*store.Store, *pgxpool.Pool, *planner.Planner, *sink) {
	t.Helper()
	return setupWith(t, planner.Config{Window: 5 * time.Second}, nil)
}

// setupWith is setup with cfg, and a tracer when tr is not nil.
func setupWith(t *testing.T, cfg planner.Config, tr *spans.Tracer) (*store.Store, *pgxpool.Pool, *planner.Planner, *sink) {
	t.Helper()
	return setupDeps(t, cfg, func(d *planner.Deps) { d.Trace = tr })
}

// setupDeps is setupWith with the planner's Deps edited by edit.
func setupDeps(t *testing.T, cfg planner.Config, edit func(*planner.Deps)) (*store.Store, *pgxpool.Pool, *planner.Planner, *sink) {
	t.Helper()
	pool, st := pgtest.Store(t)
	pgtest.HoldShard(t, pool, "me", 1)
	out := &sink{}
	deps := planner.Deps{Pool: pool, Owner: "me",
		Leases: func() []lease.Lease { return []lease.Lease{held} }, Out: out.add, Log: zaptest.NewLogger(t)}
	edit(&deps)
	p, err := planner.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return st, pool, p, out
}

func everySecond(name string) store.Job {
	return store.Job{Group: "g", Name: name, Handler: "h", ScheduleType: "cron", ScheduleExpr: "@every 1s",
		Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any", BlockStrategy: "serial", Enabled: true}
}

func countRuns(t *testing.T, pool *pgxpool.Pool, jobID int64, status string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = $2`, jobID, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// skippedFires counts the job's SKIPPED runs and the fires they stand for
// (a run may stand for a range of them: policy.ParseSkipped).
func skippedFires(t *testing.T, pool *pgxpool.Pool, jobID int64) (runs, fires int) {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `SELECT message FROM job_runs WHERE job_id = $1 AND status = 'SKIPPED'`, jobID)
	msgs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		n, _, _, _, ok := policy.ParseSkipped(m)
		if !ok {
			n = 1
		}
		runs, fires = runs+1, fires+n
	}
	return runs, fires
}

// plannedAfter counts the job's planned runs due after at. Removing a
// job's planned runs spares those already due (the wheel fires them), so
// on a slow machine a run planned a moment ago may rightly remain; none
// due later may.
func plannedAfter(t *testing.T, pool *pgxpool.Pool, jobID int64, at time.Time) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM job_runs
		WHERE job_id = $1 AND status = 'SCHEDULED' AND scheduled_at > $2`, jobID, at).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// One pass writes every fire of the window as a SCHEDULED run, hands them
// over, and moves next_fire_at past the window; a second pass at once
// plans nothing more (the pre-read is durable and not repeated).
func TestPlanShardWritesWindowOnce(t *testing.T) {
	st, pool, p, out, j := setupJob(t)
	ctx := context.Background()
	n, err := p.PlanShard(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if n < 4 || n > 6 {
		t.Fatalf("planned %d runs for a 5 s window of an @every 1s job, want about 5", n)
	}
	if got := countRuns(t, pool, j.ID, "SCHEDULED"); got != n {
		t.Fatalf("%d SCHEDULED rows, planner reported %d", got, n)
	}
	if len(out.runs) != n {
		t.Fatalf("handed %d runs to the wheel, want %d", len(out.runs), n)
	}
	after, err := st.GetJob(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := out.runs[len(out.runs)-1].ScheduledAt
	if after.NextFireAt == nil || !after.NextFireAt.Equal(last.Add(time.Second)) {
		t.Fatalf("next_fire_at %v, want one second after the last planned fire %s", after.NextFireAt, last)
	}
	n2, err := p.PlanShard(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if n2 > 1 {
		t.Fatalf("second pass planned %d runs, want at most the one fire that entered the window since", n2)
	}
}

// Editing a job removes its planned, untriggered runs in the same
// transaction, so the old definition fires no more.
func TestUpdateRemovesPlannedRuns(t *testing.T) {
	st, pool, _, _, j := setupPlanned(t)
	ctx := context.Background()
	if countRuns(t, pool, j.ID, "SCHEDULED") == 0 {
		t.Fatal("nothing planned")
	}
	j.ScheduleExpr = "@every 1h"
	if _, err := st.UpdateJob(ctx, store.System, j); err != nil {
		t.Fatal(err)
	}
	if got := plannedAfter(t, pool, j.ID, time.Now()); got != 0 {
		t.Fatalf("%d planned runs left after the edit, want 0", got)
	}
}

// Disabling removes planned runs and rewinds next_fire_at, so that after
// re-enabling, the fires missed meanwhile go through the misfire policy.
func TestDisableEnableAppliesMisfirePolicy(t *testing.T) {
	st, pool, p, _, j := setupPlanned(t)
	ctx := context.Background()
	if _, err := st.SetEnabled(ctx, store.System, j.ID, false); err != nil {
		t.Fatal(err)
	}
	if got := plannedAfter(t, pool, j.ID, time.Now()); got != 0 {
		t.Fatalf("%d planned runs left after disable, want 0", got)
	}
	// Pretend the job was disabled for a minute.
	if _, err := pool.Exec(ctx, `UPDATE jobs SET next_fire_at = next_fire_at - interval '60 seconds' WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetEnabled(ctx, store.System, j.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PlanShard(ctx, held); err != nil {
		t.Fatal(err)
	}
	runs, fires := skippedFires(t, pool, j.ID)
	if runs != 1 || fires < 55 || fires > 65 {
		t.Fatalf("%d SKIPPED runs standing for %d fires after a minute disabled with policy skip, want one for about 60", runs, fires)
	}
}

// Recover returns exactly the planned runs nobody published, with what
// their triggers need.
func TestRecoverReturnsUntriggeredRuns(t *testing.T) {
	_, pool, p, out, j := setupPlanned(t)
	ctx := context.Background()
	first := out.runs[0]
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = 'TRIGGERED' WHERE id = $1`, first.RunID); err != nil {
		t.Fatal(err)
	}
	got, err := p.Recover(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(out.runs)-1 {
		t.Fatalf("recovered %d runs, want %d (all but the triggered one)", len(got), len(out.runs)-1)
	}
	for _, r := range got {
		if r.RunID == first.RunID {
			t.Fatalf("recovered the TRIGGERED run %d", r.RunID)
		}
		if r.Handler != "h" || r.Group != "g" || r.JobID != j.ID {
			t.Fatalf("recovered run lacks its job's fields: %+v", r)
		}
	}
}

// Fencing: once the shard moved to another owner (epoch incremented), the
// old holder's planning writes nothing.
func TestPlanningIsFenced(t *testing.T) {
	st, pool, p, out, j := setupJob(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE scheduler_shards SET owner = 'other', epoch = 2 WHERE shard = 0`); err != nil {
		t.Fatal(err)
	}
	n, err := p.PlanShard(ctx, held)
	if !errors.Is(err, planner.ErrLeaseLost) {
		t.Fatalf("planning a lost shard: %v, want ErrLeaseLost", err)
	}
	if n != 0 || len(out.runs) != 0 || countRuns(t, pool, j.ID, "SCHEDULED") != 0 {
		t.Fatalf("a fenced pass wrote or handed over runs: n=%d handed=%d", n, len(out.runs))
	}
	after, err := st.GetJob(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !after.NextFireAt.Equal(*j.NextFireAt) {
		t.Fatalf("a fenced pass moved next_fire_at from %s to %s", j.NextFireAt, after.NextFireAt)
	}
}

// setupJob is setup plus one @every 1s job, "a", not yet planned.
func setupJob(t *testing.T) (*store.Store, *pgxpool.Pool, *planner.Planner, *sink, store.Job) {
	t.Helper()
	st, pool, p, out := setup(t)
	j, err := st.CreateJob(context.Background(), store.System, everySecond("a"))
	if err != nil {
		t.Fatal(err)
	}
	return st, pool, p, out, j
}

// setupPlanned is setupJob with the job's window planned.
func setupPlanned(t *testing.T) (*store.Store, *pgxpool.Pool, *planner.Planner, *sink, store.Job) {
	t.Helper()
	st, pool, p, out, j := setupJob(t)
	if _, err := p.PlanShard(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	return st, pool, p, out, j
}
