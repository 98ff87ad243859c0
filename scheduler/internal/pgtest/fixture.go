package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// The fixture the engine's tests (runs, dispatch, planner, wfengine) share:
// a one-shard cluster, group "g", and shard 0 held by a scheduler, so that
// each writes runs as the planner does without a lease manager.

// Group is the group the fixture's jobs are in.
const Group = "g"

// Store is a fresh database (Pool) opened as the store of a one-shard
// cluster, with Group in it.
func Store(t testing.TB) (*pgxpool.Pool, *store.Store) {
	t.Helper()
	ctx := context.Background()
	pool := Pool(t)
	st, err := store.Open(ctx, pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureGroup(ctx, store.Group{Name: Group}); err != nil {
		t.Fatal(err)
	}
	return pool, st
}

// HoldShard writes owner as the holder of shard 0 at epoch for an hour,
// as its lease manager would.
func HoldShard(t testing.TB, pool *pgxpool.Pool, owner string, epoch int64) {
	t.Helper()
	if _, err := pool.Exec(context.Background(),
		`UPDATE scheduler_shards SET owner = $1, epoch = $2, expires_at = now() + interval '1 hour' WHERE shard = 0`,
		owner, epoch); err != nil {
		t.Fatal(err)
	}
}

// Job creates a disabled job of Group (so no planner's pass competes),
// on a cron firing every second, with misfire policy misfire, and returns
// its id.
func Job(t testing.TB, st *store.Store, name, misfire string) int64 {
	t.Helper()
	j, err := st.CreateJob(context.Background(), store.System, store.Job{Group: Group, Name: name, Handler: "h",
		ScheduleType: "cron", ScheduleExpr: "@every 1s", Timezone: "UTC", MisfirePolicy: misfire,
		RouteStrategy: "any", BlockStrategy: "serial"})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// Plan writes fires to shard 0 as the planner does, fenced by owner's
// epoch in one transaction, and returns what was written.
func Plan(t testing.TB, pool *pgxpool.Pool, owner string, epoch int64, fires ...runs.Fire) []runs.Inserted {
	t.Helper()
	ctx := context.Background()
	var written []runs.Inserted
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := runs.Fence(ctx, tx, 0, owner, epoch, time.Minute); err != nil {
			return err
		}
		var err error
		written, err = runs.InsertPlanned(ctx, tx, 0, fires)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return written
}
