package wfengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/workflow"
	"github.com/jetjob/jetjob/shared/wire"
)

// Done is what an operation did beyond the run's row: node runs it
// created, to fire, and node runs that may be running, whose workers the
// caller asks to stop; and the final statuses of the workflow runs it
// ended (a run ended twice, after a retry, counts twice), for metrics.
type Done struct {
	Spawned []int64
	Kill    []int64
	// Fire are the runs of Spawned as dispatch takes them: the caller
	// hands them over without reading them back.
	Fire  []runs.Planned
	Ended []Ended
}

// Ended is a workflow run a transaction ended, reported after its commit:
// metrics count it, the tracer records its span (spans.WorkflowEnded has
// the same fields).
type Ended struct {
	RunID, WorkflowID int64
	Group, Status     string
	// Started is when it started running (or was last re-opened); zero
	// for a run that never did (DISCARDED, or cancelled while QUEUED).
	Started time.Time
	// Reopened is how often it was re-opened before this end.
	Reopened int
}

// ErrNotAllowed is an operation the run's state does not allow (it wraps
// workflow.ErrNotAllowed).
var ErrNotAllowed = workflow.ErrNotAllowed

// Cancel cancels workflow run id: a queued run ends at once; a running
// one's pending nodes are cancelled, its node runs not yet published end
// CANCELLED, the others are to be killed (Done.Kill), and the run ends
// CANCELLED once their ends are recorded.
func Cancel(ctx context.Context, tx pgx.Tx, id int64, reason string, maxChainRuns int) (Done, error) {
	return op(ctx, tx, maxChainRuns, func(st *stepper) ([]int64, error) {
		return cancel(ctx, st, id, reason, RunCancelled)
	})
}

// Retry re-opens ended run id from its failed and cancelled nodes
// (workflow.Retry): they run again at their next attempt, and what was
// skipped because of them is re-opened; what succeeded keeps its outcome
// and outputs. The workflow job's run keeps the end it recorded: the
// workflow run's own status is the one to read.
func Retry(ctx context.Context, tx pgx.Tx, id int64, maxChainRuns int) (Done, error) {
	return op(ctx, tx, maxChainRuns, func(st *stepper) ([]int64, error) {
		r, err := st.lockRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.active() {
			return nil, fmt.Errorf("workflow run %d is %s: retry an ended run: %w", id, r.Status, ErrNotAllowed)
		}
		if r.Status == RunDiscarded {
			return nil, fmt.Errorf("workflow run %d was discarded and never ran: %w", id, ErrNotAllowed)
		}
		next, err := workflow.Retry(r.graph, r.State.model())
		if err != nil {
			return nil, err
		}
		r.State.adopt(next)
		return nil, st.reopen(ctx, r)
	})
}

// MarkSucceeded settles node of run id as succeeded by hand, with output
// (nil: none) passed on to the nodes after it, and advances the run (an
// ended run re-opens if something can run now).
func MarkSucceeded(ctx context.Context, tx pgx.Tx, id int64, node string, output json.RawMessage, reason string, maxChainRuns int) (Done, error) {
	if len(output) > wire.MaxOutputBytes {
		return Done{}, fmt.Errorf("output is %d bytes, at most %d", len(output), wire.MaxOutputBytes)
	}
	if len(output) > 0 && !json.Valid(output) {
		return Done{}, errors.New("output is not JSON")
	}
	return settleByHand(ctx, tx, id, maxChainRuns, func(r *run) error {
		next, err := workflow.MarkSucceeded(r.graph, r.State.model(), node, reason)
		if err != nil {
			return err
		}
		r.State.adopt(next)
		if len(output) > 0 {
			r.State.node(node).Output = output
		}
		return nil
	})
}

// Skip settles node of run id skipped by hand, passing through as a
// disabled node does, and advances the run.
func Skip(ctx context.Context, tx pgx.Tx, id int64, node, reason string, maxChainRuns int) (Done, error) {
	return settleByHand(ctx, tx, id, maxChainRuns, func(r *run) error {
		next, err := workflow.Bypass(r.graph, r.State.model(), node, reason)
		if err != nil {
			return err
		}
		r.State.adopt(next)
		return nil
	})
}

func settleByHand(ctx context.Context, tx pgx.Tx, id int64, maxChainRuns int, change func(*run) error) (Done, error) {
	return op(ctx, tx, maxChainRuns, func(st *stepper) ([]int64, error) {
		r, err := st.lockRun(ctx, id)
		if err != nil {
			return nil, err
		}
		switch {
		case r.Status == RunQueued:
			return nil, fmt.Errorf("workflow run %d has not started: %w", id, ErrNotAllowed)
		case r.Status == RunDiscarded:
			return nil, fmt.Errorf("workflow run %d was discarded and never ran: %w", id, ErrNotAllowed)
		case r.EndAs != "":
			return nil, fmt.Errorf("workflow run %d is being cancelled: %w", id, ErrNotAllowed)
		}
		if err := change(r); err != nil {
			return nil, err
		}
		return nil, st.reopen(ctx, r)
	})
}

// reopen makes r run (again) and steps it.
func (st *stepper) reopen(ctx context.Context, r *run) error {
	if r.Status != RunRunning {
		if r.TimeoutAt != nil && r.StartedAt != nil {
			t := time.Now().Add(r.TimeoutAt.Sub(*r.StartedAt))
			r.TimeoutAt = &t
		}
		now := time.Now()
		r.Status, r.EndAs, r.Message, r.StartedAt = RunRunning, "", "", &now
		r.State.Reopened++
	}
	return st.step(ctx, r)
}

// op runs fn in the caller's transaction tx (which also records who did
// it) and returns what it spawned and the runs to kill.
func op(ctx context.Context, tx pgx.Tx, maxChainRuns int, fn func(*stepper) ([]int64, error)) (Done, error) {
	st := newStepper(tx, maxChainRuns)
	kill, err := fn(st)
	if err == nil {
		err = st.flush(ctx)
	}
	if err != nil {
		return Done{}, err
	}
	return Done{Spawned: st.spawned, Kill: kill, Fire: st.fire, Ended: st.ended}, nil
}

// cancel cancels run id in st's transaction, to end as endAs (CANCELLED,
// TIMED_OUT), and returns its node runs that may be running. A run that is
// not active is left alone.
func cancel(ctx context.Context, st *stepper, id int64, reason, endAs string) ([]int64, error) {
	r, err := st.lockRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if !r.active() {
		return nil, fmt.Errorf("workflow run %d already ended %s: %w", id, r.Status, ErrNotAllowed)
	}
	r.Message = reason
	if r.Status == RunQueued {
		r.Status = endAs
		if err := st.move(ctx, r, wire.Status(endAs), reason); err != nil {
			return nil, err
		}
		st.save(r)
		st.ended = append(st.ended, Ended{RunID: r.ID, WorkflowID: r.WorkflowID, Group: r.Group, Status: endAs})
		return nil, nil
	}
	next, killNodes := workflow.Cancel(r.graph, r.State.model(), reason)
	r.State.adopt(next)
	r.EndAs = endAs
	var ids, kill []int64
	var ats []time.Time
	for _, name := range killNodes {
		for _, it := range r.State.node(name).running() {
			ids, ats = append(ids, it.Run), append(ats, it.At)
		}
	}
	kill = append(kill, ids...)
	ends, err := runs.CancelNodeRuns(ctx, st.tx, ids, ats, reason)
	if err != nil {
		return nil, err
	}
	st.record(r, ends)
	return kill, st.step(ctx, r)
}

// TimeOut cancels, as TIMED_OUT, the running workflow runs past their
// deadline (at most limit of them, each in a transaction of its own), and
// returns what that spawned (queued runs that could start) and the node
// runs to kill.
func TimeOut(ctx context.Context, pool *pgxpool.Pool, limit, maxChainRuns int) (Done, error) {
	rows, _ := pool.Query(ctx, `SELECT id, (EXTRACT(EPOCH FROM timeout_at - started_at) * 1000)::bigint FROM workflow_runs
		WHERE status = 'RUNNING' AND timeout_at <= now() AND end_as = '' ORDER BY timeout_at LIMIT $1`, limit)
	type due struct {
		id    int64
		after time.Duration
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		var ms int64
		err := r.Scan(&d.id, &ms)
		d.after = time.Duration(ms) * time.Millisecond
		return d, err
	})
	if err != nil {
		return Done{}, fmt.Errorf("workflow runs past their timeout: %w", err)
	}
	var out Done
	for _, d := range list {
		var done Done
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			done, err = op(ctx, tx, maxChainRuns, func(st *stepper) ([]int64, error) {
				return cancel(ctx, st, d.id, fmt.Sprintf("timed out: the workflow's timeout is %s", d.after), RunTimedOut)
			})
			return err
		})
		if errors.Is(err, ErrNotAllowed) {
			continue // ended meanwhile
		}
		if err != nil {
			return out, err
		}
		out.Spawned, out.Kill, out.Fire = append(out.Spawned, done.Spawned...), append(out.Kill, done.Kill...), append(out.Fire, done.Fire...)
		out.Ended = append(out.Ended, done.Ended...)
	}
	return out, nil
}

// sortedIDs returns the keys of m in order.
func sortedIDs[T any](m map[int64]T) []int64 { return slices.Sorted(maps.Keys(m)) }
