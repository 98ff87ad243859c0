package retention

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fill inserts n runs of job 1 (group g) scheduled on day d: every fourth
// one FAILED, the others SUCCEEDED after 100 ms, 200 ms, ...
func fill(t *testing.T, pool *pgxpool.Pool, d time.Time, n int) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status,
			scheduled_at, started_at, finished_at)
		SELECT 1, 'g', 0, 'schedule', CASE WHEN i % 4 = 0 THEN 'FAILED' ELSE 'SUCCEEDED' END,
			$1::timestamptz + i * interval '1 minute', $1::timestamptz + i * interval '1 minute',
			$1::timestamptz + i * interval '1 minute' + i * interval '100 milliseconds'
		FROM generate_series(1, $2) AS i`, d, n)
	if err != nil {
		t.Fatal(err)
	}
}

func partitionOf(t *testing.T, pool *pgxpool.Pool, at time.Time) string {
	t.Helper()
	var name string
	if err := pool.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM job_runs WHERE scheduled_at = $1`, at).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func partitions(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'job_runs'::regclass ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestRetentionDropsOnlyRolledUpDays(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	now := time.Now().UTC()
	today := store.DayStart(now)
	old1, old2, recent := today.AddDate(0, 0, -40), today.AddDate(0, 0, -35), today.AddDate(0, 0, -10)
	ancient := today.AddDate(0, 0, -50) // no partition: its rows sit in the default partition
	for _, d := range []time.Time{old1, old2, recent} {
		if _, err := pool.Exec(ctx, `SELECT jetjob_create_run_partition($1)`, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []time.Time{old1, old2, recent, ancient} {
		fill(t, pool, d, 40)
	}

	m, err := New(Config{}, Deps{Pool: pool, Log: zaptest.NewLogger(t), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// old2's rollup fails: it must be kept although it is past the retention.
	failing := errors.New("rollup refused by the test")
	m.rollUp = func(ctx context.Context, tx pgx.Tx, day time.Time) (int64, int64, error) {
		if day.Equal(old2) {
			return 0, 0, failing
		}
		return store.RollUpDay(ctx, tx, day)
	}
	rep, err := m.Round(ctx)
	if !errors.Is(err, failing) {
		t.Fatalf("round: err %v, want the rollup failure", err)
	}
	if !slices.Equal(rep.Dropped, []string{runs.PartitionName(old1)}) || !slices.Equal(rep.Kept, []string{runs.PartitionName(old2)}) {
		t.Fatalf("dropped %v, kept %v; want %s dropped and %s kept", rep.Dropped, rep.Kept, runs.PartitionName(old1), runs.PartitionName(old2))
	}
	if rep.Purged != 40 {
		t.Errorf("purged %d rows of the default partition's old day, want 40", rep.Purged)
	}
	parts := partitions(t, pool)
	if slices.Contains(parts, runs.PartitionName(old1)) || !slices.Contains(parts, runs.PartitionName(old2)) || !slices.Contains(parts, runs.PartitionName(recent)) {
		t.Fatalf("partitions after the round: %v", parts)
	}

	// The rollup of the dropped day survives it, with its figures.
	var total, timed int64
	var p50, maxMS float64
	if err := pool.QueryRow(ctx, `SELECT runs, timed_runs, p50_ms, max_ms FROM run_stats_daily
		WHERE day = $1 AND job_id = 1 AND status = 'SUCCEEDED'`, old1).Scan(&total, &timed, &p50, &maxMS); err != nil {
		t.Fatal(err)
	}
	// SUCCEEDED: i in 1..40 not divisible by 4 → 30 runs, durations i × 100 ms.
	if total != 30 || timed != 30 || maxMS != 3900 || p50 < 1900 || p50 > 2100 {
		t.Errorf("rollup of %s: runs %d timed %d p50 %.0f max %.0f; want 30, 30, ≈2000, 3900", old1.Format(time.DateOnly), total, timed, p50, maxMS)
	}
	var covered []time.Time
	rows, _ := pool.Query(ctx, `SELECT day FROM run_stats_days ORDER BY day`)
	covered, err = pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Time{ancient, old1, recent} {
		if !slices.ContainsFunc(covered, d.Equal) {
			t.Errorf("day %s not rolled up (covered: %v)", d.Format(time.DateOnly), covered)
		}
	}

	// Next round, the rollup works: old2 goes too; recent stays.
	m.rollUp = store.RollUpDay
	rep, err = m.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Dropped, []string{runs.PartitionName(old2)}) || len(rep.Kept) != 0 {
		t.Fatalf("second round dropped %v, kept %v", rep.Dropped, rep.Kept)
	}
	// Idempotent: a third round does nothing.
	if rep, err = m.Round(ctx); err != nil || len(rep.Created)+len(rep.RolledUp)+len(rep.Dropped) != 0 {
		t.Fatalf("third round: %+v, %v", rep, err)
	}
}

func TestRetentionMovesDefaultRowsIntoNewPartition(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	now := time.Now().UTC()
	day := store.DayStart(now).AddDate(0, 0, 10) // beyond the partitions created ahead
	fill(t, pool, day, 5)
	first := day.Add(time.Minute)
	if got := partitionOf(t, pool, first); got != "job_runs_default" {
		t.Fatalf("run of %s in %s, want job_runs_default", day.Format(time.DateOnly), got)
	}
	later := now.AddDate(0, 0, 5) // its day is now within the days ahead
	m, err := New(Config{}, Deps{Pool: pool, Log: zaptest.NewLogger(t), Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := m.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Created, runs.PartitionName(day)) || rep.Moved != 5 {
		t.Fatalf("round created %v, moved %d; want %s created and 5 moved", rep.Created, rep.Moved, runs.PartitionName(day))
	}
	if got := partitionOf(t, pool, first); got != runs.PartitionName(day) {
		t.Fatalf("run now in %s, want %s", got, runs.PartitionName(day))
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE scheduled_at >= $1 AND scheduled_at < $2`, day, day.AddDate(0, 0, 1)).Scan(&n); err != nil || n != 5 {
		t.Fatalf("%d runs of the day after the move (%v), want 5", n, err)
	}
}

func TestRetentionOneSchedulerAtATime(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockKey)); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{}, Deps{Pool: pool, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := m.Round(ctx)
	if err != nil || !rep.Skipped {
		t.Fatalf("round while another holds the lock: %+v, %v; want skipped", rep, err)
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{Retention: -time.Hour}, Deps{Log: zaptest.NewLogger(t)}); err == nil {
		t.Error("negative retention accepted")
	}
}
