package scheduler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// wfJob creates a job of group g run by handler, scheduled never: a node's
// job. Its block strategy is concurrent, so that only the workflow decides
// when its runs overlap.
func wfJob(t *testing.T, sys *system, name, handler string) int64 {
	t.Helper()
	return createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: name, Handler: handler, ScheduleType: "none",
		BlockStrategy: "concurrent"}).ID
}

func createWorkflow(t *testing.T, sys *system, spec apiv1.WorkflowSpec) *apiv1.Workflow {
	t.Helper()
	if spec.Group == "" {
		spec.Group = "g"
	}
	if spec.ScheduleType == "" {
		spec.ScheduleType = "none"
	}
	w, err := sys.api.CreateWorkflow(t.Context(), spec)
	if err != nil {
		t.Fatalf("create workflow %s: %v", spec.Name, err)
	}
	return w
}

// waitWorkflowRun waits until workflow run id ends and returns it; the
// run must end as want.
func waitWorkflowRun(t *testing.T, sys *system, id int64, want string) *apiv1.WorkflowRun {
	t.Helper()
	var run *apiv1.WorkflowRun
	testwait.Eventually(t, 60*time.Second, fmt.Sprintf("workflow run %d to end", id), func() bool {
		r, err := sys.api.GetWorkflowRun(context.Background(), id)
		if err != nil {
			return false // not started yet (404)
		}
		run = r
		return r.Status != "RUNNING" && r.Status != "QUEUED"
	})
	if run.Status != want {
		t.Fatalf("workflow run %d ended %s (%s), want %s; nodes: %s", id, run.Status, run.Message, want, describeNodes(run))
	}
	return run
}

func describeNodes(r *apiv1.WorkflowRun) string {
	var parts []string
	for _, n := range r.Nodes {
		parts = append(parts, fmt.Sprintf("%s=%s(%s; %d runs)", n.Name, n.Status, n.Reason, len(n.Runs)))
	}
	return strings.Join(parts, ", ")
}

func wfNode(r *apiv1.WorkflowRun, name string) apiv1.WorkflowRunNode {
	for _, n := range r.Nodes {
		if n.Name == name {
			return n
		}
	}
	return apiv1.WorkflowRunNode{}
}

func str(s string) *string { return &s }

// diamond is A → (B, C) → D: D's params carry A's output.
type diamond struct {
	mu           sync.Mutex
	bDone, cDone bool
	// dSaw is, per run of D, whether B and C had ended when it started,
	// and its params.
	dSaw   []string
	bFails atomic.Int32 // B fails while positive
	ran    map[string]int
}

func (d *diamond) register(w *worker.Worker) {
	d.ran = map[string]int{}
	count := func(n string) {
		d.mu.Lock()
		d.ran[n]++
		d.mu.Unlock()
	}
	w.Handle("wf-a", func(_ context.Context, j *worker.Job) error {
		count("a")
		return j.SetOutput(map[string]any{"rows": 42, "day": "2026-11-27"})
	})
	// B and C take a while, C longer: a D started on A's end, or on B's
	// alone, would start before C ends.
	w.Handle("wf-b", func(context.Context, *worker.Job) error {
		count("b")
		time.Sleep(300 * time.Millisecond)
		if d.bFails.Add(-1) >= 0 {
			return errors.New("b fails on purpose")
		}
		d.mu.Lock()
		d.bDone = true
		d.mu.Unlock()
		return nil
	})
	w.Handle("wf-c", func(context.Context, *worker.Job) error {
		count("c")
		time.Sleep(900 * time.Millisecond) // ends well after B: D must wait for it
		d.mu.Lock()
		d.cDone = true
		d.mu.Unlock()
		return nil
	})
	w.Handle("wf-d", func(_ context.Context, j *worker.Job) error {
		count("d")
		d.mu.Lock()
		d.dSaw = append(d.dSaw, fmt.Sprintf("b=%v c=%v params=%s", d.bDone, d.cDone, j.Params))
		d.mu.Unlock()
		return nil
	})
}

func (d *diamond) spec(t *testing.T, sys *system) apiv1.WorkflowSpec {
	t.Helper()
	a, b := wfJob(t, sys, "a", "wf-a"), wfJob(t, sys, "b", "wf-b")
	wfJob(t, sys, "c", "wf-c")
	wfJob(t, sys, "d", "wf-d")
	return apiv1.WorkflowSpec{Name: "diamond", Nodes: []apiv1.WorkflowNode{
		{Name: "a", JobID: a}, {Name: "b", JobID: b}, {Name: "c", Job: "g/c"},
		{Name: "d", Job: "g/d", Params: str(`{"rows": {{ .nodes.a.output.rows }}, "day": "{{ .params.day }}"}`)},
	}, Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}, {From: "a", To: "c"}, {From: "b", To: "d"}, {From: "c", To: "d"}}}
}

// A diamond A → (B, C) → D: D starts only once B and C have both ended,
// and its params are rendered from A's output and the run's params.
func TestWorkflowDiamond(t *testing.T) {
	t.Parallel()
	d := &diamond{}
	sys := startSystem(t, d.register)
	wf := createWorkflow(t, sys, d.spec(t, sys))
	if got := wf.Nodes[0].Job; got != "g/a" {
		t.Errorf("node a's job reads %q, want g/a", got)
	}
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, str(`{"day": "monday"}`))
	if err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	d.mu.Lock()
	defer d.mu.Unlock()
	want := `b=true c=true params={"rows": 42, "day": "monday"}`
	if len(d.dSaw) != 1 || d.dSaw[0] != want {
		t.Errorf("D ran %q, want once, seeing %q", d.dSaw, want)
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if d.ran[n] != 1 {
			t.Errorf("%s ran %d times, want once", n, d.ran[n])
		}
		if nd := wfNode(done, n); nd.Status != "SUCCEEDED" || len(nd.Runs) != 1 {
			t.Errorf("node %s: %s with %d runs, want SUCCEEDED with one", n, nd.Status, len(nd.Runs))
		}
	}
	var out bytes.Buffer
	if err := json.Compact(&out, wfNode(done, "a").Runs[0].Output); err != nil || out.String() != `{"day":"2026-11-27","rows":42}` {
		t.Errorf("a's output reads %s (%v)", out.String(), err)
	}
	// The workflow's own run ends as the workflow run did.
	own, err := sys.api.GetRun(t.Context(), run.ID)
	if err != nil || own.Status != "SUCCEEDED" {
		t.Errorf("the workflow's run: %v %v, want SUCCEEDED", own, err)
	}
}

// B fails: D, which needs B to succeed, is SKIPPED and the workflow run
// FAILED. Retry from the failed node runs B again (its next attempt) and
// then D; A and C keep their outcome and are not run again.
func TestWorkflowFailureAndRetry(t *testing.T) {
	t.Parallel()
	d := &diamond{}
	d.bFails.Store(1)
	sys := startSystem(t, d.register)
	wf := createWorkflow(t, sys, d.spec(t, sys))
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, str(`{"day": "tuesday"}`))
	if err != nil {
		t.Fatal(err)
	}
	failed := waitWorkflowRun(t, sys, run.ID, "FAILED")
	if b := wfNode(failed, "b"); b.Status != "FAILED" {
		t.Errorf("b: %s, want FAILED", b.Status)
	}
	if dn := wfNode(failed, "d"); dn.Status != "SKIPPED" || !strings.Contains(dn.Reason, "b → d (success) needs b to succeed; it failed") {
		t.Errorf("d: %s (%q), want SKIPPED naming b's failure", dn.Status, dn.Reason)
	}
	if _, err := sys.api.RetryWorkflowRun(t.Context(), run.ID); err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ran["a"] != 1 || d.ran["c"] != 1 || d.ran["b"] != 2 || d.ran["d"] != 1 {
		t.Errorf("runs per node: %v, want a 1, b 2, c 1, d 1", d.ran)
	}
	if b := wfNode(done, "b"); b.Attempt != 1 || len(b.Runs) != 2 {
		t.Errorf("b: attempt %d with %d runs, want attempt 1 and two runs", b.Attempt, len(b.Runs))
	}
	if len(d.dSaw) != 1 || !strings.Contains(d.dSaw[0], `"rows": 42`) {
		t.Errorf("D saw %q, want A's output kept from the first attempt", d.dSaw)
	}
	// An ended run cannot be retried again with nothing failed.
	if _, err := sys.api.RetryWorkflowRun(t.Context(), run.ID); !isAPIError(err, 409) {
		t.Errorf("retry of a succeeded run: %v, want 409", err)
	}
}

// A for_each node over a list of 50 in an upstream output runs once per
// element, each seeing its element; the node after it gets the list of
// their outputs.
func TestWorkflowForEach(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	var summed string
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("list", func(_ context.Context, j *worker.Job) error {
			items := make([]int, 50)
			for i := range items {
				items[i] = i
			}
			return j.SetOutput(map[string]any{"items": items})
		})
		w.Handle("each", func(_ context.Context, j *worker.Job) error {
			mu.Lock()
			seen[j.Params]++
			mu.Unlock()
			n, err := strconv.Atoi(j.Params)
			if err != nil {
				return err
			}
			return j.SetOutput(n * 2)
		})
		w.Handle("sum", func(_ context.Context, j *worker.Job) error {
			mu.Lock()
			summed = j.Params
			mu.Unlock()
			return nil
		})
	})
	wfJob(t, sys, "list", "list")
	wfJob(t, sys, "each", "each")
	wfJob(t, sys, "sum", "sum")
	wf := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "fan", Nodes: []apiv1.WorkflowNode{
		{Name: "list", Job: "g/list"},
		{Name: "each", Job: "g/each", ForEach: "nodes.list.output.items", Params: str("{{ .item }}")},
		{Name: "sum", Job: "g/sum", Params: str("{{ json .nodes.each.output }}")},
	}, Edges: []apiv1.WorkflowEdge{{From: "list", To: "each"}, {From: "each", To: "sum"}}})
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 50 {
		t.Errorf("for_each ran %d distinct items, want 50", len(seen))
	}
	for item, n := range seen {
		if n != 1 {
			t.Errorf("item %s ran %d times", item, n)
		}
	}
	var list []int
	if err := json.Unmarshal([]byte(summed), &list); err != nil || len(list) != 50 || list[49] != 98 {
		t.Errorf("sum got %q, want the 50 outputs in item order", summed)
	}
	if each := wfNode(done, "each"); len(each.Runs) != 50 {
		t.Errorf("each has %d runs, want 50", len(each.Runs))
	}
	if done.NodeRuns != 52 {
		t.Errorf("the run counts %d node runs, want 52", done.NodeRuns)
	}
}

// A workflow on a schedule with overlap serial: a fire while a run is
// active waits (QUEUED) and starts when that run ends; runs never
// overlap, though each takes longer than the schedule's period.
func TestWorkflowScheduledSerial(t *testing.T) {
	t.Parallel()
	var running, most atomic.Int32
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("slow", func(context.Context, *worker.Job) error {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(1500 * time.Millisecond)
			running.Add(-1)
			return nil
		})
	})
	wfJob(t, sys, "slow", "slow")
	wf := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "every-second", ScheduleType: "fix_rate", ScheduleExpr: "1s",
		Overlap: "serial", Nodes: []apiv1.WorkflowNode{{Name: "slow", Job: "g/slow"}}})
	var queued bool
	testwait.Eventually(t, 60*time.Second, "three scheduled workflow runs to succeed", func() bool {
		rs, err := sys.api.ListWorkflowRuns(context.Background(), wf.ID, 0, 100)
		if err != nil {
			return false
		}
		ok := 0
		for _, r := range rs.Runs {
			queued = queued || r.Status == "QUEUED"
			if r.Status == "SUCCEEDED" {
				ok++
			}
		}
		return ok >= 3
	})
	if m := most.Load(); m != 1 {
		t.Errorf("at most %d runs of the workflow's node at once, want 1 (overlap serial)", m)
	}
	if !queued {
		t.Error("no fire was seen waiting (QUEUED) behind an active run")
	}
	if err := sys.api.DeleteWorkflow(t.Context(), wf.ID); err != nil {
		t.Fatal(err)
	}
}

// A finished event delivered again (a redelivery, a replay, a second
// scheduler applying it) creates no node run twice: the end it records is
// applied once, and advancing is part of applying it.
func TestWorkflowReplayedEventCreatesNothing(t *testing.T) {
	t.Parallel()
	var ranB atomic.Int32
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("first", func(_ context.Context, j *worker.Job) error { return j.SetOutput("x") })
		w.Handle("second", func(context.Context, *worker.Job) error { ranB.Add(1); return nil })
	})
	a := wfJob(t, sys, "first", "first")
	wfJob(t, sys, "second", "second")
	wf := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "pair", Nodes: []apiv1.WorkflowNode{
		{Name: "a", JobID: a}, {Name: "b", Job: "g/second"}}, Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}}})
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	aRun := wfNode(done, "a").Runs[0]
	js, err := jetstream.New(sys.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	// A's finished event again, three times, as new messages: the stream's
	// duplicate window does not drop them.
	for i := range 3 {
		data, err := wire.EncodeEvents(wire.Event{Kind: wire.EventFinished, RunID: aRun.RunID, JobID: a, WorkerID: "replay",
			Status: wire.StatusSucceeded, At: time.Now().UTC(), ScheduledAt: aRun.ScheduledAt, Output: json.RawMessage(`"x"`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(t.Context(), stream.Event("g"), data, jetstream.WithMsgID(fmt.Sprint("replay-", i))); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Eventually(t, 30*time.Second, "the replayed events to be applied", func() bool {
		return streamMsgs(t, js, stream.Events, "jetjob.event.>") == 0
	})
	var nodeRuns, bRuns int
	if err := sys.pool.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE node = 'b') FROM job_runs WHERE workflow_run = $1`,
		run.ID).Scan(&nodeRuns, &bRuns); err != nil {
		t.Fatal(err)
	}
	after, err := sys.api.GetWorkflowRun(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if nodeRuns != 2 || bRuns != 1 || ranB.Load() != 1 || after.Status != "SUCCEEDED" || after.NodeRuns != 2 {
		t.Errorf("after replays: %d node runs (%d of b), b ran %d times, run %s with %d node runs; want 2, 1, 1, SUCCEEDED, 2",
			nodeRuns, bRuns, ranB.Load(), after.Status, after.NodeRuns)
	}
}

// Validation names the problem: a cycle with its nodes, an edge to a node
// that does not exist, a template naming a node that is not upstream, a
// job that does not exist.
func TestWorkflowValidation(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) { w.Handle("h", func(context.Context, *worker.Job) error { return nil }) })
	j := wfJob(t, sys, "j", "h")
	for _, c := range []struct {
		what string
		spec apiv1.WorkflowSpec
		want string
	}{
		{"cycle", apiv1.WorkflowSpec{Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: j}, {Name: "b", JobID: j}},
			Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}, {From: "b", To: "a"}}}, "cycle: a → b → a"},
		{"unknown node", apiv1.WorkflowSpec{Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: j}},
			Edges: []apiv1.WorkflowEdge{{From: "a", To: "zz"}}}, `no node "zz"`},
		{"not upstream", apiv1.WorkflowSpec{Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: j},
			{Name: "b", JobID: j, Params: str("{{ .nodes.a.output }}")}}}, `params use node "a", which is not upstream of it`},
		{"unknown job", apiv1.WorkflowSpec{Nodes: []apiv1.WorkflowNode{{Name: "a", Job: "g/nope"}}}, `job "g/nope": no such job`},
		{"missing job id", apiv1.WorkflowSpec{Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: 99999}}}, "no such job"},
	} {
		c.spec.Name, c.spec.Group, c.spec.ScheduleType = "bad-"+strings.ReplaceAll(c.what, " ", "-"), "g", "none"
		_, err := sys.api.CreateWorkflow(t.Context(), c.spec)
		if !isAPIError(err, 400) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want 400 saying %q", c.what, err, c.want)
		}
	}
	ws, err := sys.api.ListWorkflows(t.Context(), "g", 0, 0)
	if err != nil || len(ws.Workflows) != 0 {
		t.Errorf("workflows after refusals: %v %v, want none", ws, err)
	}
	// The job listing holds jobs, not workflows' own rows.
	good := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "good", Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: j}}})
	jobs, err := sys.api.ListJobs(t.Context(), client.ListJobsOptions{Group: "g"})
	if err != nil || len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != j {
		t.Errorf("jobs: %v %v, want job %d alone (not workflow %d)", jobs, err, j, good.ID)
	}
}

// An inline node runs a job of its own, written with the workflow: a run
// of extract (inline) → load (a job named by group/name) succeeds, load
// reading extract's output, extract's first attempt failing and retried
// by its inline job's retries. The inline job is the workflow's: not in the
// job list, refused by the job endpoints, re-written in place when the
// workflow changes, and gone with the workflow.
func TestWorkflowInlineNode(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var loaded []string
	var extracts atomic.Int32
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("inl-extract", func(_ context.Context, j *worker.Job) error {
			if j.Params != `{"day": "monday"}` {
				return fmt.Errorf("extract got params %q, want its inline job's", j.Params)
			}
			if extracts.Add(1) == 1 {
				return errors.New("the first extract fails on purpose")
			}
			return j.SetOutput(map[string]any{"rows": 7})
		})
		w.Handle("inl-load", func(_ context.Context, j *worker.Job) error {
			mu.Lock()
			loaded = append(loaded, j.Params)
			mu.Unlock()
			return nil
		})
	})
	load := wfJob(t, sys, "load", "inl-load")
	spec := apiv1.WorkflowSpec{Name: "inline", Group: "g", ScheduleType: "none", Nodes: []apiv1.WorkflowNode{
		{Name: "extract", Inline: &apiv1.InlineJob{Handler: "inl-extract", Params: `{"day": "monday"}`,
			Timeout: apiv1.Duration(time.Minute), MaxRetries: 1, BlockStrategy: "concurrent",
			RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond)}},
		{Name: "load", Job: "g/load", Params: str(`{"rows": {{ .nodes.extract.output.rows }}}`)},
	}, Edges: []apiv1.WorkflowEdge{{From: "extract", To: "load"}}}
	wf := createWorkflow(t, sys, spec)
	if n := wf.Nodes[0]; n.Inline == nil || n.Inline.Handler != "inl-extract" || n.JobID != 0 || n.Job != "" ||
		time.Duration(n.Inline.Timeout) != time.Minute || n.Inline.MaxRetries != 1 {
		t.Errorf("extract reads %+v (inline %+v), want its inline job and no job reference", n, n.Inline)
	}
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	mu.Lock()
	if len(loaded) != 1 || loaded[0] != `{"rows": 7}` {
		t.Errorf("load ran with %q, want once with extract's output", loaded)
	}
	mu.Unlock()
	ex := wfNode(done, "extract")
	if ex.Status != "SUCCEEDED" || len(ex.Runs) != 1 || ex.JobID == 0 || ex.JobID == load {
		t.Fatalf("extract: %+v, want SUCCEEDED once, on a job of its own", ex)
	}
	// Its run is an ordinary run of its job: the retry of a failed one.
	r, err := sys.api.GetRun(t.Context(), ex.Runs[0].RunID)
	if err != nil || r.JobID != ex.JobID || r.Status != "SUCCEEDED" || r.Attempt != 1 || extracts.Load() != 2 {
		t.Errorf("extract's run: %+v %v (%d extracts), want a SUCCEEDED retry (attempt 1) of job %d", r, err, extracts.Load(), ex.JobID)
	}

	// Not a job of the group's list, and not the job endpoints' to change.
	jobs, err := sys.api.ListJobs(t.Context(), client.ListJobsOptions{Group: "g"})
	if err != nil || len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != load {
		t.Errorf("jobs: %+v %v, want job %d alone", jobs, err, load)
	}
	if _, err := sys.api.TriggerJob(t.Context(), ex.JobID, nil); !isAPIError(err, 400) || !strings.Contains(err.Error(), "editing the workflow") {
		t.Errorf("trigger of the inline job: %v, want 400 sending to the workflow", err)
	}
	if err := sys.api.DeleteJob(t.Context(), ex.JobID); !isAPIError(err, 400) {
		t.Errorf("delete of the inline job: %v, want 400", err)
	}

	// An edit keeps the row (same job, new definition); a node that goes
	// takes its job with it.
	spec.Nodes[0].Inline.MaxRetries = 3
	spec.Version = wf.Version
	wf2, err := sys.api.UpdateWorkflow(t.Context(), wf.ID, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := wf2.Nodes[0].Inline; got == nil || got.MaxRetries != 3 {
		t.Errorf("after the edit, extract reads %+v, want max_retries 3", got)
	}
	run2, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ex2 := wfNode(waitWorkflowRun(t, sys, run2.ID, "SUCCEEDED"), "extract"); ex2.JobID != ex.JobID {
		t.Errorf("after the edit extract runs job %d, want its row %d re-written in place", ex2.JobID, ex.JobID)
	}
	if j, err := sys.api.GetJob(t.Context(), ex.JobID); err != nil || j.MaxRetries != 3 {
		t.Errorf("the inline job after the edit: %+v %v, want max_retries 3", j, err)
	}
	if err := sys.api.DeleteWorkflow(t.Context(), wf.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.api.GetJob(t.Context(), ex.JobID); !isAPIError(err, 404) {
		t.Errorf("the inline job after the workflow's delete: %v, want 404", err)
	}
}

// An inline node is checked as a job is, every problem named with its
// node; a node names a job or has one of its own, not both, not neither.
func TestWorkflowInlineValidation(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) { w.Handle("h", func(context.Context, *worker.Job) error { return nil }) })
	j := wfJob(t, sys, "j", "h")
	for _, c := range []struct {
		what string
		node apiv1.WorkflowNode
		want string
	}{
		{"both", apiv1.WorkflowNode{Name: "a", JobID: j, Inline: &apiv1.InlineJob{Handler: "h"}}, `node "a": give job (or job_id), naming a job, or inline, a job of its own; not both`},
		{"both by name", apiv1.WorkflowNode{Name: "a", Job: "g/j", Inline: &apiv1.InlineJob{Handler: "h"}}, `not both`},
		{"neither", apiv1.WorkflowNode{Name: "a"}, `node "a": names no job: give job: group/name, or inline: {handler: ...}`},
		{"no handler", apiv1.WorkflowNode{Name: "a", Inline: &apiv1.InlineJob{}}, `node "a": inline job: handler is required`},
		{"bad strategy", apiv1.WorkflowNode{Name: "a", Inline: &apiv1.InlineJob{Handler: "h", BlockStrategy: "sometimes"}}, `node "a": inline job: `},
		{"unknown group", apiv1.WorkflowNode{Name: "a", Inline: &apiv1.InlineJob{Handler: "h", Group: "nope"}}, `node "a": inline job: unknown group "nope"`},
		{"key cap without a key", apiv1.WorkflowNode{Name: "a", Inline: &apiv1.InlineJob{Handler: "h", KeyCap: 2}},
			`node "a": inline job: key_cap needs a concurrency_key`},
	} {
		spec := apiv1.WorkflowSpec{Name: "bad-" + strings.ReplaceAll(c.what, " ", "-"), Group: "g", ScheduleType: "none",
			Nodes: []apiv1.WorkflowNode{c.node}}
		_, err := sys.api.CreateWorkflow(t.Context(), spec)
		if !isAPIError(err, 400) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want 400 saying %q", c.what, err, c.want)
		}
	}
}
