package wfengine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is a database with group g, jobs a and b, and a workflow a → b.
type env struct {
	t    *testing.T
	ctx  context.Context
	pool *pgxpool.Pool
	st   *store.Store
	wf   store.Workflow
}

func setup(t *testing.T, pol wfengine.Policy, mods ...func(*wfengine.Spec)) *env {
	t.Helper()
	ctx := context.Background()
	pool, st := pgtest.Store(t)
	job := func(name string) int64 {
		j, err := st.CreateJob(ctx, store.System, store.Job{Group: "g", Name: name, Handler: "h", ScheduleType: "none",
			Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any", BlockStrategy: "serial"})
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	a, b := job("a"), job("b")
	if pol.Overlap == "" {
		pol.Overlap = wfengine.OverlapSerial
	}
	spec := wfengine.Spec{Nodes: []wfengine.NodeSpec{{Name: "a", JobID: a}, {Name: "b", JobID: b}},
		Edges: []wfengine.EdgeSpec{{From: "a", To: "b"}}}
	for _, m := range mods {
		m(&spec)
	}
	wf, err := st.CreateWorkflow(ctx, store.System, store.Workflow{
		Job:    store.Job{Group: "g", Name: "w", ScheduleType: "none", Timezone: "UTC", MisfirePolicy: "skip", Enabled: true},
		Spec:   spec,
		Policy: pol,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, pool: pool, st: st, wf: wf}
}

// start triggers the workflow and starts its run as dispatch would.
func (e *env) start() (runs.Planned, wfengine.Started) {
	e.t.Helper()
	p, err := e.st.InsertManualRun(e.ctx, store.System, e.wf.ID, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if !p.Workflow {
		e.t.Fatal("a workflow's manual run is not marked Workflow")
	}
	st, err := wfengine.Start(e.ctx, e.pool, "me", &p, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return p, st
}

// nodeRuns returns the node runs of workflow run id by node.
func (e *env) nodeRuns(id int64) map[string][]int64 {
	e.t.Helper()
	rows, _ := e.pool.Query(e.ctx, `SELECT node, id FROM job_runs WHERE workflow_run = $1 ORDER BY id`, id)
	out := map[string][]int64{}
	var node string
	var run int64
	if _, err := pgx.ForEachRow(rows, []any{&node, &run}, func() error { out[node] = append(out[node], run); return nil }); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// end records run id's end as the results applier does, advancing in the
// same transaction (a batch of one); it returns the node runs that created.
func (e *env) end(id int64, status wire.Status) []int64 {
	e.t.Helper()
	return e.endAll(status, id)
}

func (e *env) status(id int64) (wf string, own wire.Status) {
	e.t.Helper()
	if err := e.pool.QueryRow(e.ctx, `SELECT w.status, r.status FROM workflow_runs w JOIN job_runs r ON r.id = w.id WHERE w.id = $1`,
		id).Scan(&wf, &own); err != nil {
		e.t.Fatal(err)
	}
	return wf, own
}

// A fire starts one workflow run however often it is handed over; an end
// recorded twice, or advanced twice, creates its successors once; a node
// run's key is written once.
func TestExactlyOncePerNode(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{})
	p, st := e.start()
	if st.Status != wfengine.RunRunning || len(st.Spawned) != 1 {
		t.Fatalf("start: %+v, want RUNNING with a's run", st)
	}
	again, err := wfengine.Start(e.ctx, e.pool, "me", &p, 0)
	if err != nil || again.Status != "" || len(again.Spawned) != 0 {
		t.Fatalf("second start of the same fire: %+v %v, want nothing done", again, err)
	}
	a := e.nodeRuns(p.RunID)["a"]
	if len(a) != 1 {
		t.Fatalf("a's runs: %v, want one", a)
	}
	if got := e.end(a[0], wire.StatusSucceeded); len(got) != 1 {
		t.Fatalf("a's end created %v, want b's run", got)
	}
	if got := e.end(a[0], wire.StatusSucceeded); len(got) != 0 {
		t.Errorf("a's end applied again created %v, want nothing", got)
	}
	// Advanced again straight, as a replay past the applier's check would.
	var at time.Time
	if err := e.pool.QueryRow(e.ctx, `SELECT scheduled_at FROM job_runs WHERE id = $1`, a[0]).Scan(&at); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		got, err := wfengine.Advance(e.ctx, tx, []runs.NodeEnd{{RunID: a[0], ScheduledAt: at, Status: wire.StatusSucceeded,
			WorkflowRun: p.RunID, Node: "a"}}, 0)
		if len(got.Spawned) != 0 || len(got.Ended) != 0 {
			t.Errorf("advancing a's end again did %+v", got)
		}
		if err != nil {
			return err
		}
		created, err := runs.InsertNodeRuns(e.ctx, tx, []runs.NodeRun{{WorkflowRun: p.RunID, Node: "b", JobID: e.wf.Spec.Nodes[1].JobID}})
		if len(created) != 0 {
			t.Errorf("a second insert of b's key created %v", created)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b := e.nodeRuns(p.RunID)["b"]
	if len(b) != 1 {
		t.Fatalf("b's runs: %v, want one", b)
	}
	e.end(b[0], wire.StatusSucceeded)
	if wf, own := e.status(p.RunID); wf != "SUCCEEDED" || own != wire.StatusSucceeded {
		t.Errorf("workflow run %s, its run %s; want both SUCCEEDED", wf, own)
	}
}

// Overlap serial: a second fire waits QUEUED, its run TRIGGERED, and
// starts in the transaction that ends the first.
func TestSerialQueues(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{})
	p1, _ := e.start()
	p2, st := e.start()
	if st.Status != wfengine.RunQueued || len(st.Spawned) != 0 {
		t.Fatalf("second fire: %+v, want QUEUED with nothing started", st)
	}
	if _, own := e.status(p2.RunID); own != wire.StatusTriggered {
		t.Errorf("the queued run's own run is %s, want TRIGGERED", own)
	}
	e.end(e.nodeRuns(p1.RunID)["a"][0], wire.StatusFailed)
	if wf, _ := e.status(p1.RunID); wf != "FAILED" {
		t.Fatalf("first run %s, want FAILED", wf)
	}
	if wf, own := e.status(p2.RunID); wf != "RUNNING" || own != wire.StatusRunning || len(e.nodeRuns(p2.RunID)["a"]) != 1 {
		t.Errorf("second run %s (own %s) with runs %v, want RUNNING with a started", wf, own, e.nodeRuns(p2.RunID))
	}
}

// Overlap discard_later ends a fire DISCARDED while a run is active;
// cover_early cancels the older run.
func TestDiscardAndCover(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{Overlap: wfengine.OverlapDiscardLater})
	e.start()
	p2, st := e.start()
	if wf, own := e.status(p2.RunID); st.Status != wfengine.RunDiscarded || wf != "DISCARDED" || own != wire.StatusDiscarded {
		t.Errorf("discard_later: %s, %s, %s; want DISCARDED", st.Status, wf, own)
	}
	if !slices.Equal(st.Ended, []wfengine.Ended{{RunID: p2.RunID, WorkflowID: p2.JobID, Group: p2.Group, Status: wfengine.RunDiscarded}}) {
		t.Errorf("discard_later: the start reports %v ended, want the run DISCARDED (metrics)", st.Ended)
	}

	c := setup(t, wfengine.Policy{Overlap: wfengine.OverlapCoverEarly})
	old, _ := c.start()
	p, st := c.start()
	if st.Status != wfengine.RunRunning {
		t.Fatalf("cover_early: the new run %s, want RUNNING", st.Status)
	}
	if wf, own := c.status(old.RunID); wf != "CANCELLED" || own != wire.StatusCancelled {
		t.Errorf("cover_early: the old run %s (own %s), want CANCELLED (its a not yet published)", wf, own)
	}
	if len(st.Ended) != 1 || st.Ended[0].RunID != old.RunID || st.Ended[0].Status != wfengine.RunCancelled {
		t.Errorf("cover_early: the start reports %v ended, want the old run CANCELLED (metrics)", st.Ended)
	}
	if len(c.nodeRuns(p.RunID)["a"]) != 1 {
		t.Error("cover_early: the new run did not start a")
	}
}

// Overlap buffer_one: while a run is active one fire waits QUEUED behind
// it and any further one ends DISCARDED naming the one that waits; when
// the active run ends, the waiting one starts, and a fire after that may
// wait again.
func TestBufferOne(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{Overlap: wfengine.OverlapBufferOne})
	p1, _ := e.start()
	p2, st := e.start()
	if st.Status != wfengine.RunQueued {
		t.Fatalf("second fire: %s, want QUEUED behind the active run", st.Status)
	}
	p3, st := e.start()
	if wf, own := e.status(p3.RunID); st.Status != wfengine.RunDiscarded || wf != "DISCARDED" || own != wire.StatusDiscarded {
		t.Fatalf("third fire: %s, %s, %s; want DISCARDED", st.Status, wf, own)
	}
	var msg string
	if err := e.pool.QueryRow(e.ctx, `SELECT message FROM job_runs WHERE id = $1`, p3.RunID).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("run %d of the workflow already waits", p2.RunID); !strings.Contains(msg, want) {
		t.Errorf("the discarded run's message %q does not say %q", msg, want)
	}
	e.end(e.nodeRuns(p1.RunID)["a"][0], wire.StatusFailed) // the first run ends FAILED
	if wf, _ := e.status(p2.RunID); wf != "RUNNING" {
		t.Fatalf("the waiting run %s after the first ended, want RUNNING", wf)
	}
	if _, st := e.start(); st.Status != wfengine.RunQueued {
		t.Errorf("a fire once the buffer emptied: %s, want QUEUED", st.Status)
	}
}

// A run past its timeout is cancelled and ends TIMED_OUT; its node runs
// not yet published end CANCELLED.
func TestTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{Timeout: time.Millisecond})
	p, _ := e.start()
	// The sweep, called as the timeout loop calls it, until the 1 ms
	// timeout has passed and the sweep ended the run.
	testwait.Eventually(t, 10*time.Second, "the run to time out", func() bool {
		done, err := wfengine.TimeOut(e.ctx, e.pool, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if wf, _ := e.status(p.RunID); wf != "TIMED_OUT" {
			return false
		}
		if len(done.Kill) != 1 {
			t.Errorf("kills %v, want a's run", done.Kill)
		}
		if len(done.Ended) != 1 || done.Ended[0].RunID != p.RunID || done.Ended[0].Status != wfengine.RunTimedOut || done.Ended[0].Started.IsZero() {
			t.Errorf("the sweep reports %v ended, want the run TIMED_OUT, with its start (metrics, its span)", done.Ended)
		}
		return true
	})
	if _, own := e.status(p.RunID); own != wire.StatusTimedOut {
		t.Errorf("the workflow's own run %s, want TIMED_OUT", own)
	}
}

// The cap on the runs of one fire (--max-chain-runs) stops a node that
// would pass it: it fails, saying so, and the run fails.
func TestCap(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{})
	p, err := e.st.InsertManualRun(e.ctx, store.System, e.wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wfengine.Start(e.ctx, e.pool, "me", &p, 1); err != nil {
		t.Fatal(err)
	}
	e.endCapped(1, wire.StatusSucceeded, e.nodeRuns(p.RunID)["a"][0])
	run, err := e.st.GetWorkflowRun(e.ctx, p.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "FAILED" || len(run.Nodes) != 2 || run.Nodes[1].Status != "FAILED" || len(run.Nodes[1].Runs) != 0 {
		t.Fatalf("capped run: %+v", run)
	}
	if r := run.Nodes[1].Reason; r == "" {
		t.Error("b failed without saying why")
	}
}

// A node's timeout and retries replace its job's: its runs carry the
// timeout, and a failed run is retried as the node says (not as the job,
// which has none) before the node fails.
func TestNodeOverrides(t *testing.T) {
	t.Parallel()
	timeout, retries := int64(1500), 1
	e := setup(t, wfengine.Policy{}, func(s *wfengine.Spec) { s.Nodes[0].TimeoutMS, s.Nodes[0].MaxRetries = &timeout, &retries })
	p, st := e.start()
	ps, err := runs.LoadScheduled(e.ctx, e.pool, st.Spawned)
	if err != nil || len(ps) != 1 || ps[0].Timeout != 1500*time.Millisecond || ps[0].TriggerType != wire.TriggerWorkflow {
		t.Fatalf("a's run as the firing path reads it: %+v %v, want a 1.5s timeout and trigger type workflow", ps, err)
	}
	if got := e.end(ps[0].RunID, wire.StatusFailed); len(got) != 0 {
		t.Errorf("a's first failure advanced the run (%v): its retry is due", got)
	}
	a := e.nodeRuns(p.RunID)["a"]
	if len(a) != 2 {
		t.Fatalf("a's runs %v, want the first and its retry", a)
	}
	retry, err := runs.LoadScheduled(e.ctx, e.pool, a[1:])
	if err != nil || len(retry) != 1 || retry[0].Timeout != 1500*time.Millisecond || retry[0].Attempt != 1 {
		t.Fatalf("a's retry: %+v %v", retry, err)
	}
	if wf, _ := e.status(p.RunID); wf != "RUNNING" {
		t.Errorf("workflow run %s while a's retry is due, want RUNNING", wf)
	}
	e.end(a[1], wire.StatusFailed)
	if wf, _ := e.status(p.RunID); wf != "FAILED" {
		t.Errorf("workflow run %s after a's retries, want FAILED", wf)
	}
	run, err := e.st.GetWorkflowRun(e.ctx, p.RunID)
	if err != nil || run.Nodes[0].Runs[0].RunID != a[1] {
		t.Errorf("node a's run listed as %+v (%v), want its last retry %d", run.Nodes[0].Runs, err, a[1])
	}
}

// An end of a node's earlier attempt (a replay arriving after a retry
// from failed) changes nothing: the node waits for its current run.
func TestStaleEndOfAnEarlierAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t, wfengine.Policy{})
	p, _ := e.start()
	first := e.nodeRuns(p.RunID)["a"][0]
	e.end(first, wire.StatusFailed)
	if wf, _ := e.status(p.RunID); wf != "FAILED" {
		t.Fatalf("after a failed: %s", wf)
	}
	done, err := e.st.OperateWorkflowRun(e.ctx, store.System, p.RunID, store.WorkflowOp{Op: "retry"})
	if err != nil || len(done.Spawned) != 1 {
		t.Fatalf("retry: %+v %v, want a's second run", done, err)
	}
	var at time.Time
	if err := e.pool.QueryRow(e.ctx, `SELECT scheduled_at FROM job_runs WHERE id = $1`, first).Scan(&at); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		got, err := wfengine.Advance(e.ctx, tx, []runs.NodeEnd{{RunID: first, ScheduledAt: at, Status: wire.StatusSucceeded,
			WorkflowRun: p.RunID, Node: "a", NodeAttempt: 0}}, 0)
		if len(got.Spawned) != 0 {
			t.Errorf("a stale end of attempt 0 started %v", got.Spawned)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.st.GetWorkflowRun(e.ctx, p.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if a := run.Nodes[0]; a.Status != "RUNNING" || a.Attempt != 1 || run.Nodes[1].Status != "PENDING" || run.Status != "RUNNING" {
		t.Errorf("after a stale end: run %s, a %s at attempt %d, b %s; want RUNNING, RUNNING at 1, PENDING",
			run.Status, a.Status, a.Attempt, run.Nodes[1].Status)
	}
}
