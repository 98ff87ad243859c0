package scheduler_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// partRun is one execution of a part of a sharded fire, as its handler
// saw it.
type partRun struct {
	run                   int64
	index, total, attempt int
	worker, params        string
}

// partLog records the executions of parts, and releases them all once
// parts have started on two workers (so that the parts cannot all land on
// one worker, whatever the load).
type partLog struct {
	mu      sync.Mutex
	runs    []partRun
	workers map[string]bool
	spread  chan struct{}
}

func newPartLog() *partLog {
	return &partLog{workers: map[string]bool{}, spread: make(chan struct{})}
}

func (l *partLog) add(p partRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, p)
	l.workers[p.worker] = true
	if len(l.workers) == 2 {
		select {
		case <-l.spread:
		default:
			close(l.spread)
		}
	}
}

func (l *partLog) get() ([]partRun, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]partRun(nil), l.runs...), len(l.workers)
}

// handler is worker id's handler of the parts: part 3 fails its first
// attempt, and with params "hard" part 5 fails every attempt.
func (l *partLog) handler(id string) worker.HandlerFunc {
	return func(ctx context.Context, j *worker.Job) error {
		l.add(partRun{run: j.RunID, index: j.ShardIndex, total: j.ShardTotal, attempt: j.Attempt, worker: id, params: j.Params})
		select {
		case <-l.spread:
		case <-ctx.Done():
			return ctx.Err()
		}
		switch {
		case j.ShardIndex == 3 && j.Attempt == 0:
			return errors.New("part 3 fails once")
		case j.ShardIndex == 5 && j.Params == "hard":
			return errors.New("part 5 fails for good")
		}
		return nil
	}
}

// Issue #33's fixed shard count from end to end: a job with sharding
// total 10 runs each fire as parts 0..9 of 10 over three workers (one run
// at a time each); part 3 fails once and its retry, alone, keeps its index
// and total; the child job fires once, after the last part, at the end of
// the last part. A second fire whose part 5 fails for good triggers no
// child. The API refuses a shard count with sharding_broadcast or out of
// range.
func TestFixedShardCount(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	ctx := context.Background()
	parts := newPartLog()
	for _, id := range []string{"w1", "w2", "w3"} {
		w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect(id), Group: "g", ID: id,
			Concurrency: 1, Logger: c.log.Named(id)})
		if err != nil {
			t.Fatal(err)
		}
		w.Handle("part", parts.handler(id))
		w.Handle("after", func(ctx context.Context, j *worker.Job) error { return nil })
		runWorker(t, w)
	}

	for spec, want := range map[*apiv1.JobSpec]string{
		{Group: "g", Name: "bc", Handler: "part", ScheduleType: "none", RouteStrategy: "sharding_broadcast",
			Sharding: &apiv1.Sharding{Total: 4}}: "sharding_broadcast",
		{Group: "g", Name: "big", Handler: "part", ScheduleType: "none", Sharding: &apiv1.Sharding{Total: 1001}}: "want 2 to 1000",
	} {
		_, err := c.api.CreateJob(ctx, *spec)
		if !isAPIError(err, http.StatusBadRequest) || !strings.Contains(err.Error(), want) {
			t.Errorf("create %s: %v, want 400 saying %q", spec.Name, err, want)
		}
	}

	child := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "after", Handler: "after", ScheduleType: "none"})
	job := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "split", Handler: "part", ScheduleType: "none",
		Sharding: &apiv1.Sharding{Total: 10}, MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond),
		ChildJobIDs: []int64{child.ID}})
	if job.Sharding == nil || job.Sharding.Total != 10 {
		t.Fatalf("created job reads sharding %+v, want total 10", job.Sharding)
	}

	fire := trigger(t, c.api, job.ID, nil)
	testwait.Eventually(t, 60*time.Second, "the child run to succeed", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, child.ID) == 1
	})
	if n := c.count(`SELECT count(DISTINCT shard_index) FROM job_runs
		WHERE job_id = $1 AND shard_fire = $2 AND shard_total = 10 AND status = 'SUCCEEDED'`, job.ID, fire.ID); n != 10 {
		t.Errorf("%d parts of the fire succeeded, want 10", n)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1`, job.ID); n != 11 {
		t.Errorf("%d runs of the job, want 11 (10 parts and part 3's retry)", n)
	}
	// The child: one, triggered by the fire (its part 0), at the end of its
	// last part.
	if n := c.count(`SELECT count(*) FROM job_runs c WHERE c.job_id = $1 AND c.parent_run = $2 AND c.scheduled_at =
			(SELECT max(p.finished_at) FROM job_runs p WHERE p.shard_fire = $2 AND p.status = 'SUCCEEDED')`, child.ID, fire.ID); n != 1 {
		t.Errorf("%d child runs of fire %d at its last part's end, want 1", n, fire.ID)
	}
	got, workers := parts.get()
	ran := map[int]int{}
	for _, p := range got {
		if p.total != 10 {
			t.Errorf("part %d ran as %d of %d, want of 10", p.index, p.index, p.total)
		}
		ran[p.index]++
		if p.index == 3 && p.attempt == 1 {
			ran[-1]++ // the retry of part 3 ran, as part 3 of 10
		}
	}
	for i := range 10 {
		want := 1
		if i == 3 {
			want = 2
		}
		if ran[i] != want {
			t.Errorf("part %d ran %d times, want %d: %+v", i, ran[i], want, got)
		}
	}
	if ran[-1] != 1 {
		t.Errorf("part 3's retry ran %d times as part 3, want 1", ran[-1])
	}
	if workers < 2 {
		t.Errorf("the parts ran on %d worker(s), want more than one", workers)
	}

	// A fire whose part 5 fails for good: the others succeed, no child.
	hard := "hard"
	fire2 := trigger(t, c.api, job.ID, &hard)
	testwait.Eventually(t, 60*time.Second, "every part of the second fire to end for good", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE shard_fire = $1 AND status = 'SUCCEEDED'`, fire2.ID) == 9 &&
			c.count(`SELECT count(*) FROM job_runs WHERE shard_fire = $1 AND shard_index = 5 AND attempt = 1
				AND status = 'FAILED'`, fire2.ID) == 1
	})
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1`, child.ID); n != 1 {
		t.Errorf("%d child runs after a fire whose part failed for good, want still 1", n)
	}

	// Total 1 is "not sharded": the job reads back without sharding.
	spec := job.JobSpec
	spec.Sharding, spec.Version = &apiv1.Sharding{Total: 1}, job.Version
	upd, err := c.api.UpdateJob(ctx, job.ID, spec)
	if err != nil {
		t.Fatal(err)
	}
	if upd.Sharding != nil {
		t.Errorf("job updated to total 1 reads sharding %+v, want none", upd.Sharding)
	}
}

// A worker dies in the middle of a part of a sharded fire: its part ends
// LOST and is retried alone, as the same part, on the worker left; the
// fire completes and its child fires once.
func TestFixedShardWorkerKilledMidPart(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	const ackWait = 2 * time.Second

	started := make(chan *worker.Job, 16)
	a := c.newCrashWorker(worker.Config{AckWait: ackWait, MaxDeliver: 1, Concurrency: 1})
	a.Handle("part", func(ctx context.Context, j *worker.Job) error {
		started <- j
		a.hang() // the process "dies" while this part runs
		return nil
	})
	a.start()

	child := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "after", Handler: "after", ScheduleType: "none"})
	job := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "split", Handler: "part", ScheduleType: "none",
		Sharding: &apiv1.Sharding{Total: 4}, MaxRetries: 2, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond),
		ChildJobIDs: []int64{child.ID}})
	fire := trigger(t, c.api, job.ID, nil)
	var onA *worker.Job
	select {
	case onA = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("worker a never started a part")
	}
	a.crash()

	b, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect("worker-b"), Group: "g", ID: "b",
		AckWait: ackWait, Logger: c.log.Named("b")})
	if err != nil {
		t.Fatal(err)
	}
	b.Handle("part", func(ctx context.Context, j *worker.Job) error { return nil })
	b.Handle("after", func(ctx context.Context, j *worker.Job) error { return nil })
	runWorker(t, b)

	testwait.Eventually(t, 60*time.Second, "the child run to succeed", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, child.ID) == 1
	})
	if n := c.count(`SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'LOST'`, onA.RunID); n != 1 {
		t.Errorf("the part worker a died in (run %d) is not LOST", onA.RunID)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE retry_of = $1 AND shard_fire = $2 AND shard_index = $3
			AND shard_total = 4 AND status = 'SUCCEEDED' AND worker_id = 'b'`, onA.RunID, fire.ID, onA.ShardIndex); n != 1 {
		t.Errorf("no retry of the lost part %d succeeded on worker b as part %d of 4", onA.RunID, onA.ShardIndex)
	}
	if n := c.count(`SELECT count(DISTINCT shard_index) FROM job_runs WHERE shard_fire = $1 AND status = 'SUCCEEDED'`, fire.ID); n != 4 {
		t.Errorf("%d parts of the fire succeeded, want 4", n)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1`, child.ID); n != 1 {
		t.Errorf("%d child runs, want 1", n)
	}
}

// A workflow node whose job has a fixed shard count is done when all its
// parts are: the node after it starts once, after the last part, with
// part 0's output; a part failing once is retried alone meanwhile.
func TestFixedShardWorkflowNode(t *testing.T) {
	t.Parallel()
	var (
		mu        sync.Mutex
		doneParts = map[int]bool{}
		afterSaw  []int
	)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("wf-part", func(_ context.Context, j *worker.Job) error {
			if j.ShardIndex == 2 && j.Attempt == 0 {
				return errors.New("part 2 fails once")
			}
			mu.Lock()
			doneParts[j.ShardIndex] = j.ShardTotal == 4
			mu.Unlock()
			return j.SetOutput(map[string]any{"part": j.ShardIndex})
		})
		w.Handle("wf-after", func(_ context.Context, j *worker.Job) error {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, ok := range doneParts {
				if ok {
					n++
				}
			}
			afterSaw = append(afterSaw, n)
			return nil
		})
	})
	split := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "split", Handler: "wf-part", ScheduleType: "none",
		Sharding: &apiv1.Sharding{Total: 4}, MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond)})
	after := wfJob(t, sys, "after", "wf-after")
	wf := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "sharded", Nodes: []apiv1.WorkflowNode{
		{Name: "split", JobID: split.ID},
		{Name: "after", JobID: after, Params: str(`{{ .nodes.split.output.part }}`)},
	}, Edges: []apiv1.WorkflowEdge{{From: "split", To: "after"}}})
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	mu.Lock()
	defer mu.Unlock()
	if len(afterSaw) != 1 || afterSaw[0] != 4 {
		t.Errorf("node after ran %d times seeing %v parts done, want once after all 4", len(afterSaw), afterSaw)
	}
	if n := wfNode(done, "split"); n.Status != "SUCCEEDED" {
		t.Errorf("node split: %s (%s), want SUCCEEDED", n.Status, n.Reason)
	}
	var params string
	if err := sys.pool.QueryRow(t.Context(), `SELECT COALESCE(r.params, '') FROM job_runs r WHERE r.job_id = $1`, after).Scan(&params); err != nil {
		t.Fatal(err)
	}
	if params != "0" {
		t.Errorf("node after's params %q, want part 0's output (0)", params)
	}

	// An inline node takes a shard count too: stored on its job row and
	// answered back.
	inline := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "inline-sharded", Nodes: []apiv1.WorkflowNode{
		{Name: "split", Inline: &apiv1.InlineJob{Handler: "wf-part", Sharding: &apiv1.Sharding{Total: 3}}},
	}})
	if in := inline.Nodes[0].Inline; in == nil || in.Sharding == nil || in.Sharding.Total != 3 {
		t.Errorf("inline node reads %+v, want sharding total 3", in)
	}
	var shards int
	if err := sys.pool.QueryRow(t.Context(), `SELECT fixed_shards FROM jobs WHERE owner_workflow = $1`, inline.ID).Scan(&shards); err != nil || shards != 3 {
		t.Errorf("inline node's job row: %d shards (%v), want 3", shards, err)
	}
}
