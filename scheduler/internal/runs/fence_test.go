package runs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// Fence passes only for the owner at the epoch it holds, and only before
// the lease expires on the database's clock.
func TestFence(t *testing.T) {
	f := setup(t)
	fence := func(owner string, ep int64) error {
		return pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
			return runs.Fence(f.ctx, tx, 0, owner, ep, time.Minute)
		})
	}
	if err := fence(me, epoch); err != nil {
		t.Fatalf("fence of the holder: %v", err)
	}
	for _, c := range []struct {
		owner string
		epoch int64
	}{{me, epoch + 1}, {me, epoch - 1}, {"other", epoch}} {
		if err := fence(c.owner, c.epoch); !errors.Is(err, runs.ErrNotHeld) {
			t.Errorf("fence of %s at epoch %d: %v, want ErrNotHeld", c.owner, c.epoch, err)
		}
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE scheduler_shards SET expires_at = now() - interval '1 second' WHERE shard = 0`); err != nil {
		t.Fatal(err)
	}
	if err := fence(me, epoch); !errors.Is(err, runs.ErrNotHeld) {
		t.Fatalf("fence of an expired lease: %v, want ErrNotHeld", err)
	}
}
