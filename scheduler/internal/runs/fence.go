package runs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// holds is the fence, the one definition of "this scheduler still holds
// shard S at epoch E": the scheduler_shards row s names the owner at that
// epoch and its lease has not expired by the database's clock. Each
// acquisition of a shard increments its epoch (package lease), so a
// scheduler that was paused past its lease matches nothing when it wakes,
// even if it holds the shard again under a newer epoch.
//
// The arguments are SQL expressions — placeholders or columns — so that a
// single-row check and a batch write (epoch per row, from unnest) share
// the text.
func holds(shard, owner, epoch string) string {
	return "s.shard = " + shard + " AND s.owner = " + owner + " AND s.epoch = " + epoch + " AND s.expires_at > now()"
}

// fenced is the condition a write for a run carries: holds for the run's
// shard at the epoch it was planned under, or epoch 0, a run created
// outside planning (manual, retry, child), which any scheduler may write.
func fenced(shard, owner, epoch string) string {
	return "(" + epoch + " = 0 OR EXISTS (SELECT 1 FROM scheduler_shards s WHERE " + holds(shard, owner, epoch) + "))"
}

// fenceSQL is the first statement of every planning transaction: it checks
// the fence and holds a share lock on the shard's row until commit. A
// takeover (which increments the epoch) skips a locked row and takes it on
// its next round, after this transaction ended, so it sees every run the
// transaction wrote and recovers them.
//
// It also bounds how long the transaction may sit idle: if this process is
// paused mid-transaction, PostgreSQL ends the session after $4 ms and the
// lock goes with it, so a stalled scheduler cannot hold a shard hostage
// (xxl-job's one lock, held by a stuck transaction, froze all scheduling).
var fenceSQL = `SELECT set_config('idle_in_transaction_session_timeout', $4, true) <> ''
	FROM scheduler_shards s
	WHERE ` + holds("$1", "$2", "$3") + `
	FOR SHARE`

// ErrNotHeld is returned by Fence when owner no longer holds the shard at
// the epoch: the transaction must write nothing for it.
var ErrNotHeld = errors.New("shard lease not held")

// Fence checks, as the first statement of tx, that owner still holds
// shard at epoch, and keeps the shard's row share-locked until tx ends; idle
// bounds how long tx may then sit idle (see fenceSQL). It returns
// ErrNotHeld when the lease moved on.
func Fence(ctx context.Context, tx pgx.Tx, shard int, owner string, epoch int64, idle time.Duration) error {
	var ok bool
	err := tx.QueryRow(ctx, fenceSQL, shard, owner, epoch, strconv.FormatInt(idle.Milliseconds(), 10)).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("shard %d at epoch %d: %w", shard, epoch, ErrNotHeld)
	}
	if err != nil {
		return fmt.Errorf("check lease of shard %d: %w", shard, err)
	}
	return nil
}

// stillScheduled is the condition, on the job_runs row alias r, that a
// run given by id and scheduled_at (joined from unnest) is SCHEDULED. It
// says so through jetjob_status_rank rather than r.status = 'SCHEDULED'
// because that plain comparison matches the predicate of the planner's
// partial index of SCHEDULED runs: PostgreSQL then hash-joined the given
// ids against every SCHEDULED run (each partition's partial index read
// whole) instead of looking each up by its key, a cost that grows with
// the runs planned ahead — 14 ms for 500 marks among 20,000 planned runs
// against 1.5 ms, and past the edge, with 100,000 planned, dispatch's
// SKIPPED marks took PostgreSQL's CPU. The rank cannot use that index,
// so each given run is found by its primary key.
func stillScheduled(r string) string {
	return "jetjob_status_rank(" + r + ".status) = 0"
}
