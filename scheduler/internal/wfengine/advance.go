package wfengine

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// Advance advances the workflow runs of ends, node runs that ended for
// good, in tx: the transaction that recorded those ends (the results
// applier's, or a cancel's). It locks the runs, folds the ends into their
// states, starts what may start and ends what is done, and returns the node
// runs it created, SCHEDULED and due now, for the caller to fire after
// commit (if it dies first, the shard owners' sweep fires them), also as
// dispatch fires them (Done.Fire), and the final statuses of the runs it
// ended (Done.Ended; Done.Kill is empty). The runs
// are locked in id order, like every writer of workflow runs does, so
// concurrent appliers do not deadlock, and advanced together: one
// statement of each kind for the whole batch (see stepper), on generic
// plans (runs.PlanGeneric), whatever the number of runs. maxChainRuns
// caps the node runs of one workflow run (0: refs.DefaultMaxRuns).
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
	restore, err := runs.PlanGeneric(ctx, tx)
	if err != nil {
		return Done{}, err
	}
	st := newStepper(tx, maxChainRuns)
	locked, err := st.lockRuns(ctx, ids)
	if err != nil {
		return Done{}, err
	}
	var rs []*run
	for _, id := range sortedIDs(locked) {
		r := locked[id]
		if r.Status != RunRunning {
			continue // ended by an operation meanwhile: its ends change nothing
		}
		st.record(r, byRun[id])
		rs = append(rs, r)
	}
	if err := st.stepAll(ctx, rs); err != nil {
		return Done{}, err
	}
	if err := st.flush(ctx); err != nil {
		return Done{}, err
	}
	return Done{Spawned: st.spawned, Fire: st.fire, Ended: st.ended}, restore(ctx)
}
