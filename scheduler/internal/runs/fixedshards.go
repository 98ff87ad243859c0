package runs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// fireLockClass is the advisory lock space (two-key form) of the fires of
// fixed shard counts whose parts are node runs of a workflow: one lock
// per fire, keyed by hashint8(fire), held to the end of the applier's
// transaction while it judges whether the fire is done. Appliers take
// these after the chains' locks (spawnChildren) and before the workflow
// runs' (wfengine.Advance), always in that order.
const fireLockClass = 0x6a6a6672 // "jjfr"

// nodeFireDoneSQL reads which of the fires $1 have every part succeeded,
// with their part 0's time and output: the node run the workflow engine
// knows, whose output the nodes after it read.
const nodeFireDoneSQL = `SELECT f.id, f.scheduled_at, f.output FROM job_runs f
	WHERE f.id = ANY($1::bigint[]) AND f.shard_fire = f.id
	  AND (SELECT count(DISTINCT r.shard_index) FROM job_runs r
		WHERE r.shard_fire = f.id AND r.status = 'SUCCEEDED') = f.shard_total`

// nodeFireEnds turns the ends of node runs that are parts of a fixed shard
// count (fireOf: run id to fire) into their node's end: a part that ended
// for good other than SUCCEEDED ends the node as it is (the engine records
// the first end of a node and ignores the others); a part that succeeded
// ends the node only when every part of its fire has succeeded, once per
// fire, as the end of its part 0. Under the fires' locks, so that the last
// two parts, ended by two transactions, are judged one after the other.
func nodeFireEnds(ctx context.Context, tx pgx.Tx, ends []NodeEnd, fireOf map[int64]int64) ([]NodeEnd, error) {
	out := ends[:0:0]
	pending := map[int64]NodeEnd{} // fire: one of its parts that succeeded
	var fires []int64
	for _, e := range ends {
		fire, ok := fireOf[e.RunID]
		switch {
		case !ok || e.Status != wire.StatusSucceeded:
			out = append(out, e)
		default:
			if _, seen := pending[fire]; !seen {
				fires = append(fires, fire)
				pending[fire] = e
			}
		}
	}
	if len(fires) > 0 {
		if _, err := tx.Exec(ctx, lockChainsSQL, fireLockClass, fires); err != nil {
			return nil, fmt.Errorf("lock %d sharded fires: %w", len(fires), err)
		}
		var (
			fire   int64
			at     time.Time
			output *string
		)
		rows, _ := tx.Query(ctx, nodeFireDoneSQL, fires)
		_, err := pgx.ForEachRow(rows, []any{&fire, &at, &output}, func() error {
			e := pending[fire]
			e.RunID, e.ScheduledAt, e.Output = fire, at, nil
			if output != nil {
				e.Output = []byte(*output)
			}
			out = append(out, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read whether %d sharded node fires are done: %w", len(fires), err)
		}
	}
	slices.SortFunc(out, func(a, b NodeEnd) int { return cmp.Compare(a.RunID, b.RunID) })
	return out, nil
}
