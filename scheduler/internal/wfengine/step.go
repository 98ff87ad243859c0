package wfengine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/workflow"
	"github.com/jetjob/jetjob/shared/wire"
)

// stepper advances runs within one transaction and gathers the node runs
// it created, for the caller to hand to the firing path after commit.
//
// It works on sets of runs: the applier advances every workflow run its
// batch ended node runs of, and a batch of fires starts many, so each kind
// of statement is made once for all of them (the workflow benchmark, at
// 1,000 node runs/s, spent 11.6 statements per node run when each run made
// its own). Writes nothing reads back before commit are held and made in
// one statement per kind: the runs' rows (saves), their workflow jobs'
// runs (moves), node keys naming a retry. flush writes them; every read of
// what they change (locking runs, counting a workflow's active runs)
// flushes first, so the transaction reads what it wrote, as when each
// write went out at once; the entry points flush before they return.
type stepper struct {
	tx pgx.Tx
	// limit is the cap on the node runs of one workflow run (the runs one
	// root fire may cause, --max-chain-runs).
	limit   int
	spawned []int64
	// fire are the node runs of spawned as dispatch takes them.
	fire []runs.Planned
	// ended are the final statuses of the workflow runs it ended, for
	// the caller's metrics after commit.
	ended []Ended

	// now is the transaction's clock (now() is fixed for a transaction),
	// read once.
	now time.Time

	saves map[int64]*run
	moves map[int64]runs.WorkflowMove
	keys  []runs.NodeKey

	// outputs are the outputs of node runs read or reported ended so far,
	// by run id (nil: the run set none); a run's output never changes
	// once it ended.
	outputs map[int64][]byte
}

func newStepper(tx pgx.Tx, maxChainRuns int) *stepper {
	return &stepper{tx: tx, limit: refs.MaxRunsOr(maxChainRuns),
		saves: map[int64]*run{}, moves: map[int64]runs.WorkflowMove{}, outputs: map[int64][]byte{}}
}

// save queues r's row to be written (the last save of a run wins: it
// writes the run as it is at flush).
func (st *stepper) save(r *run) { st.saves[r.ID] = r }

// move queues the move of r's workflow job's run to status. A run moved
// twice in one transaction (started, then ended at once) has its first
// move written first: the moves of one statement change a row once.
func (st *stepper) move(ctx context.Context, r *run, status wire.Status, message string) error {
	if _, ok := st.moves[r.ID]; ok {
		if err := st.flushMoves(ctx); err != nil {
			return err
		}
	}
	st.moves[r.ID] = runs.WorkflowMove{RunID: r.ID, ScheduledAt: r.ScheduledAt, Status: status, Message: message}
	return nil
}

// flush writes what is queued: node keys, moves, saves, one statement
// each.
func (st *stepper) flush(ctx context.Context) error {
	if len(st.keys) > 0 {
		if err := runs.SetNodeRuns(ctx, st.tx, st.keys); err != nil {
			return err
		}
		st.keys = st.keys[:0]
	}
	if err := st.flushMoves(ctx); err != nil {
		return err
	}
	if len(st.saves) > 0 {
		rs := make([]*run, 0, len(st.saves))
		for _, id := range sortedIDs(st.saves) {
			rs = append(rs, st.saves[id])
		}
		if err := saveRuns(ctx, st.tx, rs); err != nil {
			return err
		}
		clear(st.saves)
	}
	return nil
}

func (st *stepper) flushMoves(ctx context.Context) error {
	if len(st.moves) == 0 {
		return nil
	}
	ms := make([]runs.WorkflowMove, 0, len(st.moves))
	for _, m := range st.moves {
		ms = append(ms, m)
	}
	if err := runs.MoveWorkflowRuns(ctx, st.tx, ms); err != nil {
		return err
	}
	clear(st.moves)
	return nil
}

// clock is the transaction's now().
func (st *stepper) clock(ctx context.Context) (time.Time, error) {
	if st.now.IsZero() {
		if err := st.tx.QueryRow(ctx, `SELECT now()`).Scan(&st.now); err != nil {
			return time.Time{}, fmt.Errorf("read the clock: %w", err)
		}
	}
	return st.now, nil
}

// lockRuns locks runs ids (lockRuns) after writing what is queued.
func (st *stepper) lockRuns(ctx context.Context, ids []int64) (map[int64]*run, error) {
	if err := st.flush(ctx); err != nil {
		return nil, err
	}
	return lockRuns(ctx, st.tx, ids)
}

// lockRun locks one workflow run (lockRuns).
func (st *stepper) lockRun(ctx context.Context, id int64) (*run, error) {
	rs, err := st.lockRuns(ctx, []int64{id})
	if err != nil {
		return nil, err
	}
	r, ok := rs[id]
	if !ok {
		return nil, fmt.Errorf("workflow run %d: %w", id, ErrNotFound)
	}
	return r, nil
}

// record folds ended node runs into r's state: an end of another attempt
// than the node's current one, or of a run already counted, changes
// nothing. A node whose runs have all ended settles (workflow.Aggregate).
func (st *stepper) record(r *run, ends []runs.NodeEnd) {
	for _, e := range ends {
		n := r.State.Nodes[e.Node]
		if n == nil || n.Attempt != e.NodeAttempt || e.Item < 0 || e.Item >= len(n.Items) || n.Status != workflow.Running {
			continue
		}
		it := &n.Items[e.Item]
		if it.Status != "" {
			continue
		}
		// An end carries its run's output (none for a run cancelled
		// before it was published): the nodes after it read it here.
		st.outputs[e.RunID] = e.Output
		if it.Run != e.RunID {
			// The last of its job's retries: the key names it from now on.
			it.Run, it.At = e.RunID, e.ScheduledAt
			st.keys = append(st.keys, runs.NodeKey{WorkflowRun: r.ID, Node: e.Node, Attempt: e.NodeAttempt, Item: e.Item,
				RunID: e.RunID, ScheduledAt: e.ScheduledAt})
		}
		it.Status = e.Status
		if agg := n.aggregate(); agg.Settled() {
			n.Status = agg
			if agg != workflow.Succeeded {
				n.Reason = fmt.Sprintf("run %d ended %s", e.RunID, e.Status)
			}
		}
	}
}

// step advances r (stepAll).
func (st *stepper) step(ctx context.Context, r *run) error { return st.stepAll(ctx, []*run{r}) }

// starting is a run's nodes that Advance started in one round, and their
// node runs to create.
type starting struct {
	r     *run
	nodes []string
	nrs   []runs.NodeRun
	// settled: a node settled at once instead (it failed to start, or a
	// for_each over an empty list), so the run takes another round.
	settled bool
}

// nodeRunKey names a node run created in a round.
type nodeRunKey struct {
	run  int64
	node string
	item int
}

// stepAll advances the running runs of rs until nothing more changes:
// settles and starts nodes as workflow.Advance says, and ends a run when
// every node has settled. A node that cannot start (its params do not
// render, its for_each list is not one, the cap is reached, its job is
// gone) fails at once, and the run advances past it. It goes in rounds
// over the runs, each round one statement for the node runs of all of
// them; the runs still running are queued to be saved, the ended ones
// are ended (end).
func (st *stepper) stepAll(ctx context.Context, rs []*run) error {
	active := slices.DeleteFunc(slices.Clone(rs), func(r *run) bool { return r.Status != RunRunning })
	var (
		done    []*run
		results []workflow.Status
	)
	for round := 0; len(active) > 0; round++ {
		type advanced struct {
			r     *run
			start []string
		}
		var next []advanced
		var needOutputs []*run
		for _, r := range active {
			if round > len(r.Spec.Nodes)+1 {
				return fmt.Errorf("workflow run %d does not settle", r.ID)
			}
			s := workflow.Advance(r.graph, r.State.model())
			r.State.adopt(s.Next)
			switch {
			case s.Done:
				done, results = append(done, r), append(results, s.Result)
			case len(s.Start) > 0:
				next = append(next, advanced{r, s.Start})
				if r.Spec.templated(s.Start) {
					needOutputs = append(needOutputs, r)
				}
			}
		}
		if err := st.readOutputs(ctx, needOutputs); err != nil {
			return err
		}
		var (
			starts []*starting
			nrs    []runs.NodeRun
		)
		for _, a := range next {
			sg, err := st.plan(a.r, a.start)
			if err != nil {
				return err
			}
			starts, nrs = append(starts, sg), append(nrs, sg.nrs...)
		}
		if err := st.create(ctx, starts, nrs); err != nil {
			return err
		}
		active = active[:0:0]
		for _, sg := range starts {
			if sg.settled {
				active = append(active, sg.r)
			}
		}
	}
	ending := make(map[*run]bool, len(done))
	for _, r := range done {
		ending[r] = true
	}
	for _, r := range rs {
		if r.Status == RunRunning && !ending[r] {
			st.save(r)
		}
	}
	return st.end(ctx, done, results)
}

// plan makes the node runs of nodes, which Advance just started in r;
// the outputs they render from are read already (readOutputs).
func (st *stepper) plan(r *run, nodes []string) (*starting, error) {
	sg := &starting{r: r, nodes: nodes}
	var outputs map[string]json.RawMessage
	if r.Spec.templated(nodes) {
		var err error
		if outputs, err = st.nodeOutputs(r); err != nil {
			return nil, err
		}
	}
	fail := func(name, why string) {
		n := r.State.node(name)
		n.Status, n.Reason, n.Items = workflow.Failed, why, nil
		sg.settled = true
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
			sg.settled = true
			continue
		}
		n.Items = make([]Item, len(items))
		for i := range items {
			sg.nrs = append(sg.nrs, runs.NodeRun{WorkflowRun: r.ID, Node: name, Attempt: n.Attempt, Item: i, JobID: spec.JobID, Params: params[i],
				TimeoutMS: spec.TimeoutMS, MaxRetries: spec.MaxRetries})
		}
		r.NodeRuns += len(items)
	}
	return sg, nil
}

// create creates the node runs nrs of starts in one statement and names
// them in their runs' states; a node whose run was not created fails (and
// its run takes another round).
func (st *stepper) create(ctx context.Context, starts []*starting, nrs []runs.NodeRun) error {
	created, err := runs.InsertNodeRuns(ctx, st.tx, nrs)
	if err != nil {
		return err
	}
	byKey := make(map[nodeRunKey]runs.CreatedNodeRun, len(created))
	for _, c := range created {
		byKey[nodeRunKey{c.WorkflowRun, c.Node, c.Item}] = c
		st.spawned, st.fire = append(st.spawned, c.RunID), append(st.fire, c.Planned)
	}
	for _, sg := range starts {
		r := sg.r
		for _, name := range sg.nodes {
			n := r.State.node(name)
			if n.Status != workflow.Running {
				continue
			}
			for i := range n.Items {
				if c, ok := byKey[nodeRunKey{r.ID, name, i}]; ok {
					n.Items[i] = Item{Run: c.RunID, At: c.ScheduledAt}
				}
			}
			for _, it := range n.Items {
				if it.Run == 0 {
					n.Status, n.Reason, n.Items = workflow.Failed, st.notCreated(ctx, r.Spec.Node(name).JobID), nil
					sg.settled = true
					break
				}
			}
		}
	}
	return nil
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

// outputRuns calls fn with each node run of r whose output counts: the
// runs of a node that succeeded without an output given by hand.
func outputRuns(r *run, fn func(Item)) {
	for _, n := range r.State.Nodes {
		if n.Status == workflow.Succeeded && n.Output == nil {
			for _, it := range n.Items {
				fn(it)
			}
		}
	}
}

// readOutputs reads, in one statement, the outputs of the node runs of rs
// that count and are not known yet (those of this transaction's ends are).
func (st *stepper) readOutputs(ctx context.Context, rs []*run) error {
	var ids []int64
	var ats []time.Time
	for _, r := range rs {
		outputRuns(r, func(it Item) {
			if _, ok := st.outputs[it.Run]; !ok {
				ids, ats = append(ids, it.Run), append(ats, it.At)
			}
		})
	}
	if len(ids) == 0 {
		return nil
	}
	found, err := runs.NodeOutputs(ctx, st.tx, ids, ats)
	if err != nil {
		return err
	}
	for _, id := range ids {
		st.outputs[id] = found[id]
	}
	return nil
}

// nodeOutputs are the outputs of r's nodes that settled: one given by
// hand, the run's for a plain node, the list of its runs' outputs (null
// for one without) for a for_each node. A node without one is left out.
// The runs' outputs are read already (readOutputs).
func (st *stepper) nodeOutputs(r *run) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for name, n := range r.State.Nodes {
		switch {
		case n.Output != nil:
			out[name] = n.Output
		case n.Status != workflow.Succeeded:
		case r.Spec.Node(name) != nil && r.Spec.Node(name).ForEach != "":
			list := make([]json.RawMessage, len(n.Items))
			for i, it := range n.Items {
				list[i] = st.outputs[it.Run]
				if list[i] == nil {
					list[i] = json.RawMessage("null")
				}
			}
			b, err := json.Marshal(list)
			if err != nil {
				return nil, err
			}
			out[name] = b
		case len(n.Items) == 1 && st.outputs[n.Items[0].Run] != nil:
			out[name] = st.outputs[n.Items[0].Run]
		}
	}
	return out, nil
}

// end settles done, runs every node of which settled with results: each
// one's status from its nodes' result (or what a cancel asked for), its
// workflow job's run ended likewise; then their workflows' next queued
// runs may start.
func (st *stepper) end(ctx context.Context, done []*run, results []workflow.Status) error {
	if len(done) == 0 {
		return nil
	}
	ended := map[int64]int{}
	for i, r := range done {
		r.Status = string(results[i])
		if r.EndAs != "" {
			r.Status = r.EndAs
		}
		if err := st.move(ctx, r, wire.Status(r.Status), r.Message); err != nil {
			return err
		}
		st.save(r)
		ended[r.WorkflowID]++
		e := Ended{RunID: r.ID, WorkflowID: r.WorkflowID, Group: r.Group, Status: r.Status, Reopened: r.State.Reopened}
		if r.StartedAt != nil {
			e.Started = *r.StartedAt
		}
		st.ended = append(st.ended, e)
	}
	return st.startQueued(ctx, ended)
}

// startQueued starts, for each workflow of ended (by the number of its
// runs that just ended), its oldest queued runs as its policy lets them
// (serial: none running; concurrent: under its cap), as many as ended at
// most: each end makes room for one. The caller holds the workflows' rows.
func (st *stepper) startQueued(ctx context.Context, ended map[int64]int) error {
	if err := st.flush(ctx); err != nil { // the ended runs no longer count as running
		return err
	}
	wfs := sortedIDs(ended)
	most := 0
	for _, n := range ended {
		most = max(most, n)
	}
	rows, _ := st.tx.Query(ctx, `SELECT w.job_id, w.overlap, w.max_concurrent, w.timeout_ms,
			(SELECT count(*) FROM workflow_runs r WHERE r.workflow_id = w.job_id AND r.status = 'RUNNING'),
			ARRAY(SELECT r.id FROM workflow_runs r WHERE r.workflow_id = w.job_id AND r.status = 'QUEUED' ORDER BY r.id LIMIT $2)
		FROM workflows w WHERE w.job_id = ANY($1::bigint[]) ORDER BY w.job_id`, wfs, most)
	var (
		wf, timeoutMS    int64
		overlap          string
		maxConc, running int
		queued, toStart  []int64
		timeouts         = map[int64]time.Duration{}
	)
	// A deleted workflow is missing: its queued runs stay queued until
	// cancelled.
	if _, err := pgx.ForEachRow(rows, []any{&wf, &overlap, &maxConc, &timeoutMS, &running, &queued}, func() error {
		n := min(ended[wf], len(queued))
		switch overlap {
		case OverlapSerial, OverlapDiscardLater, OverlapCoverEarly, OverlapBufferOne:
			if running > 0 {
				n = 0
			}
			n = min(n, 1)
		case OverlapConcurrent:
			if maxConc > 0 {
				n = min(n, max(maxConc-running, 0))
			}
		}
		for _, id := range queued[:n] {
			toStart = append(toStart, id)
			timeouts[id] = time.Duration(timeoutMS) * time.Millisecond
		}
		return nil
	}); err != nil {
		return fmt.Errorf("the active runs of %d workflows: %w", len(wfs), err)
	}
	if len(toStart) == 0 {
		return nil
	}
	locked, err := st.lockRuns(ctx, toStart)
	if err != nil {
		return err
	}
	var qs []*run
	for _, id := range sortedIDs(locked) {
		qs = append(qs, locked[id])
	}
	return st.begin(ctx, qs, func(r *run) time.Duration { return timeouts[r.ID] })
}

// begin makes queued (or new) runs rs run: their start, their deadlines
// (timeout: none for 0), their workflow jobs' runs RUNNING, and their
// first step.
func (st *stepper) begin(ctx context.Context, rs []*run, timeout func(*run) time.Duration) error {
	if len(rs) == 0 {
		return nil
	}
	now, err := st.clock(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		r.Status, r.StartedAt = RunRunning, &now
		if d := timeout(r); d > 0 {
			t := now.Add(d)
			r.TimeoutAt = &t
		}
		if err := st.move(ctx, r, wire.StatusRunning, ""); err != nil {
			return err
		}
	}
	return st.stepAll(ctx, rs)
}
