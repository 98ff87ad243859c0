package wfengine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Started is what Start did with one workflow job's run.
type Started struct {
	// Status is the workflow run's status after the start: RUNNING (or
	// already ended), QUEUED, DISCARDED; "" when the run was not started
	// here (started already, or its shard's lease moved on).
	Status string
	// Spawned are the node runs created, to fire.
	Spawned []int64
	// Kill are the node runs of older runs a cover_early start cancelled
	// that may be running: their workers are asked to stop them.
	Kill []int64
	// Ended are the final statuses of the workflow runs the start ended:
	// this one (DISCARDED, or ended in its first step), older ones a
	// cover_early start cancelled while queued.
	Ended []Ended
}

// Start starts the workflow run of p (StartAll of one fire).
func Start(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, owner string, p *runs.Planned, maxChainRuns int) (Started, error) {
	sts, done, err := StartAll(ctx, db, owner, []runs.Planned{*p}, maxChainRuns)
	if err != nil {
		return Started{}, err
	}
	return Started{Status: sts[0], Spawned: done.Spawned, Kill: done.Kill, Ended: done.Ended}, nil
}

// definition is a workflows row, locked.
type definition struct {
	spec      []byte
	overlap   string
	maxConc   int
	timeoutMS int64
}

// StartAll starts the workflow runs of ps, workflow jobs' runs still
// SCHEDULED (their fires came due), for owner, in one transaction of its
// own, and returns each one's status (Started.Status, in ps's order) and
// the node runs to fire and to kill. For each fire it moves p out of
// SCHEDULED, fenced by p's lease epoch like any write for a planned run,
// so a fire starts one workflow run however often it is handed over
// (recovery, a second scheduler); applies the workflow's overlap policy
// against its active runs; writes the workflow run (id: p's run id,
// params: p's) and creates its root node runs.
//
// The fires are started together, one statement of each kind for all of
// them (the workflow benchmark's dispatch started one fire per
// transaction, ≈ ten statements and a wait for the workflow's lock each,
// and node runs due meanwhile waited behind it): the workflows' rows are
// locked once, in id order, the order of every writer of workflow runs.
// Two fires of one workflow in ps start one after the other, in rounds,
// so that the second sees the first as an active run.
func StartAll(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, owner string, ps []runs.Planned, maxChainRuns int) ([]string, Done, error) {
	if len(ps) == 0 {
		return nil, Done{}, nil
	}
	var (
		statuses []string
		done     Done
	)
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		statuses, done = make([]string, len(ps)), Done{}
		// The transaction is the engine's alone: no need to restore.
		if _, err := runs.PlanGeneric(ctx, tx); err != nil {
			return err
		}
		jobs := make([]int64, 0, len(ps))
		for i := range ps {
			jobs = append(jobs, ps[i].JobID)
		}
		slices.Sort(jobs)
		jobs = slices.Compact(jobs)
		defs := make(map[int64]*definition, len(jobs))
		rows, _ := tx.Query(ctx, `SELECT job_id, spec, overlap, max_concurrent, timeout_ms FROM workflows
			WHERE job_id = ANY($1::bigint[]) ORDER BY job_id FOR UPDATE`, jobs)
		var (
			job int64
			d   definition
		)
		if _, err := pgx.ForEachRow(rows, []any{&job, &d.spec, &d.overlap, &d.maxConc, &d.timeoutMS}, func() error {
			def := d
			defs[job] = &def
			return nil
		}); err != nil {
			return fmt.Errorf("lock %d workflows: %w", len(jobs), err)
		}
		st := newStepper(tx, maxChainRuns)
		// Rounds: the n-th fire of each workflow in the n-th, in run id
		// order.
		order := make([]int, len(ps))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(ps[a].JobID, ps[b].JobID), cmp.Compare(ps[a].RunID, ps[b].RunID))
		})
		var rounds [][]int
		nth := map[int64]int{}
		for _, i := range order {
			n := nth[ps[i].JobID]
			nth[ps[i].JobID]++
			if n == len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[n] = append(rounds[n], i)
		}
		for _, round := range rounds {
			kill, err := st.startRound(ctx, owner, ps, round, defs, statuses)
			if err != nil {
				return err
			}
			done.Kill = append(done.Kill, kill...)
		}
		if err := st.flush(ctx); err != nil {
			return err
		}
		for i, s := range statuses {
			if s == RunDiscarded {
				st.ended = append(st.ended, Ended{RunID: ps[i].RunID, WorkflowID: ps[i].JobID, Group: ps[i].Group, Status: RunDiscarded})
			}
		}
		done.Spawned, done.Fire, done.Ended = st.spawned, st.fire, st.ended
		return nil
	})
	if err != nil {
		if len(ps) == 1 {
			return nil, Done{}, fmt.Errorf("start workflow run %d (workflow %d): %w", ps[0].RunID, ps[0].JobID, err)
		}
		return nil, Done{}, fmt.Errorf("start %d workflow runs: %w", len(ps), err)
	}
	return statuses, done, nil
}

// startRound starts the fires ps[i] of round, of distinct workflows whose
// rows the transaction holds (defs; missing: the definition is gone), and
// sets their statuses; it returns the node runs to kill.
func (st *stepper) startRound(ctx context.Context, owner string, ps []runs.Planned, round []int,
	defs map[int64]*definition, statuses []string) ([]int64, error) {
	if err := st.flush(ctx); err != nil { // an earlier round's runs count as active
		return nil, err
	}
	var jobs []int64
	for _, i := range round {
		if defs[ps[i].JobID] != nil {
			jobs = append(jobs, ps[i].JobID)
		}
	}
	type activeRuns struct {
		ids             []int64
		running, queued int
		firstQueued     int64
	}
	active := map[int64]*activeRuns{}
	if len(jobs) > 0 {
		rows, _ := st.tx.Query(ctx, `SELECT workflow_id, id, status FROM workflow_runs
			WHERE workflow_id = ANY($1::bigint[]) AND status IN ('QUEUED', 'RUNNING') ORDER BY workflow_id, id`, jobs)
		var (
			wf, id int64
			status string
		)
		if _, err := pgx.ForEachRow(rows, []any{&wf, &id, &status}, func() error {
			a := active[wf]
			if a == nil {
				a = &activeRuns{}
				active[wf] = a
			}
			a.ids = append(a.ids, id)
			if status == RunRunning {
				a.running++
			} else {
				if a.queued == 0 {
					a.firstQueued = id
				}
				a.queued++
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("the active runs of %d workflows: %w", len(jobs), err)
		}
	}
	type fire struct {
		i   int
		r   *run
		def *definition
	}
	var (
		fires []fire
		marks []runs.WorkflowMark
	)
	for _, i := range round {
		p := &ps[i]
		def := defs[p.JobID]
		if def == nil {
			marks = append(marks, runs.WorkflowMark{Run: p, Status: wire.StatusFailed, Message: "workflow definition missing"})
			fires = append(fires, fire{i: i})
			continue
		}
		r := &run{ID: p.RunID, WorkflowID: p.JobID, Group: p.Group, ScheduledAt: p.ScheduledAt, Status: RunRunning}
		if p.Params != "" {
			params := p.Params
			r.Params = &params
		}
		ds, err := decodeSpec(def.spec)
		if err != nil {
			return nil, fmt.Errorf("workflow %d: spec: %w", p.JobID, err)
		}
		r.Spec, r.graph = ds.spec, ds.graph
		// A run written with a message (a re-run naming the run it
		// re-runs, a backfill's run) starts with it, unless the start
		// has its own to say.
		r.Message = p.Message
		a := active[p.JobID]
		if a == nil {
			a = &activeRuns{}
		}
		switch {
		case len(a.ids) == 0:
		case def.overlap == OverlapDiscardLater:
			r.Status, r.Message = RunDiscarded, fmt.Sprintf("discarded: run %d of the workflow is still active (overlap discard_later)", a.ids[0])
		case def.overlap == OverlapBufferOne && a.queued > 0:
			r.Status, r.Message = RunDiscarded, fmt.Sprintf("discarded: run %d of the workflow already waits behind the active one (overlap buffer_one)", a.firstQueued)
		case def.overlap == OverlapSerial, def.overlap == OverlapBufferOne,
			def.overlap == OverlapConcurrent && (a.queued > 0 || def.maxConc > 0 && a.running >= def.maxConc):
			r.Status = RunQueued
		}
		jobStatus := wire.StatusRunning
		switch r.Status {
		case RunDiscarded:
			jobStatus = wire.StatusDiscarded
		case RunQueued:
			jobStatus = wire.StatusTriggered
		}
		marks = append(marks, runs.WorkflowMark{Run: p, Status: jobStatus, Message: r.Message})
		fires = append(fires, fire{i: i, r: r, def: def})
	}
	moved, err := runs.MarkWorkflowRuns(ctx, st.tx, owner, marks)
	if err != nil {
		return nil, err
	}
	var (
		kill    []int64
		created []*run
	)
	for _, f := range fires {
		if !moved[ps[f.i].RunID] {
			continue // started already, or the lease moved on
		}
		if f.r == nil {
			statuses[f.i] = RunFailed
			continue
		}
		r := f.r
		if r.Status == RunRunning && f.def.overlap == OverlapCoverEarly {
			if a := active[r.WorkflowID]; a != nil {
				for _, old := range slices.Backward(a.ids) {
					k, err := cancel(ctx, st, old, fmt.Sprintf("covered by run %d (overlap cover_early)", r.ID), RunCancelled)
					if err != nil {
						return nil, err
					}
					kill = append(kill, k...)
				}
			}
		}
		created = append(created, r)
	}
	// A run to start is written QUEUED: begin makes it run.
	wanted := make(map[*run]string, len(created))
	for _, r := range created {
		wanted[r] = r.Status
		if r.Status == RunRunning {
			r.Status = RunQueued
		}
	}
	if err := st.flush(ctx); err != nil { // the cancels' writes go before the new rows
		return nil, err
	}
	ok, err := insertRuns(ctx, st.tx, created)
	if err != nil {
		return nil, err
	}
	var begin []*run
	for _, f := range fires {
		r := f.r
		if r == nil || !ok[r.ID] || !moved[r.ID] {
			continue // !ok: this fire's workflow run exists (the fence above makes it unreachable)
		}
		if wanted[r] == RunRunning {
			begin = append(begin, r)
		}
	}
	timeouts := make(map[int64]time.Duration, len(begin))
	for _, f := range fires {
		if f.def != nil {
			timeouts[f.r.ID] = time.Duration(f.def.timeoutMS) * time.Millisecond
		}
	}
	if err := st.begin(ctx, begin, func(r *run) time.Duration { return timeouts[r.ID] }); err != nil {
		return nil, err
	}
	for _, f := range fires {
		if f.r != nil && ok[f.r.ID] && moved[f.r.ID] {
			statuses[f.i] = f.r.Status
		}
	}
	return kill, nil
}
