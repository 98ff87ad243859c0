package wfengine

import (
	"context"
	"encoding/json"
	"errors"
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
	Ended []string
}

// Start starts the workflow run of p, a workflow job's run still
// SCHEDULED (its fire came due), for owner, in one transaction of its own:
// it moves p out of SCHEDULED, fenced by p's lease epoch like any write
// for a planned run, so a fire starts one workflow run however often it
// is handed over (recovery, a second scheduler); applies the workflow's
// overlap policy against its active runs; writes the workflow run (id:
// p's run id, params: p's) and creates its root node runs.
func Start(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, owner string, p *runs.Planned, maxChainRuns int) (Started, error) {
	var out Started
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		out = Started{}
		var (
			specJSON        []byte
			overlap         string
			maxConc         int
			timeoutMS       int64
			running, queued int
			active          []int64
		)
		err := tx.QueryRow(ctx, `SELECT spec, overlap, max_concurrent, timeout_ms FROM workflows WHERE job_id = $1 FOR UPDATE`, p.JobID).
			Scan(&specJSON, &overlap, &maxConc, &timeoutMS)
		if errors.Is(err, pgx.ErrNoRows) {
			ok, err := runs.MarkWorkflowRun(ctx, tx, owner, p, wire.StatusFailed, "workflow definition missing")
			if ok {
				out.Status = RunFailed
			}
			return err
		}
		if err != nil {
			return fmt.Errorf("workflow %d: %w", p.JobID, err)
		}
		rows, _ := tx.Query(ctx, `SELECT id, status FROM workflow_runs WHERE workflow_id = $1 AND status IN ('QUEUED', 'RUNNING') ORDER BY id`, p.JobID)
		var id int64
		var status string
		if _, err := pgx.ForEachRow(rows, []any{&id, &status}, func() error {
			active = append(active, id)
			if status == RunRunning {
				running++
			} else {
				queued++
			}
			return nil
		}); err != nil {
			return fmt.Errorf("workflow %d: active runs: %w", p.JobID, err)
		}
		r := &run{ID: p.RunID, WorkflowID: p.JobID, Group: p.Group, ScheduledAt: p.ScheduledAt, Status: RunRunning}
		if p.Params != "" {
			params := p.Params
			r.Params = &params
		}
		if err := json.Unmarshal(specJSON, &r.Spec); err != nil {
			return fmt.Errorf("workflow %d: spec: %w", p.JobID, err)
		}
		r.graph = r.Spec.Graph()
		// A run written with a message (a re-run naming the run it
		// re-runs, a backfill's run) starts with it, unless the start
		// has its own to say.
		r.Message = p.Message
		var jobStatus wire.Status
		switch {
		case len(active) == 0:
		case overlap == OverlapDiscardLater:
			r.Status, r.Message = RunDiscarded, fmt.Sprintf("discarded: run %d of the workflow is still active (overlap discard_later)", active[0])
		case overlap == OverlapSerial, overlap == OverlapConcurrent && (queued > 0 || maxConc > 0 && running >= maxConc):
			r.Status = RunQueued
		}
		switch r.Status {
		case RunDiscarded:
			jobStatus = wire.StatusDiscarded
		case RunQueued:
			jobStatus = wire.StatusTriggered
		default:
			jobStatus = wire.StatusRunning
		}
		ok, err := runs.MarkWorkflowRun(ctx, tx, owner, p, jobStatus, r.Message)
		if err != nil || !ok {
			return err
		}
		st := newStepper(tx, maxChainRuns)
		if r.Status == RunRunning && overlap == OverlapCoverEarly && len(active) > 0 {
			for _, old := range slices.Backward(active) {
				kill, err := cancel(ctx, st, old, fmt.Sprintf("covered by run %d (overlap cover_early)", r.ID), RunCancelled)
				if err != nil {
					return err
				}
				out.Kill = append(out.Kill, kill...)
			}
		}
		wanted := r.Status
		if r.Status == RunRunning {
			r.Status = RunQueued // begin makes it run, once written
		}
		if created, err := r.insert(ctx, tx); err != nil || !created {
			return err // !created: this fire's workflow run exists (the guard above makes it unreachable)
		}
		if wanted == RunRunning {
			if err := st.begin(ctx, r, time.Duration(timeoutMS)*time.Millisecond); err != nil {
				return err
			}
		}
		out.Status, out.Spawned, out.Ended = r.Status, st.spawned, st.ended
		if r.Status == RunDiscarded {
			out.Ended = append(out.Ended, RunDiscarded)
		}
		return nil
	})
	if err != nil {
		return Started{}, fmt.Errorf("start workflow run %d (workflow %d): %w", p.RunID, p.JobID, err)
	}
	return out, nil
}
