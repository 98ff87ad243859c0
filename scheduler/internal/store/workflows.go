package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// Workflow is a stored workflow: its own row of jobs (kind workflow: the
// schedule, zone, misfire policy, enabled, shard...) with its graph and
// run policy (docs/workflows.md).
type Workflow struct {
	Job
	Spec   wfengine.Spec
	Policy wfengine.Policy
}

// workflowAudit is a workflow as the audit log keeps it.
type workflowAudit struct {
	*jobAudit
	Overlap       string        `json:"overlap"`
	MaxConcurrent int           `json:"max_concurrent,omitempty"`
	RunTimeout    string        `json:"run_timeout,omitempty"`
	Spec          wfengine.Spec `json:"spec"`
}

func workflowDoc(w Workflow) *workflowAudit {
	return &workflowAudit{jobAudit: jobDoc(w.Job), Overlap: w.Policy.Overlap, MaxConcurrent: w.Policy.MaxConcurrent,
		RunTimeout: optDuration(w.Policy.Timeout), Spec: w.Spec}
}

// asWorkflowRow makes w's jobs row a workflow's: no handler, and the
// fields a run of a workflow does not use at their defaults.
func asWorkflowRow(w *Workflow) {
	w.Kind, w.Handler = KindWorkflow, ""
	w.ChildJobIDs = nil
	if w.RouteStrategy == "" {
		w.RouteStrategy = "any"
	}
	if w.BlockStrategy == "" {
		w.BlockStrategy = "concurrent"
	}
}

// CreateWorkflow stores a new workflow, recording a workflow.create by a.
// Its spec must be valid (wfengine.Spec.Validate); every job its nodes
// name must be one a may trigger (refs.Check, as for child jobs).
func (s *Store) CreateWorkflow(ctx context.Context, a Actor, w Workflow) (Workflow, error) {
	asWorkflowRow(&w)
	var out Workflow
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkNodes(ctx, tx, a, nil, w.Spec.RefJobIDs()); err != nil {
			return err
		}
		j, err := s.insertJobRow(ctx, tx, &w.Job)
		if err != nil {
			return err
		}
		out = Workflow{Job: j, Spec: w.Spec.Clone(), Policy: w.Policy}
		if err := s.writeInlineJobs(ctx, tx, a, &out, ""); err != nil {
			return err
		}
		if err := writeWorkflowRow(ctx, tx, &out, true); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "workflow.create", JobTarget(j.ID), j.Group, nil, workflowDoc(out))
	})
	if err != nil {
		return w, err
	}
	return out, nil
}

// UpdateWorkflow replaces workflow w.ID's definition if it is still at
// w.Version (else a *StaleVersionError), recording a workflow.update by a.
// Runs already started keep the graph they started with. Nodes naming
// jobs the workflow did not name before are checked as at a create; all
// of them when the workflow moves to another group.
func (s *Store) UpdateWorkflow(ctx context.Context, a Actor, w Workflow) (Workflow, error) {
	asWorkflowRow(&w)
	var out Workflow
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockWorkflow(ctx, tx, w.ID)
		if err != nil {
			return err
		}
		if cur.Version != w.Version {
			return &StaleVersionError{ID: w.ID, Given: w.Version, Current: cur.Version}
		}
		kept := cur.Spec.RefJobIDs()
		if cur.Group != w.Group {
			kept = nil
		}
		if err := checkNodes(ctx, tx, a, kept, w.Spec.RefJobIDs()); err != nil {
			return err
		}
		j, err := updateJobRow(ctx, tx, &w.Job)
		if err != nil {
			return err
		}
		out = Workflow{Job: j, Spec: w.Spec.Clone(), Policy: w.Policy}
		if err := s.writeInlineJobs(ctx, tx, a, &out, cur.Group); err != nil {
			return err
		}
		if err := writeWorkflowRow(ctx, tx, &out, false); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "workflow.update", JobTarget(w.ID), j.Group, workflowDoc(cur), workflowDoc(out))
	})
	if err != nil {
		return out, fmt.Errorf("update workflow %d: %w", w.ID, err)
	}
	return out, nil
}

// DeleteWorkflow removes a workflow and its planned runs not yet due,
// recording a workflow.delete by a. Its runs stay as history; a run still
// active goes on with the graph it started with.
func (s *Store) DeleteWorkflow(ctx context.Context, a Actor, id int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockWorkflow(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, id); err != nil {
			return err
		}
		if _, err := deletePlanned(ctx, tx, id); err != nil {
			return err
		}
		return writeAudit(ctx, tx, a, "workflow.delete", JobTarget(id), cur.Group, workflowDoc(cur), nil)
	})
	if err != nil {
		return fmt.Errorf("delete workflow %d: %w", id, err)
	}
	return nil
}

// GetWorkflow returns one workflow.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (Workflow, error) {
	return getWorkflow(ctx, s.pool, id, "")
}

// WorkflowGroup is the group of workflow id, for permission checks.
func (s *Store) WorkflowGroup(ctx context.Context, id int64) (string, error) {
	w, err := s.GetWorkflow(ctx, id)
	return w.Group, err
}

// ListWorkflows returns up to limit workflows with id > after, by id,
// optionally of one group, and only of groups when it is not nil.
func (s *Store) ListWorkflows(ctx context.Context, group string, groups []string, after int64, limit int) ([]Workflow, error) {
	return s.SearchWorkflows(ctx, JobFilter{Group: group, Groups: groups, After: &JobKey{ID: after}, Limit: limit})
}

// SearchWorkflows is SearchJobs for workflows (f.Kind is ignored): the
// same filters, label selectors among them, by the same code.
func (s *Store) SearchWorkflows(ctx context.Context, f JobFilter) ([]Workflow, error) {
	f.Kind = KindWorkflow
	js, _, err := s.SearchJobs(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Workflow, 0, len(js))
	for _, j := range js {
		w := Workflow{Job: j}
		if err := readWorkflowRow(ctx, s.pool, &w, ""); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile
			}
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// WorkflowByName returns the workflow named name in group.
func (s *Store) WorkflowByName(ctx context.Context, group, name string) (Workflow, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT id FROM jobs WHERE group_name = $1 AND name = $2 AND kind = 'workflow'`, group, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Workflow{}, fmt.Errorf("workflow %s/%s: %w", group, name, ErrNotFound)
	}
	if err != nil {
		return Workflow{}, err
	}
	return s.GetWorkflow(ctx, id)
}

// JobIDByName returns the id of job name of group (a job, not a
// workflow's row): how YAML names a node's job.
func (s *Store) JobIDByName(ctx context.Context, group, name string) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT id FROM jobs WHERE group_name = $1 AND name = $2 AND kind = 'job'`, group, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("job %s/%s: %w", group, name, ErrNotFound)
	}
	return id, err
}

func lockWorkflow(ctx context.Context, tx pgx.Tx, id int64) (Workflow, error) {
	return getWorkflow(ctx, tx, id, " FOR UPDATE")
}

func getWorkflow(ctx context.Context, q querier, id int64, lock string) (Workflow, error) {
	j, err := rowOf(ctx, q, "workflow", `SELECT `+jobColumns+` FROM jobs WHERE id = $1 AND kind = 'workflow'`+lock, id, scanJob)
	if err != nil {
		return Workflow{}, err
	}
	w := Workflow{Job: j}
	return w, readWorkflowRow(ctx, q, &w, lock)
}

func readWorkflowRow(ctx context.Context, q querier, w *Workflow, lock string) error {
	var spec []byte
	var timeoutMS int64
	err := q.QueryRow(ctx, `SELECT spec, overlap, max_concurrent, timeout_ms FROM workflows WHERE job_id = $1`+lock, w.ID).
		Scan(&spec, &w.Policy.Overlap, &w.Policy.MaxConcurrent, &timeoutMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("workflow %d: %w", w.ID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("get workflow %d: %w", w.ID, err)
	}
	w.Policy.Timeout = msDuration(timeoutMS)
	if err := json.Unmarshal(spec, &w.Spec); err != nil {
		return fmt.Errorf("workflow %d: spec: %w", w.ID, err)
	}
	return nil
}

func writeWorkflowRow(ctx context.Context, tx pgx.Tx, w *Workflow, create bool) error {
	spec, err := w.Spec.Marshal()
	if err != nil {
		return err
	}
	q := `UPDATE workflows SET spec = $2, overlap = $3, max_concurrent = $4, timeout_ms = $5 WHERE job_id = $1`
	if create {
		q = `INSERT INTO workflows (job_id, spec, overlap, max_concurrent, timeout_ms) VALUES ($1, $2, $3, $4, $5)`
	}
	if _, err := tx.Exec(ctx, q, w.ID, spec, w.Policy.Overlap, w.Policy.MaxConcurrent, w.Policy.Timeout.Milliseconds()); err != nil {
		return fmt.Errorf("write workflow %d: %w", w.ID, err)
	}
	return nil
}

// checkNodes is the one decision on the jobs a workflow's nodes may name,
// made where the reference is made: each job next names that cur did not
// must be one a may name (refs.Check, the check child jobs pass), and a
// workflow's own row is not a job a node can run.
func checkNodes(ctx context.Context, tx pgx.Tx, a Actor, cur, next []int64) error {
	added := refs.Added(cur, next)
	if len(added) == 0 {
		return nil
	}
	targets, err := refTargets(ctx, tx, added)
	if err != nil {
		return err
	}
	var jobs []int64
	rows, _ := tx.Query(ctx, `SELECT id FROM jobs WHERE id = ANY($1::bigint[]) AND kind = 'job'`, added)
	if jobs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return fmt.Errorf("check workflow nodes: %w", err)
	}
	targets = slices.DeleteFunc(targets, func(t refs.Target) bool { return !slices.Contains(jobs, t.ID) })
	return refs.Check(a.Refs, "nodes", added, targets)
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
