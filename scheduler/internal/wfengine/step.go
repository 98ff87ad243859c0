package wfengine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/workflow"
	"github.com/jetjob/jetjob/shared/wire"
)

// stepper advances runs within one transaction and gathers the node runs
// it created, for the caller to hand to the firing path after commit.
type stepper struct {
	tx pgx.Tx
	// limit is the cap on the node runs of one workflow run (the runs one
	// root fire may cause, --max-chain-runs).
	limit   int
	spawned []int64
	// ended are the final statuses of the workflow runs it ended, for
	// the caller's metrics after commit.
	ended []string
}

func newStepper(tx pgx.Tx, maxChainRuns int) *stepper {
	return &stepper{tx: tx, limit: refs.MaxRunsOr(maxChainRuns)}
}

// record folds ended node runs into r's state: an end of another attempt
// than the node's current one, or of a run already counted, changes
// nothing. A node whose runs have all ended settles (workflow.Aggregate).
func (st *stepper) record(ctx context.Context, r *run, ends []runs.NodeEnd) error {
	for _, e := range ends {
		n := r.State.Nodes[e.Node]
		if n == nil || n.Attempt != e.NodeAttempt || e.Item < 0 || e.Item >= len(n.Items) || n.Status != workflow.Running {
			continue
		}
		it := &n.Items[e.Item]
		if it.Status != "" {
			continue
		}
		if it.Run != e.RunID {
			// The last of its job's retries: the key names it from now on.
			it.Run, it.At = e.RunID, e.ScheduledAt
			if _, err := st.tx.Exec(ctx, `UPDATE workflow_node_runs SET run_id = $5, scheduled_at = $6
				WHERE workflow_run = $1 AND node = $2 AND node_attempt = $3 AND item = $4`,
				r.ID, e.Node, e.NodeAttempt, e.Item, e.RunID, e.ScheduledAt); err != nil {
				return fmt.Errorf("workflow run %d: node %s: %w", r.ID, e.Node, err)
			}
		}
		it.Status = e.Status
		if agg := n.aggregate(); agg.Settled() {
			n.Status = agg
			if agg != workflow.Succeeded {
				n.Reason = fmt.Sprintf("run %d ended %s", e.RunID, e.Status)
			}
		}
	}
	return nil
}

// step advances a running r until nothing more changes: settles and
// starts nodes as workflow.Advance says, and ends r when every node has
// settled. A node that cannot start (its params do not render, its
// for_each list is not one, the cap is reached, its job is gone) fails at
// once, and the run advances past it.
func (st *stepper) step(ctx context.Context, r *run) error {
	if r.Status != RunRunning {
		return nil
	}
	for range len(r.Spec.Nodes) + 2 {
		s := workflow.Advance(r.graph, r.State.model())
		r.State.adopt(s.Next)
		if s.Done {
			return st.end(ctx, r, s.Result)
		}
		if len(s.Start) == 0 {
			return nil
		}
		settled, err := st.start(ctx, r, s.Start)
		if err != nil {
			return err
		}
		if !settled {
			return nil
		}
	}
	return fmt.Errorf("workflow run %d does not settle", r.ID)
}

// start creates the runs of nodes, which Advance just started, and
// reports whether one of them settled at once instead (failed to start, or
// a for_each over an empty list).
func (st *stepper) start(ctx context.Context, r *run, nodes []string) (settled bool, err error) {
	outputs, err := st.outputs(ctx, r)
	if err != nil {
		return false, err
	}
	var nrs []runs.NodeRun
	fail := func(name, why string) {
		n := r.State.node(name)
		n.Status, n.Reason, n.Items = workflow.Failed, why, nil
		settled = true
	}
	for _, name := range nodes {
		spec := r.Spec.Node(name)
		n := r.State.node(name)
		n.Items, n.Output = nil, nil
		items := []json.RawMessage{nil}
		if spec.ForEach != "" {
			ref, err := workflow.ParseRef(spec.ForEach)
			if err == nil {
				items, err = ref.Items(outputs[ref.Node])
			}
			if err != nil {
				fail(name, "for_each: "+err.Error())
				continue
			}
		}
		if r.NodeRuns+len(items) > st.limit {
			fail(name, fmt.Sprintf("not started: its %d runs would bring this workflow run to %d node runs, past the limit of %d runs per fire (the scheduler's --max-chain-runs)",
				len(items), r.NodeRuns+len(items), st.limit))
			continue
		}
		var params []*string
		for _, item := range items {
			p, err := st.render(r, spec, outputs, item)
			if err != nil {
				fail(name, err.Error())
				break
			}
			params = append(params, p)
		}
		if n.Status == workflow.Failed {
			continue
		}
		if len(items) == 0 {
			n.Status, n.Reason = workflow.Succeeded, "for_each over an empty list"
			settled = true
			continue
		}
		n.Items = make([]Item, len(items))
		for i := range items {
			nrs = append(nrs, runs.NodeRun{WorkflowRun: r.ID, Node: name, Attempt: n.Attempt, Item: i, JobID: spec.JobID, Params: params[i],
				TimeoutMS: spec.TimeoutMS, MaxRetries: spec.MaxRetries})
		}
		r.NodeRuns += len(items)
	}
	created, err := runs.InsertNodeRuns(ctx, st.tx, nrs)
	if err != nil {
		return false, err
	}
	for _, c := range created {
		n := r.State.node(c.Node)
		if c.Item < len(n.Items) {
			n.Items[c.Item] = Item{Run: c.RunID, At: c.ScheduledAt}
		}
		st.spawned = append(st.spawned, c.RunID)
	}
	for _, name := range nodes {
		n := r.State.node(name)
		if n.Status != workflow.Running {
			continue
		}
		for _, it := range n.Items {
			if it.Run == 0 {
				fail(name, st.notCreated(ctx, r.Spec.Node(name).JobID))
				break
			}
		}
	}
	return settled, nil
}

// notCreated says why a node run was not created: its job is gone, or
// (which a run's lock and state rule out) its key was written already.
func (st *stepper) notCreated(ctx context.Context, job int64) string {
	var exists bool
	if err := st.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1)`, job).Scan(&exists); err == nil && !exists {
		return fmt.Sprintf("not started: job %d no longer exists", job)
	}
	return "not started: a run of this node at this attempt exists already"
}

// render is a node run's params: the node's template filled, or nil (its
// job's own params) when the node has none.
func (st *stepper) render(r *run, spec *NodeSpec, outputs map[string]json.RawMessage, item json.RawMessage) (*string, error) {
	if spec.Params == nil {
		return nil, nil
	}
	var params json.RawMessage
	if r.Params != nil && json.Valid([]byte(*r.Params)) {
		params = json.RawMessage(*r.Params)
	}
	up := r.graph.Upstream(spec.Name)
	in := workflow.Inputs{Params: params, ScheduledAt: r.ScheduledAt, Item: item, Outputs: map[string]json.RawMessage{}}
	for name, out := range outputs {
		if up[name] {
			in.Outputs[name] = out
		}
	}
	text, err := workflow.RenderParams(*spec.Params, in)
	if err != nil {
		return nil, fmt.Errorf("not started: %w", err)
	}
	return &text, nil
}

// outputs are the outputs of r's nodes that settled: one given by hand,
// the run's for a plain node, the list of its runs' outputs (null for one
// without) for a for_each node. A node without one is left out.
func (st *stepper) outputs(ctx context.Context, r *run) (map[string]json.RawMessage, error) {
	var ids []int64
	var ats []time.Time
	for _, n := range r.State.Nodes {
		if n.Status == workflow.Succeeded && n.Output == nil {
			for _, it := range n.Items {
				ids, ats = append(ids, it.Run), append(ats, it.At)
			}
		}
	}
	found, err := runs.NodeOutputs(ctx, st.tx, ids, ats)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for name, n := range r.State.Nodes {
		switch {
		case n.Output != nil:
			out[name] = n.Output
		case n.Status != workflow.Succeeded:
		case r.Spec.Node(name) != nil && r.Spec.Node(name).ForEach != "":
			list := make([]json.RawMessage, len(n.Items))
			for i, it := range n.Items {
				list[i] = found[it.Run]
				if list[i] == nil {
					list[i] = json.RawMessage("null")
				}
			}
			b, err := json.Marshal(list)
			if err != nil {
				return nil, err
			}
			out[name] = b
		case len(n.Items) == 1 && found[n.Items[0].Run] != nil:
			out[name] = found[n.Items[0].Run]
		}
	}
	return out, nil
}

// end settles r: its status from the nodes' result (or what a cancel asked
// for), its workflow job's run ended likewise; then the workflow's next
// queued run may start.
func (st *stepper) end(ctx context.Context, r *run, result workflow.Status) error {
	r.Status = string(result)
	if r.EndAs != "" {
		r.Status = r.EndAs
	}
	if err := runs.MoveWorkflowRun(ctx, st.tx, r.ID, r.ScheduledAt, wire.Status(r.Status), r.Message); err != nil {
		return err
	}
	if err := r.save(ctx, st.tx); err != nil {
		return err
	}
	st.ended = append(st.ended, r.Status)
	return st.startQueued(ctx, r.WorkflowID)
}

// startQueued starts the oldest queued run of workflow when its policy
// lets it (serial: none running; concurrent: under its cap). The caller
// holds the workflow's row.
func (st *stepper) startQueued(ctx context.Context, workflowID int64) error {
	var overlap string
	var maxConc int
	var timeoutMS int64
	err := st.tx.QueryRow(ctx, `SELECT overlap, max_concurrent, timeout_ms FROM workflows WHERE job_id = $1`, workflowID).
		Scan(&overlap, &maxConc, &timeoutMS)
	if err == pgx.ErrNoRows {
		return nil // deleted: its queued runs stay queued until cancelled
	}
	if err != nil {
		return fmt.Errorf("workflow %d: %w", workflowID, err)
	}
	var running int
	var next *int64
	if err := st.tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'RUNNING'),
			min(id) FILTER (WHERE status = 'QUEUED')
		FROM workflow_runs WHERE workflow_id = $1 AND status IN ('QUEUED', 'RUNNING')`, workflowID).Scan(&running, &next); err != nil {
		return fmt.Errorf("workflow %d: active runs: %w", workflowID, err)
	}
	if next == nil {
		return nil
	}
	switch overlap {
	case OverlapSerial, OverlapDiscardLater, OverlapCoverEarly:
		if running > 0 {
			return nil
		}
	case OverlapConcurrent:
		if maxConc > 0 && running >= maxConc {
			return nil
		}
	}
	q, err := lockRun(ctx, st.tx, *next)
	if err != nil {
		return err
	}
	return st.begin(ctx, q, time.Duration(timeoutMS)*time.Millisecond)
}

// begin makes queued (or new) r run: its start, its deadline, its workflow
// job's run RUNNING, and its first step.
func (st *stepper) begin(ctx context.Context, r *run, timeout time.Duration) error {
	var now time.Time
	if err := st.tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return err
	}
	r.Status, r.StartedAt = RunRunning, &now
	if timeout > 0 {
		t := now.Add(timeout)
		r.TimeoutAt = &t
	}
	if err := runs.MoveWorkflowRun(ctx, st.tx, r.ID, r.ScheduledAt, wire.StatusRunning, ""); err != nil {
		return err
	}
	if err := st.step(ctx, r); err != nil {
		return err
	}
	if r.Status == RunRunning {
		return r.save(ctx, st.tx)
	}
	return nil // ended in its first step: saved by end
}
