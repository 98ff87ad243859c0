package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Issue #33's flow controls of a job (docs/flow-control.md, "Caps, keys,
// rates and priority"): columns of jobs read and written with the others
// (jobColumns, jobWriteColumns), kept together in one struct rather than
// five more positional fields of Job.

// JobFlow is a job's flow controls; its zero value is none.
type JobFlow struct {
	// Priority orders the job's runs among those waiting at their group's
	// or key's cap (wire.PriorityMin to wire.PriorityMax).
	Priority int
	// ConcurrencyKey is the key expression (package flowkey), "" for none;
	// KeyCap runs with the same key execute at once (0: no cap).
	ConcurrencyKey string
	KeyCap         int
	// Rate limits the job's starts, KeyRate the starts per key (Count 0:
	// no limit; Scope unset, it is implied).
	Rate, KeyRate wire.Rate
}

const jobFlowColumns = `priority, concurrency_key, key_cap, rate_count, rate_period_ms, key_rate_count, key_rate_period_ms`

// jobFlowWriteColumns are written by creates and updates (jobWriteColumns).
var jobFlowWriteColumns = []string{"priority", "concurrency_key", "key_cap", "rate_count", "rate_period_ms",
	"key_rate_count", "key_rate_period_ms"}

func (f *JobFlow) targets() []any {
	return []any{&f.Priority, &f.ConcurrencyKey, &f.KeyCap, &f.Rate.Count, &f.Rate.PeriodMS, &f.KeyRate.Count, &f.KeyRate.PeriodMS}
}

// flowArgs are the flow columns' values for a write.
func (j *Job) flowArgs(args map[string]any) {
	f := &j.Flow
	args["priority"], args["concurrency_key"], args["key_cap"] = f.Priority, f.ConcurrencyKey, f.KeyCap
	args["rate_count"], args["rate_period_ms"] = f.Rate.Count, f.Rate.PeriodMS
	args["key_rate_count"], args["key_rate_period_ms"] = f.KeyRate.Count, f.KeyRate.PeriodMS
}

// groupRow is what a run written outside planning needs of its group's
// row: its flow state and its flow controls (cap, rate limit).
type groupRow struct {
	state FlowState
	cap   int
	rate  wire.Rate
}

// readGroupRow reads group's row in tx, share-locking it when lock is set
// (a trigger that checks the pause, so that a pause waits for the trigger
// that read the group active). A group without a row is active with no
// controls.
func readGroupRow(ctx context.Context, tx pgx.Tx, group string, lock bool) (groupRow, error) {
	q := `SELECT flow_state, max_running, rate_count, rate_period_ms FROM job_groups WHERE name = $1`
	if lock {
		q += ` FOR SHARE`
	}
	var g groupRow
	err := tx.QueryRow(ctx, q, group).Scan(&g.state, &g.cap, &g.rate.Count, &g.rate.PeriodMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return groupRow{state: FlowActive}, nil
	}
	if err != nil {
		return groupRow{}, fmt.Errorf("read group %q: %w", group, err)
	}
	return g, nil
}

// runFlow is the flow of a run of j in group g; priority, when set, is the
// run's own (a manual trigger's).
func runFlow(j *Job, g groupRow, priority *int) runs.Flow {
	f := runs.Flow{Priority: j.Flow.Priority, GroupCap: g.cap, GroupRate: g.rate,
		KeyExpr: j.Flow.ConcurrencyKey, KeyCap: j.Flow.KeyCap, KeyRate: j.Flow.KeyRate, Rate: j.Flow.Rate}
	if priority != nil {
		f.Priority = *priority
	}
	return f
}
