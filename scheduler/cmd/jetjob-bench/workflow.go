package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jetjob/jetjob/internal/backoff"
)

// The workflow scenario (issue #29's performance): --jobs workflows, each
// fired "@every 1s" (all due at once, as steady's jobs), each run a DAG of
// ten nodes with two fan-outs and two fan-ins,
//
//	start → a1..a4 → mid → b1..b3 → end
//
// every node its own no-op job (block strategy --block-strategy, serial by
// default, as a plain job's), the workflows' overlap concurrent (a fire
// starts a run whatever the runs before it do). It measures what a node
// run costs against a plain run (`steady` at the same runs/s, in the same
// sitting): node runs/s, CPU per node run, the node wait (ready → started:
// a node run's scheduled_at is when the engine created it, its upstream's
// end applied) and a workflow run's duration (fire → its last node's end
// applied), and audits that every workflow run of the window ended
// SUCCEEDED with each of its (node, attempt) run once.
var workflowShape = struct {
	nodes []string
	edges [][2]string
}{
	nodes: []string{"start", "a1", "a2", "a3", "a4", "mid", "b1", "b2", "b3", "end"},
	edges: [][2]string{
		{"start", "a1"}, {"start", "a2"}, {"start", "a3"}, {"start", "a4"},
		{"a1", "mid"}, {"a2", "mid"}, {"a3", "mid"}, {"a4", "mid"},
		{"mid", "b1"}, {"mid", "b2"}, {"mid", "b3"},
		{"b1", "end"}, {"b2", "end"}, {"b3", "end"},
	},
}

// WorkflowStats is the workflow scenario's own figures.
type WorkflowStats struct {
	Workflows     int     `json:"workflows"`
	NodesPerRun   int     `json:"nodes_per_run"`
	NodeRunsPerS  float64 `json:"node_runs_per_s"`
	NodeWaitMs    Latency `json:"node_wait_ms"`
	RunDurationMs Latency `json:"run_duration_ms"`
	// Runs counts the window's workflow runs by status, Expected the
	// workflow fires of the window.
	Runs     map[string]int64 `json:"runs"`
	Expected int64            `json:"expected_runs"`
	// DuplicateNodeRuns counts (workflow run, node, attempt, item) keys
	// with more than one job run; the handlers' duplicates are in
	// Correctness.
	DuplicateNodeRuns int64 `json:"duplicate_node_runs"`
	// HandlerDuplicates counts node runs a handler ran more than once.
	HandlerDuplicates int64    `json:"handler_duplicates"`
	DuplicateExamples []string `json:"duplicate_examples,omitempty"`
}

// ended reports whether every workflow fire of the window made a run that
// ended SUCCEEDED.
func (ws *WorkflowStats) ended() bool {
	return ws.Expected > 0 && ws.Runs["SUCCEEDED"] == ws.Expected && len(ws.Runs) == 1
}

func runWorkflow(ctx context.Context, e *env, res *Result) error {
	o := e.o
	k := len(workflowShape.nodes)
	nodes := &jobSet{firstID: 1, n: o.jobs * k, typ: "none", expr: "", offset: zeroOffset, handler: o.handler}
	flows := everySet(int64(o.jobs*k+1), o.jobs, time.Second, "", zeroOffset, 24*time.Hour)
	flows.kind = "workflow"
	if err := e.start(ctx, res, []*jobSet{nodes, flows}); err != nil {
		return err
	}
	if err := insertWorkflows(ctx, e, flows, k); err != nil {
		return err
	}
	w0, w1, err := e.armWindow(ctx, o.warmup, o.duration, flows)
	if err != nil {
		return err
	}
	secs := w1.Sub(w0).Seconds()
	res.Window = &Window{Start: w0.UTC(), End: w1.UTC(), Seconds: secs}
	logf("%d workflows of %d nodes, %d node runs/s offered; warm-up until %s, measuring %s until %s",
		o.jobs, k, o.jobs*k, w0.Format("15:04:05"), o.duration, w1.Format("15:04:05"))
	u0, u1, _, _, err := e.measure(ctx, res, w0, w1)
	if err != nil {
		return err
	}
	if err := waitWorkflows(ctx, e, w0, w1); err != nil {
		return err
	}
	u2, u, err := e.settle(ctx, w0, w1, nodes.firstID, nodes.lastID(), o.drain, "the window's node runs")
	if err != nil {
		return err
	}
	ws, err := measureWorkflows(ctx, e, w0, w1)
	if err != nil {
		return err
	}
	ws.Workflows, ws.NodesPerRun, ws.Expected = o.jobs, k, int64(o.jobs)*int64(secs)
	res.Workflow = ws
	succeeded := int64(ws.NodeRunsPerS*secs + 0.5)
	res.Rates = &Rates{FiresDue: float64(o.jobs), RunsSucceeded: ws.NodeRunsPerS, succeeded: succeeded}
	ws.HandlerDuplicates, ws.DuplicateExamples = u.duplicates()
	e.usageResults(ctx, res, u0, u1, secs, succeeded)
	withPeakRSS(res.Processes, u2)
	return nil
}

// insertWorkflows gives each workflow job of flows its graph: node i of
// workflow w runs node job w*k+i+1.
func insertWorkflows(ctx context.Context, e *env, flows *jobSet, k int) error {
	type node struct {
		Name  string `json:"name"`
		JobID int64  `json:"job_id"`
	}
	type edge struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	edges := make([]edge, len(workflowShape.edges))
	for i, ed := range workflowShape.edges {
		edges[i] = edge{From: ed[0], To: ed[1]}
	}
	ids := make([]int64, flows.n)
	specs := make([]string, flows.n)
	for w := range flows.n {
		ns := make([]node, k)
		for i, name := range workflowShape.nodes {
			ns[i] = node{Name: name, JobID: int64(w*k + i + 1)}
		}
		b, err := json.Marshal(struct {
			Nodes []node `json:"nodes"`
			Edges []edge `json:"edges"`
		}{ns, edges})
		if err != nil {
			return err
		}
		ids[w], specs[w] = flows.firstID+int64(w), string(b)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO workflows (job_id, spec, overlap)
		SELECT id, spec::jsonb, 'concurrent' FROM unnest($1::bigint[], $2::text[]) AS u(id, spec)`, ids, specs); err != nil {
		return fmt.Errorf("insert workflows: %w", err)
	}
	return nil
}

// waitWorkflows waits, at most --drain, until every workflow run fired in
// [from, to) has ended.
func waitWorkflows(ctx context.Context, e *env, from, to time.Time) error {
	deadline := time.Now().Add(e.o.drain)
	for {
		var open int64
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM workflow_runs WHERE scheduled_at >= $1 AND scheduled_at < $2
			AND status IN ('QUEUED', 'RUNNING')`, from, to).Scan(&open); err != nil {
			return fmt.Errorf("workflow drain: %w", err)
		}
		if open == 0 || time.Now().After(deadline) {
			if open > 0 {
				e.note("%d workflow runs of the window had not ended %s after it", open, e.o.drain)
			}
			return nil
		}
		if err := backoff.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// measureWorkflows reads the window's figures from PostgreSQL: the node
// runs that ended in it (the rate), the node waits of those that started
// in it, the durations and statuses of the workflow runs fired in it, and
// any node key run twice.
func measureWorkflows(ctx context.Context, e *env, from, to time.Time) (*WorkflowStats, error) {
	ws := &WorkflowStats{Runs: map[string]int64{}}
	secs := to.Sub(from).Seconds()
	var done int64
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE workflow_run IS NOT NULL
		AND scheduled_at >= $1::timestamptz - interval '1 minute' AND finished_at >= $1 AND finished_at < $2 AND status = 'SUCCEEDED'`,
		from, to).Scan(&done); err != nil {
		return nil, fmt.Errorf("node runs: %w", err)
	}
	ws.NodeRunsPerS = round1(float64(done) / secs)
	var err error
	if ws.NodeWaitMs, err = latencyOf(ctx, e, `SELECT 1000 * extract(epoch FROM started_at - scheduled_at)::float8 FROM job_runs
		WHERE workflow_run IS NOT NULL AND scheduled_at >= $1::timestamptz - interval '1 minute' AND started_at >= $1 AND started_at < $2`, from, to); err != nil {
		return nil, fmt.Errorf("node wait: %w", err)
	}
	if ws.RunDurationMs, err = latencyOf(ctx, e, `SELECT 1000 * extract(epoch FROM finished_at - scheduled_at)::float8 FROM workflow_runs
		WHERE scheduled_at >= $1 AND scheduled_at < $2 AND finished_at IS NOT NULL`, from, to); err != nil {
		return nil, fmt.Errorf("workflow run duration: %w", err)
	}
	rows, _ := e.pool.Query(ctx, `SELECT status, count(*) FROM workflow_runs WHERE scheduled_at >= $1 AND scheduled_at < $2 GROUP BY status`, from, to)
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			rows.Close()
			return nil, err
		}
		ws.Runs[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("workflow runs: %w", err)
	}
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM job_runs WHERE workflow_run IS NOT NULL
		GROUP BY workflow_run, node, node_attempt, item HAVING count(*) > 1) d`).Scan(&ws.DuplicateNodeRuns); err != nil {
		return nil, fmt.Errorf("duplicate node runs: %w", err)
	}
	return ws, nil
}

// latencyOf is the p50, p99 and max of the values query returns for
// [from, to).
func latencyOf(ctx context.Context, e *env, query string, from, to time.Time) (Latency, error) {
	rows, _ := e.pool.Query(ctx, query, from, to)
	var xs []float64
	for rows.Next() {
		var x float64
		if err := rows.Scan(&x); err != nil {
			rows.Close()
			return Latency{}, err
		}
		xs = append(xs, x)
	}
	if err := rows.Err(); err != nil {
		return Latency{}, err
	}
	p50, p99, mx := percentiles(xs)
	return Latency{N: int64(len(xs)), P50: round3(p50), P99: round3(p99), Max: round3(mx)}, nil
}
