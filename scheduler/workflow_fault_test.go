package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/worker"
)

// The fault tests of workflows (docs/workflows.md, issue #29): a scheduler
// killed between two nodes and while a node's end is being applied, a
// worker killed mid-node, PostgreSQL restarted while an end is being
// applied. Each runs several runs of the diamond A → (B, C) → D at once,
// D's params rendered from A's output, and ends with one audit
// (wfFault.audit): every workflow run ended, each node run's key has one
// job run per attempt, no run reached a handler twice, and D got its own
// run's A's output.

// wfFaultRuns is how many runs of the diamond each fault test runs at once.
const wfFaultRuns = 4

// wfFaultSettle bounds how long the audit waits for every workflow run to
// end: generous, for a loaded machine; the scenario itself waits for a
// lease to expire (2 s) and a redelivery (the results ack wait, below).
const wfFaultSettle = 3 * time.Minute

// wfFaultAckWait is the schedulers' results ack wait: an events message a
// killed scheduler had taken is redelivered after it (30 s by default).
const wfFaultAckWait = 3 * time.Second

// wfFaultNodes are the diamond's nodes; node n runs job n, of handler
// "wf-"+n.
var wfFaultNodes = []string{"a", "b", "c", "d"}

// wfFault is a fault test's diamond and what its handlers saw.
type wfFault struct {
	c  *cluster
	wf *apiv1.Workflow

	mu sync.Mutex
	// execs counts handler executions by run id. A run id is one job
	// attempt of one node run (workflow run, node, node attempt, item):
	// the audit maps each to its key.
	execs map[int64]int
	// dParams are D's params as its handler got them, by run id.
	dParams map[int64]string
	// gates hold the handlers of a node until closed (release); started
	// receives the run id of each execution that waits at a gate.
	gates   map[string]chan struct{}
	started chan int64
}

func newWFFault(t *testing.T) *wfFault {
	t.Helper()
	c := newCluster(t)
	return &wfFault{c: c, execs: map[int64]int{}, dParams: map[int64]string{}, gates: map[string]chan struct{}{},
		started: make(chan int64, 4*wfFaultRuns)}
}

// startScheduler starts one more scheduler with the tests' results ack
// wait and makes the test's API client talk to it.
// opts adjust its config besides.
func (f *wfFault) startScheduler(opts ...func(*scheduler.Config)) int {
	i := f.c.startScheduler(4, append(opts, func(cfg *scheduler.Config) { cfg.Results.AckWait = wfFaultAckWait })...)
	api, err := client.New(f.c.nodes[i].url, testToken)
	if err != nil {
		f.c.t.Fatal(err)
	}
	f.c.api = api
	testwait.Eventually(f.c.t, 20*time.Second, "the new scheduler's API", func() bool {
		_, err := api.ListGroups(context.Background())
		return err == nil
	})
	return i
}

// kill9 stops scheduler i as kill -9 would: its NATS connection goes first
// (nothing more is published, acked or handed back), then it stops without
// releasing its leases or committing what it was writing.
func (f *wfFault) kill9(i int) {
	n := f.c.nodes[i]
	n.nc.Close()
	n.s.Crash()
	select {
	case err := <-n.done:
		// Cut off NATS, it may have failed before the crash stopped it.
		f.c.t.Logf("killed scheduler %d stopped: %v", i, err)
		n.done <- nil // the cluster's cleanup waits again
	case <-time.After(60 * time.Second):
		f.c.t.Fatal("the killed scheduler did not stop within 60s")
	}
}

// hold makes node's handlers wait until release(node).
func (f *wfFault) hold(node string) {
	f.mu.Lock()
	f.gates[node] = make(chan struct{})
	f.mu.Unlock()
}

// release lets node's held handlers go on; later runs of node are not
// held.
func (f *wfFault) release(node string) {
	f.mu.Lock()
	close(f.gates[node])
	delete(f.gates, node)
	f.mu.Unlock()
}

// waitHeld waits until n executions wait at a gate.
func (f *wfFault) waitHeld(n int, what string) {
	f.c.t.Helper()
	for range n {
		select {
		case <-f.started:
		case <-time.After(60 * time.Second):
			f.c.t.Fatalf("timed out after 60s waiting for %s", what)
		}
	}
}

// register adds the diamond's handlers to w. hang, if set, replaces the
// gates: a held node's handler calls it (a crashWorker's hang: it returns
// only when the test ends).
func (f *wfFault) register(w *worker.Worker, hang func()) {
	for _, n := range wfFaultNodes {
		w.Handle("wf-"+n, func(ctx context.Context, j *worker.Job) error {
			f.mu.Lock()
			f.execs[j.RunID]++
			if n == "d" {
				f.dParams[j.RunID] = j.Params
			}
			gate := f.gates[n]
			f.mu.Unlock()
			if gate != nil {
				f.started <- j.RunID
				if hang != nil {
					hang()
				} else {
					<-gate
				}
			}
			if n == "a" {
				return j.SetOutput(map[string]any{"from": j.RunID, "rows": 42})
			}
			return nil
		})
	}
}

// startWorker starts a worker of group with the diamond's handlers.
func (f *wfFault) startWorker(name, group string) {
	t := f.c.t
	w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: f.c.connect(name), Group: group, ID: name,
		Concurrency: 32, AckWait: 2 * time.Second, Logger: f.c.log.Named(name)})
	if err != nil {
		t.Fatal(err)
	}
	f.register(w, nil)
	runWorker(t, w)
}

// createDiamond creates the diamond's jobs and the workflow (overlap
// concurrent: its runs run side by side). Each job retries once, at once:
// a run lost with a killed worker runs again as the job's next attempt.
// The jobs of B and C are of group bc (created if not g), the others of g.
func (f *wfFault) createDiamond(bc string) {
	t := f.c.t
	if bc != "g" {
		if _, err := f.c.api.CreateGroup(t.Context(), apiv1.Group{Name: bc}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range wfFaultNodes {
		g := "g"
		if n == "b" || n == "c" {
			g = bc
		}
		createJob(t, f.c.api, apiv1.JobSpec{Group: g, Name: n, Handler: "wf-" + n, ScheduleType: "none",
			BlockStrategy: "concurrent", MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond)})
	}
	wf, err := f.c.api.CreateWorkflow(t.Context(), apiv1.WorkflowSpec{Group: "g", Name: "diamond", ScheduleType: "none",
		Overlap: "concurrent", Nodes: []apiv1.WorkflowNode{
			{Name: "a", Job: "g/a"}, {Name: "b", Job: bc + "/b"}, {Name: "c", Job: bc + "/c"},
			{Name: "d", Job: "g/d", Params: str(`{"a_run": {{ .nodes.a.output.from }}, "rows": {{ .nodes.a.output.rows }}}`)},
		}, Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}, {From: "a", To: "c"}, {From: "b", To: "d"}, {From: "c", To: "d"}}})
	if err != nil {
		t.Fatal(err)
	}
	f.wf = wf
}

// trigger starts wfFaultRuns runs of the diamond and returns their ids.
func (f *wfFault) trigger() []int64 {
	t := f.c.t
	var ids []int64
	for range wfFaultRuns {
		r, err := f.c.api.TriggerWorkflow(t.Context(), f.wf.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// lockWorkflow takes the lock every writer of the workflow's runs takes
// first (its workflows row, package wfengine), in a transaction of the
// test's own: the results applier's transaction recording a node's end
// then waits inside, between recording the end and advancing its run.
// The caller ends tx to let it go on.
func (f *wfFault) lockWorkflow() pgx.Tx {
	t := f.c.t
	tx, err := f.c.direct.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `SELECT 1 FROM workflows WHERE job_id = $1 FOR UPDATE`, f.wf.ID); err != nil {
		t.Fatal(err)
	}
	return tx
}

// applyingA starts a scheduler (its index is returned) and a worker of g
// on the diamond, triggers its runs and lets every A end while the test
// holds the workflow's lock (lockWorkflow). It returns once the results
// applier waits for that lock, between recording an A's end and advancing
// its run; the caller ends lock to let it go on.
func (f *wfFault) applyingA() (s0 int, runs []int64, lock pgx.Tx) {
	s0 = f.startScheduler()
	f.startWorker("w1", "g")
	f.createDiamond("g")
	f.hold("a")
	runs = f.trigger()
	f.waitHeld(wfFaultRuns, "every run's A to start")
	lock = f.lockWorkflow()
	f.release("a")
	f.waitApplyBlocked()
	return s0, runs, lock
}

// waitApplyBlocked waits until a transaction waits for the workflow's lock
// in wfengine's lockRuns: an applier is applying a node's end.
func (f *wfFault) waitApplyBlocked() {
	testwait.Eventually(f.c.t, 60*time.Second, "the results applier to wait for the workflow's lock", func() bool {
		var n int
		err := f.c.direct.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM workflows w%'`).Scan(&n)
		return err == nil && n > 0
	})
}

// nodeRuns counts the node runs of runs named node with one of statuses
// (any when none).
func (f *wfFault) nodeRuns(runs []int64, node string, statuses ...string) int {
	q := `SELECT count(*) FROM job_runs WHERE workflow_run = ANY($1) AND node = $2`
	args := []any{runs, node}
	if len(statuses) > 0 {
		q += ` AND status = ANY($3)`
		args = append(args, statuses)
	}
	return f.c.count(q, args...)
}

// nodeJobRun is one job run of a node run, as the audit reads it.
type nodeJobRun struct {
	id          int64
	wr          int64
	node        string
	nodeAttempt int
	item        int
	attempt     int
	status      string
	worker      string
}

func (r nodeJobRun) String() string {
	return fmt.Sprintf("run %d (workflow run %d, node %s, node attempt %d, item %d, attempt %d): %s on %q",
		r.id, r.wr, r.node, r.nodeAttempt, r.item, r.attempt, r.status, r.worker)
}

// audit waits until every run of the diamond has ended, then checks the
// invariants of the fault tests:
//
//   - every workflow run, and the workflow's own run of it, ended want;
//     runs lists them all;
//   - each node run's key (workflow run, node, node attempt, item) is
//     written once in workflow_node_runs and names one of its job runs, and
//     has exactly one job run per job attempt: nothing was created twice;
//   - every node of every run has node attempt 0 only (nothing ran again
//     as the node's next attempt), its last job run SUCCEEDED and the ones
//     before it (retries: only where retried says they may be) LOST or
//     FAILED;
//   - no job run reached a handler more than once, and each SUCCEEDED one
//     exactly once: no (node, attempt) ran twice;
//   - D's handler got A's output of its own workflow run.
func (f *wfFault) audit(runs []int64, want string, retried bool) {
	t := f.c.t
	t.Helper()
	ctx := context.Background()
	if !testwait.Poll(wfFaultSettle, func() bool {
		var open int
		err := f.c.direct.QueryRow(ctx, `SELECT (SELECT count(*) FROM workflow_runs WHERE workflow_id = $1 AND status IN ('QUEUED', 'RUNNING'))
			+ (SELECT count(*) FROM job_runs WHERE (workflow_run = ANY($2) OR id = ANY($2)) AND status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING'))`,
			f.wf.ID, runs).Scan(&open)
		return err == nil && open == 0
	}) {
		for _, id := range runs {
			if r, err := f.c.api.GetWorkflowRun(ctx, id); err == nil {
				t.Logf("workflow run %d: %s; nodes: %s", id, r.Status, describeNodes(r))
			}
		}
		t.Fatalf("the workflow runs did not all end within %s", wfFaultSettle)
	}

	// Every workflow run ended want, and its own run with it.
	rows, _ := f.c.direct.Query(ctx, `SELECT w.id, w.status, r.status FROM workflow_runs w
		JOIN job_runs r ON r.id = w.id AND r.scheduled_at = w.scheduled_at WHERE w.workflow_id = $1 ORDER BY w.id`, f.wf.ID)
	var ended []int64
	var id int64
	var wStatus, rStatus string
	if _, err := pgx.ForEachRow(rows, []any{&id, &wStatus, &rStatus}, func() error {
		ended = append(ended, id)
		if wStatus != want || rStatus != want {
			t.Errorf("workflow run %d ended %s, its own run %s; want both %s", id, wStatus, rStatus, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ended) != fmt.Sprint(runs) {
		t.Errorf("the workflow's runs are %v, want the %v triggered", ended, runs)
	}

	// Keys: one per node run, naming one of its job runs; every job run's
	// key written.
	if n := f.c.count(`SELECT count(*) FROM workflow_node_runs k WHERE k.workflow_run = ANY($1) AND NOT EXISTS
		(SELECT 1 FROM job_runs r WHERE r.id = k.run_id AND r.scheduled_at = k.scheduled_at AND r.workflow_run = k.workflow_run
			AND r.node = k.node AND r.node_attempt = k.node_attempt AND r.item = k.item)`, runs); n != 0 {
		t.Errorf("%d node run keys name no job run of theirs", n)
	}
	if n := f.c.count(`SELECT count(*) FROM (SELECT DISTINCT workflow_run, node, node_attempt, item FROM job_runs
		WHERE workflow_run = ANY($1)) r WHERE NOT EXISTS (SELECT 1 FROM workflow_node_runs k WHERE k.workflow_run = r.workflow_run
			AND k.node = r.node AND k.node_attempt = r.node_attempt AND k.item = r.item)`, runs); n != 0 {
		t.Errorf("%d node runs have job runs but no key", n)
	}

	// The job runs, by key and attempt.
	rows, _ = f.c.direct.Query(ctx, `SELECT id, workflow_run, node, node_attempt, item, attempt, status, COALESCE(worker_id, '')
		FROM job_runs WHERE workflow_run = ANY($1) ORDER BY workflow_run, node, node_attempt, item, attempt, id`, runs)
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (nodeJobRun, error) {
		var j nodeJobRun
		return j, r.Scan(&j.id, &j.wr, &j.node, &j.nodeAttempt, &j.item, &j.attempt, &j.status, &j.worker)
	})
	if err != nil {
		t.Fatal(err)
	}
	type nodeKey struct {
		wr   int64
		node string
	}
	byNode := map[nodeKey][]nodeJobRun{}
	byID := map[int64]nodeJobRun{}
	for _, r := range all {
		k := nodeKey{r.wr, r.node}
		byNode[k] = append(byNode[k], r)
		byID[r.id] = r
	}
	aRun := map[int64]int64{} // workflow run → A's succeeded job run
	for _, wr := range runs {
		for _, n := range wfFaultNodes {
			jrs := byNode[nodeKey{wr, n}]
			if len(jrs) == 0 {
				t.Errorf("workflow run %d: node %s never ran", wr, n)
				continue
			}
			for i, r := range jrs {
				switch {
				case r.nodeAttempt != 0 || r.item != 0:
					t.Errorf("%s: want node attempt 0, item 0 only", r)
				case r.attempt != i:
					t.Errorf("%s: job attempt %d twice, or one skipped (runs %v)", r, r.attempt, jrs)
				case i == len(jrs)-1 && r.status != "SUCCEEDED":
					t.Errorf("%s: the node's last run did not succeed", r)
				case i < len(jrs)-1 && (!retried || (r.status != "LOST" && r.status != "FAILED")):
					t.Errorf("%s was retried (retries expected: %t)", r, retried)
				}
			}
			if last := jrs[len(jrs)-1]; n == "a" && last.status == "SUCCEEDED" {
				aRun[wr] = last.id
			}
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	for id, n := range f.execs {
		r, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("a handler ran run %d, not a node run of the audited workflow runs", id)
		case n > 1:
			t.Errorf("%s reached a handler %d times", r, n)
		}
	}
	for _, r := range all {
		if r.status == "SUCCEEDED" && f.execs[r.id] != 1 {
			t.Errorf("%s: %d handler executions, want 1", r, f.execs[r.id])
		}
	}

	// D got its own run's A's output.
	for _, r := range all {
		if r.node != "d" || r.status != "SUCCEEDED" {
			continue
		}
		var got struct {
			ARun int64 `json:"a_run"`
			Rows int   `json:"rows"`
		}
		if err := json.Unmarshal([]byte(f.dParams[r.id]), &got); err != nil || got.ARun != aRun[r.wr] || got.Rows != 42 {
			t.Errorf("%s got params %q (%v), want A's output of its workflow run: a_run %d, rows 42", r, f.dParams[r.id], err, aRun[r.wr])
		}
	}
	t.Logf("audit: %d workflow runs %s, %d node job runs, %d handler executions", len(runs), want, len(all), len(f.execs))
}

// A scheduler holding the workflow's shards (and applying results) is
// killed between two nodes: A's end is recorded and B's and C's runs are
// created, in the results applier's transaction, but not yet published.
// The next scheduler fires them (recovering the dead one's shards) and
// applies A's end again (its message was never acked) as a no-op: every
// workflow run succeeds, nothing runs twice.
func TestWorkflowSchedulerKilledBetweenNodes(t *testing.T) {
	f := newWFFault(t)
	// A's ends are applied while the test holds the workflow's lock: the
	// applier waits inside its transaction. The scheduler is cut off NATS
	// meanwhile, so that what the transaction creates cannot be published
	// before it is killed; then the lock goes and the transaction commits.
	s0, runs, lock := f.applyingA()
	f.c.nodes[s0].nc.Close()
	if err := lock.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "an A's end to be recorded with B's and C's runs", func() bool {
		return f.nodeRuns(runs, "b") > 0
	})
	f.kill9(s0)
	created, scheduled := f.nodeRuns(runs, "b")+f.nodeRuns(runs, "c"), f.nodeRuns(runs, "b", "SCHEDULED")+f.nodeRuns(runs, "c", "SCHEDULED")
	t.Logf("killed with %d of B's and C's runs created, %d of them not published", created, scheduled)
	if scheduled != created || created < 2 {
		t.Fatalf("at the kill %d runs of B and C existed and %d were SCHEDULED; want at least 2, none published", created, scheduled)
	}

	f.startScheduler()
	f.audit(runs, "SUCCEEDED", false)
}

// A scheduler is killed between two nodes, later than above: B's and C's
// triggers are published (to a group with no worker yet) but their runs
// still read SCHEDULED, as they do until dispatch's deferred TRIGGERED
// write (held back here for a minute). The next scheduler recovers them and
// publishes them again under the same message ids, which the stream drops:
// when a worker of their group comes, each runs once.
func TestWorkflowSchedulerKilledAfterPublishingNodes(t *testing.T) {
	f := newWFFault(t)
	s0 := f.startScheduler(func(cfg *scheduler.Config) { cfg.Dispatch.TriggeredDelay = time.Minute })
	f.startWorker("w1", "g")
	f.createDiamond("g2")
	runs := f.trigger()
	nc := f.c.connect("test")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "B's and C's triggers to be published", func() bool {
		return streamMsgs(t, js, stream.Triggers, "jetjob.trigger.g2.>") == 2*wfFaultRuns
	})
	f.kill9(s0)
	if n := f.nodeRuns(runs, "b", "SCHEDULED") + f.nodeRuns(runs, "c", "SCHEDULED"); n != 2*wfFaultRuns {
		t.Fatalf("at the kill %d runs of B and C read SCHEDULED, want all %d (TRIGGERED not written yet)", n, 2*wfFaultRuns)
	}

	f.startScheduler()
	// The new owner recovers them and publishes them again; its TRIGGERED
	// write, after the ack, says it did. The stream kept one trigger each.
	testwait.Eventually(t, 60*time.Second, "B's and C's runs to be recorded TRIGGERED by the new scheduler", func() bool {
		return f.nodeRuns(runs, "b", "TRIGGERED")+f.nodeRuns(runs, "c", "TRIGGERED") == 2*wfFaultRuns
	})
	if n := streamMsgs(t, js, stream.Triggers, "jetjob.trigger.g2.>"); n != 2*wfFaultRuns {
		t.Errorf("%d triggers of B and C stored, want %d: a trigger published again was stored twice", n, 2*wfFaultRuns)
	}
	f.startWorker("w2", "g2")
	f.audit(runs, "SUCCEEDED", false)
}

// A scheduler is killed while a node's end is being applied: its
// transaction records A's end and waits (for the workflow's lock) before
// advancing the run; the kill rolls it back, so neither A's end nor B's
// and C's runs exist. The next scheduler applies A's end, redelivered
// after the ack wait, and the runs go on.
func TestWorkflowSchedulerKilledWhileApplyingEnd(t *testing.T) {
	f := newWFFault(t)
	s0, runs, lock := f.applyingA()
	f.kill9(s0)
	if err := lock.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a, bc := f.nodeRuns(runs, "a", "SUCCEEDED"), f.nodeRuns(runs, "b")+f.nodeRuns(runs, "c"); a != 0 || bc != 0 {
		t.Fatalf("after the kill %d of A's ends are recorded and %d runs of B and C exist; want none: the transaction was cut", a, bc)
	}

	f.startScheduler()
	f.audit(runs, "SUCCEEDED", false)
}

// A worker is killed (its connection cut, nothing reported) while every
// run's B is inside its handler there, and C has ended. Each B ends LOST
// once its trigger is redelivered, its job's retry runs on the other
// worker, and D follows with A's output: every workflow run succeeds, and
// no attempt of B ran twice.
func TestWorkflowWorkerKilledMidNode(t *testing.T) {
	f := newWFFault(t)
	f.startScheduler()
	a := f.c.newCrashWorker(worker.Config{AckWait: 2 * time.Second, AbandonGrace: 100 * time.Millisecond, Concurrency: 32})
	f.register(a.Worker, a.hang)
	a.start()
	f.createDiamond("g")
	f.hold("b")
	runs := f.trigger()
	f.waitHeld(wfFaultRuns, "every run's B to start on worker a")
	testwait.Eventually(t, 60*time.Second, "every run's C to succeed", func() bool {
		return f.nodeRuns(runs, "c", "SUCCEEDED") == wfFaultRuns
	})
	a.crash()
	f.release("b") // worker b's B runs through
	f.startWorker("b", "g")

	f.audit(runs, "SUCCEEDED", true)
	lost := f.c.count(`SELECT count(*) FROM job_runs WHERE workflow_run = ANY($1) AND node = 'b' AND attempt = 0
		AND status = 'LOST' AND worker_id = 'a'`, runs)
	if lost != wfFaultRuns {
		t.Errorf("%d of B's first runs ended LOST on worker a, want every one (%d)", lost, wfFaultRuns)
	}
	if d := f.nodeRuns(runs, "d", "SUCCEEDED"); d != wfFaultRuns {
		t.Errorf("%d runs of D succeeded, want %d", d, wfFaultRuns)
	}
}

// PostgreSQL is restarted while the results applier is applying A's ends
// (its transaction waits for the workflow's lock): the restart cuts the
// transaction, the applier retries once PostgreSQL is back, and the runs
// go on. Every workflow run succeeds, nothing runs twice.
func TestWorkflowPostgresRestart(t *testing.T) {
	f := newWFFault(t)
	_, runs, lock := f.applyingA()
	pg := pgtest.Server(t)
	ctx := context.Background()
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = lock.Rollback(ctx) // its connection is gone with the server
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.c.direct.Reset() // the test's connections died with the server
	testwait.Eventually(t, 60*time.Second, "/readyz to answer 200 again", func() bool { return f.c.ready(0) })

	f.audit(runs, "SUCCEEDED", false)
}
