package wfengine

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// Advance advances the workflow runs of ends, node runs that ended for
// good, in tx: the transaction that recorded those ends (the results
// applier's, or a cancel's). It locks each run, folds the ends into its
// state, starts what may start and ends what is done, and returns the node
// runs it created, SCHEDULED and due now, for the caller to fire after
// commit (if it dies first, the shard owners' sweep fires them), and the
// final statuses of the runs it ended (Done.Kill is empty). Runs are
// visited in id order, like every writer of workflow runs, so concurrent
// appliers do not deadlock. maxChainRuns caps the node runs of one
// workflow run (0: refs.DefaultMaxRuns).
func Advance(ctx context.Context, tx pgx.Tx, ends []runs.NodeEnd, maxChainRuns int) (Done, error) {
	if len(ends) == 0 {
		return Done{}, nil
	}
	byRun := map[int64][]runs.NodeEnd{}
	var ids []int64
	for _, e := range ends {
		if _, ok := byRun[e.WorkflowRun]; !ok {
			ids = append(ids, e.WorkflowRun)
		}
		byRun[e.WorkflowRun] = append(byRun[e.WorkflowRun], e)
	}
	locked, err := lockRuns(ctx, tx, ids)
	if err != nil {
		return Done{}, err
	}
	st := newStepper(tx, maxChainRuns)
	for _, id := range sortedIDs(locked) {
		r := locked[id]
		if r.Status != RunRunning {
			continue // ended by an operation meanwhile: its ends change nothing
		}
		if err := st.record(ctx, r, byRun[id]); err != nil {
			return Done{}, err
		}
		if err := st.step(ctx, r); err != nil {
			return Done{}, err
		}
		if r.Status == RunRunning {
			if err := r.save(ctx, tx); err != nil {
				return Done{}, err
			}
		}
	}
	return Done{Spawned: st.spawned, Ended: st.ended}, nil
}
