package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// wfNodes are the diamond's nodes, A → (B, C) → D.
var wfNodes = []string{"a", "b", "c", "d"}

// createDiamond creates the diamond's shell jobs and the workflow
// (overlap concurrent), jobs of block strategy concurrent. Every node writes its witness line first
// (tickCmd); A then sets its output, {"from": its run id, "rows": 42}; D's
// params, rendered from A's output, add a line "D_RUN A_RUN ROWS" to
// d.log in the witness directory. A, B and C take two seconds each, so
// that a kill finds runs in every phase.
func (c *cluster) createDiamond() int64 {
	c.t.Helper()
	params := map[string]string{
		"a": tickCmd + `; sleep 2; printf '{"from": %s, "rows": 42}' "$JETJOB_RUN_ID" > "$JETJOB_OUTPUT"`,
		"b": tickCmd + "; sleep 2",
		"c": tickCmd + "; sleep 2",
		"d": tickCmd,
	}
	for _, n := range wfNodes {
		// Block strategy concurrent: the runs of the workflow overlap, as
		// only the workflow decides (serial would queue each node's runs).
		if _, err := c.api().CreateJob(c.ctx(), apiv1.JobSpec{Group: group, Name: "wf-" + n, Handler: "shell", Params: params[n],
			ScheduleType: "none", BlockStrategy: "concurrent"}); err != nil {
			c.t.Fatalf("create job wf-%s: %v", n, err)
		}
	}
	dParams := tickCmd + `; echo "$JETJOB_RUN_ID {{ .nodes.a.output.from }} {{ .nodes.a.output.rows }}" >> ` + witnessMount + `/d.log`
	wf, err := c.api().CreateWorkflow(c.ctx(), apiv1.WorkflowSpec{Group: group, Name: "diamond", ScheduleType: "none",
		Overlap: "concurrent", Nodes: []apiv1.WorkflowNode{
			{Name: "a", Job: group + "/wf-a"}, {Name: "b", Job: group + "/wf-b"}, {Name: "c", Job: group + "/wf-c"},
			{Name: "d", Job: group + "/wf-d", Params: &dParams},
		}, Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}, {From: "a", To: "c"}, {From: "b", To: "d"}, {From: "c", To: "d"}}})
	if err != nil {
		c.t.Fatalf("create workflow: %v", err)
	}
	return wf.ID
}

// triggerWorkflow starts n runs of workflow wf and returns their ids.
func (c *cluster) triggerWorkflow(wf int64, n int) []int64 {
	c.t.Helper()
	var ids []int64
	for range n {
		r, err := c.api().TriggerWorkflow(c.ctx(), wf, nil)
		if err != nil {
			c.t.Fatalf("trigger workflow %d: %v", wf, err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// dLines reads d.log: A's run id and rows as D saw them, by D's run id.
func (c *cluster) dLines() map[int64][2]int64 {
	c.t.Helper()
	out := map[int64][2]int64{}
	for _, fs := range c.witnessLines("d.log", 3) {
		var v [3]int64
		for i := range v {
			var err error
			v[i], err = strconv.ParseInt(fs[i], 10, 64)
			if err != nil {
				c.t.Errorf("d.log line %q: %v", fs, err)
			}
		}
		if _, dup := out[v[0]]; dup {
			c.t.Errorf("D's run %d wrote d.log twice", v[0])
		}
		out[v[0]] = [2]int64{v[1], v[2]}
	}
	return out
}

// auditWorkflows waits until every run of workflow wf has ended, then
// checks what the scheduler package's fault tests check (wfFault.audit),
// from outside:
//
//   - the workflow's runs are runs, each ended SUCCEEDED with its own run;
//   - each node run's key (workflow run, node, node attempt, item) is
//     written once and has exactly one job run, of job attempt 0: nothing
//     created twice, nothing retried (no worker died);
//   - each node job run SUCCEEDED with exactly one witness line: no (node,
//     attempt) ran twice, none was forgotten;
//   - D's params carried A's output of its own workflow run;
//   - JETJOB_TRIGGERS stored one message per node run (a trigger
//     published again after the kill was dropped as a duplicate) and the
//     streams drained.
func (c *cluster) auditWorkflows(wf int64, runs []int64) {
	t := c.t
	t.Helper()
	ctx := c.ctx()
	if !testwait.Poll(3*time.Minute, func() bool {
		var open int
		err := c.pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM workflow_runs WHERE workflow_id = $1 AND status IN ('QUEUED', 'RUNNING'))
			+ (SELECT count(*) FROM job_runs WHERE (workflow_run = ANY($2) OR id = ANY($2)) AND status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING'))`,
			wf, runs).Scan(&open)
		return err == nil && open == 0
	}) {
		t.Fatalf("the workflow runs did not all end within 3 minutes")
	}
	if n := c.count(`SELECT count(*) FROM workflow_runs w JOIN job_runs r ON r.id = w.id
		WHERE w.workflow_id = $1 AND w.id = ANY($2) AND w.status = 'SUCCEEDED' AND r.status = 'SUCCEEDED'`, wf, runs); n != len(runs) {
		t.Errorf("%d of %d workflow runs ended SUCCEEDED with their own runs", n, len(runs))
	}
	if n := c.count(`SELECT count(*) FROM workflow_runs WHERE workflow_id = $1`, wf); n != len(runs) {
		t.Errorf("the workflow has %d runs, want the %d triggered", n, len(runs))
	}
	if n := c.count(`SELECT count(*) FROM workflow_node_runs WHERE workflow_run = ANY($1)`, runs); n != len(runs)*len(wfNodes) {
		t.Errorf("%d node run keys, want %d (one per node of each run)", n, len(runs)*len(wfNodes))
	}
	rows, _ := c.pool().Query(ctx, `SELECT r.id, r.workflow_run, r.node, r.node_attempt, r.item, r.attempt, r.status,
			k.run_id IS NOT NULL
		FROM job_runs r LEFT JOIN workflow_node_runs k ON k.workflow_run = r.workflow_run AND k.node = r.node
			AND k.node_attempt = r.node_attempt AND k.item = r.item AND k.run_id = r.id
		WHERE r.workflow_run = ANY($1) ORDER BY r.id`, runs)
	type jobRun struct {
		id, wr                 int64
		node, status           string
		nodeAttempt, item, att int
		keyed                  bool
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobRun, error) {
		var j jobRun
		return j, r.Scan(&j.id, &j.wr, &j.node, &j.nodeAttempt, &j.item, &j.att, &j.status, &j.keyed)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(runs)*len(wfNodes) {
		t.Errorf("%d node job runs, want %d: one per node of each run", len(all), len(runs)*len(wfNodes))
	}
	execs := map[int64]int{}
	for _, e := range c.executions() {
		execs[e.run]++
	}
	seen := map[string]bool{}
	aRun := map[int64]int64{}
	for _, r := range all {
		desc := fmt.Sprintf("run %d (workflow run %d, node %s, node attempt %d, item %d, attempt %d): %s", r.id, r.wr, r.node, r.nodeAttempt, r.item, r.att, r.status)
		k := fmt.Sprint(r.wr, r.node, r.nodeAttempt, r.item, r.att)
		if seen[k] {
			t.Errorf("%s: a second job run of the same node run and attempt", desc)
		}
		seen[k] = true
		if !r.keyed || r.nodeAttempt != 0 || r.item != 0 || r.att != 0 || r.status != "SUCCEEDED" {
			t.Errorf("%s: want SUCCEEDED at node attempt 0, item 0, attempt 0, named by its key (keyed: %t)", desc, r.keyed)
		}
		if execs[r.id] != 1 {
			t.Errorf("%s: %d witness lines, want 1", desc, execs[r.id])
		}
		delete(execs, r.id)
		if r.node == "a" {
			aRun[r.wr] = r.id
		}
	}
	for run, n := range execs {
		t.Errorf("run %d, not a node run of the workflow's runs, executed %d times", run, n)
	}
	d := c.dLines()
	for _, r := range all {
		if r.node != "d" {
			continue
		}
		if got, ok := d[r.id]; !ok || got != [2]int64{aRun[r.wr], 42} {
			t.Errorf("D's run %d (workflow run %d) saw A's output %v (written: %t), want from %d, rows 42", r.id, r.wr, got, ok, aRun[r.wr])
		}
	}

	js, closeJS := c.jetStream()
	defer closeJS()
	sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var why string
	testwait.Poll(45*time.Second, func() bool {
		why = c.streamsDrained(sctx, js, false)
		return why == ""
	})
	if why != "" {
		t.Errorf("JetStream not drained: %s", why)
	}
	ts, err := js.Stream(sctx, stream.Triggers)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ts.Info(sctx)
	if err != nil {
		t.Fatal(err)
	}
	// Sequences are never reused: the last one counts every message stored.
	if stored := int(info.State.LastSeq); stored != len(all) {
		t.Errorf("%s stored %d trigger messages for %d node runs: a trigger was stored twice", stream.Triggers, stored, len(all))
	}
	t.Logf("audit: %d workflow runs SUCCEEDED, %d node runs each executed once, %d triggers stored", len(runs), len(all), int(info.State.LastSeq))
}

// A workflow runs through a scheduler's crash: the scheduler holding
// shard 0, the one applying run events (and so advancing workflow runs
// and firing their next nodes), is killed (SIGKILL) while eight runs of
// the diamond are in flight: four with A running, four triggered before
// them further on (between A's end and B and C, B and C running, or D). The survivor takes its
// shards, fires what it left SCHEDULED and applies what it left unacked:
// every workflow run succeeds, each node ran once, and D read A's output.
func TestWorkflowSchedulerKilled(t *testing.T) {
	c := newCluster(t, options{})
	testwait.Eventually(t, 4*leaseTTL, "both schedulers to hold shards", func() bool { return c.shardsHeldBy("sched-1", "sched-2") })
	wf := c.createDiamond()
	runs := c.triggerWorkflow(wf, 4)
	testwait.Eventually(t, 60*time.Second, "a first A's end to be applied", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE workflow_run = ANY($1) AND node = 'b'`, runs) > 0
	})
	second := c.triggerWorkflow(wf, 4)
	testwait.Eventually(t, 60*time.Second, "the second runs' A to be running", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE workflow_run = ANY($1) AND node = 'a' AND status = 'RUNNING'`, second) == len(second)
	})
	runs = append(runs, second...)

	var owner string
	if err := c.pool().QueryRow(c.ctx(), `SELECT owner FROM scheduler_shards WHERE shard = 0`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	var victim *node
	for _, n := range c.scheds {
		if n.name == owner {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("shard 0 is held by %q, not a scheduler of the cluster", owner)
	}
	phases := func() string {
		var a, between, bc, d int
		if err := c.pool().QueryRow(c.ctx(), `SELECT
				count(*) FILTER (WHERE node = 'a' AND status IN ('TRIGGERED', 'RUNNING')),
				count(*) FILTER (WHERE node IN ('b', 'c') AND status = 'SCHEDULED'),
				count(*) FILTER (WHERE node IN ('b', 'c') AND status IN ('TRIGGERED', 'RUNNING')),
				count(*) FILTER (WHERE node = 'd')
			FROM job_runs WHERE workflow_run = ANY($1)`, runs).Scan(&a, &between, &bc, &d); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d A runs running, %d B/C runs not yet published, %d B/C runs running, %d D runs", a, between, bc, d)
	}
	c.kill(victim)
	t.Logf("killed %s (shard 0): %s", victim.name, phases())
	c.auditWorkflows(wf, runs)
}
