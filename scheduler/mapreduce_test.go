package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// mrItems is how many items the map/reduce tests map.
const mrItems = 1000

// mrPart is the output of part i: its item and its index.
type mrPart struct {
	Item  int `json:"item"`
	Index int `json:"index"`
}

// mrLog records a map/reduce job's executions as its handlers saw them:
// the starts of every (part index, attempt), and every reduce call.
type mrLog struct {
	mu      sync.Mutex
	starts  map[[2]int]int // (index, attempt) -> executions started
	reduces [][]json.RawMessage
}

func newMRLog() *mrLog { return &mrLog{starts: map[[2]int]int{}} }

// handler is the job's handler: the root maps mrItems
// integers (item i is 10*i); part 7 fails its first attempt, and with
// params "hard" part 5 fails every attempt.
func (l *mrLog) handler() worker.HandlerFunc {
	return func(ctx context.Context, j *worker.Job) error {
		if !j.IsMapPart() {
			items := make([]int, mrItems)
			for i := range items {
				items[i] = 10 * i
			}
			return j.Map(items)
		}
		var item int
		if err := j.Item(&item); err != nil {
			return err
		}
		l.mu.Lock()
		l.starts[[2]int{j.ShardIndex, j.Attempt}]++
		l.mu.Unlock()
		switch {
		case j.ShardIndex == 7 && j.Attempt == 0:
			return errors.New("part 7 fails once")
		case j.ShardIndex == 5 && j.Params == "hard":
			return errors.New("part 5 fails for good")
		}
		return j.SetOutput(mrPart{Item: item, Index: j.ShardIndex})
	}
}

// reduce records the outputs it is given and outputs their count.
func (l *mrLog) reduce() worker.ReduceFunc {
	return func(ctx context.Context, j *worker.Job, outputs []json.RawMessage) error {
		l.mu.Lock()
		l.reduces = append(l.reduces, outputs)
		l.mu.Unlock()
		return j.SetOutput(len(outputs))
	}
}

// check asserts that the reduce ran once with every part's output in
// index order, and that no (part, attempt) started twice.
func (l *mrLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range l.starts {
		if n > 1 {
			t.Errorf("part %d attempt %d started %d times, want at most once", k[0], k[1], n)
		}
	}
	if len(l.reduces) != 1 {
		t.Fatalf("reduce called %d times, want once", len(l.reduces))
	}
	outs := l.reduces[0]
	if len(outs) != mrItems {
		t.Fatalf("reduce got %d outputs, want %d", len(outs), mrItems)
	}
	for i, o := range outs {
		var p mrPart
		if err := json.Unmarshal(o, &p); err != nil || p.Index != i || p.Item != 10*i {
			t.Fatalf("output %d is %s (%v), want part %d of item %d", i, o, err, i, 10*i)
		}
	}
}

// mrJob creates the map/reduce job (handler "mr", one retry) with child
// job "after" and returns both.
func mrJob(t *testing.T, c *cluster, maxRetries int) (job, child *apiv1.Job) {
	t.Helper()
	child = createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "after", Handler: "after", ScheduleType: "none"})
	job = createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "mr", Handler: "mr", ScheduleType: "none",
		MaxRetries: maxRetries, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond),
		ChildJobIDs: []int64{child.ID}})
	return job, child
}

// checkFire asserts what the tables say of a fire that completed: its
// parts all succeeded as parts i of mrItems, one reduce run succeeded,
// the child fired once, after the reduce, as its child.
func checkFire(t *testing.T, c *cluster, fire, childJob int64) {
	t.Helper()
	if n := c.count(`SELECT count(DISTINCT shard_index) FROM job_runs WHERE shard_fire = $1 AND shard_total = $2
		AND status = 'SUCCEEDED' AND map_item IS NOT NULL`, fire, mrItems); n != mrItems {
		t.Errorf("%d parts of fire %d succeeded, want %d", n, fire, mrItems)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE id = $1 AND shard_fire = id AND shard_total = 0
		AND map_reduce = id AND status = 'SUCCEEDED'`, fire); n != 1 {
		t.Errorf("fire %d's root does not read as a map root that asked for a reduce", fire)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE map_reduce = $1 AND id <> $1 AND trigger_type = 'reduce'
		AND parent_run = $1 AND attempt = 0`, fire); n != 1 {
		t.Errorf("%d reduce runs of fire %d, want 1", n, fire)
	}
	if n := c.count(`SELECT count(*) FROM job_runs c JOIN job_runs r ON c.parent_run = r.id
		WHERE c.job_id = $1 AND r.map_reduce = $2 AND r.id <> $2 AND r.status = 'SUCCEEDED' AND c.scheduled_at = r.finished_at`,
		childJob, fire); n != 1 {
		t.Errorf("%d child runs of fire %d's reduce at its end, want 1", n, fire)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1`, childJob); n != 1 {
		t.Errorf("%d child runs, want 1", n)
	}
}

// Issue #33's map/reduce from end to end: a run maps 1,000 items; each is
// a part of its own on three workers; part 7 fails once and is retried
// alone; the reduce is called once, with the 1,000 outputs in index
// order; the child job fires once, after the reduce. A second fire whose
// part 5 fails for good gets no reduce and no child. A handler without a
// reduce has its job's child fire once, after the last part.
func TestMapReduce(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	l, noReduce := newMRLog(), newMRLog()
	for _, id := range []string{"w1", "w2", "w3"} {
		w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect(id), Group: "g", ID: id,
			Concurrency: 16, Logger: c.log.Named(id)})
		if err != nil {
			t.Fatal(err)
		}
		w.Handle("mr", l.handler(), worker.WithReduce(l.reduce()))
		w.Handle("maponly", noReduce.handler())
		w.Handle("after", func(ctx context.Context, j *worker.Job) error { return nil })
		runWorker(t, w)
	}
	job, child := mrJob(t, c, 1)

	// Without a reduce, the child fires once after the last part, as a
	// child of the run that mapped, at the last part's end.
	only := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "maponly", Handler: "maponly", ScheduleType: "none",
		MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond), ChildJobIDs: []int64{child.ID}})
	onlyFire := trigger(t, c.api, only.ID, nil)
	testwait.Eventually(t, 120*time.Second, "the child run of the fire without a reduce to succeed", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, child.ID) == 1
	})
	if n := c.count(`SELECT count(*) FROM job_runs c WHERE c.job_id = $1 AND c.parent_run = $2 AND c.scheduled_at =
			(SELECT max(p.finished_at) FROM job_runs p WHERE p.shard_fire = $2 AND p.status = 'SUCCEEDED')`, child.ID, onlyFire.ID); n != 1 {
		t.Errorf("%d child runs of the fire without a reduce at its last part's end, want 1", n)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE map_reduce IS NOT NULL AND job_id = $1`, only.ID); n != 0 {
		t.Errorf("%d runs of the job without a reduce read as asking for one", n)
	}
	if n := c.count(`SELECT count(DISTINCT shard_index) FROM job_runs WHERE shard_fire = $1 AND shard_total = $2 AND status = 'SUCCEEDED'`,
		onlyFire.ID, mrItems); n != mrItems {
		t.Errorf("%d parts of the fire without a reduce succeeded, want %d", n, mrItems)
	}
	if _, err := c.direct.Exec(t.Context(), `DELETE FROM job_runs WHERE job_id = $1`, child.ID); err != nil {
		t.Fatal(err)
	}

	fire := trigger(t, c.api, job.ID, nil)
	testwait.Eventually(t, 120*time.Second, "the child run to succeed", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, child.ID) == 1
	})
	l.check(t)
	checkFire(t, c, fire.ID, child.ID)
	if n := c.count(`SELECT count(*) FROM job_runs WHERE shard_fire = $1 AND shard_index = 7 AND trigger_type = 'retry'
		AND attempt = 1 AND status = 'SUCCEEDED' AND map_item = '70'`, fire.ID); n != 1 {
		t.Errorf("part 7's retry did not succeed alone with its item")
	}
	var out string
	if err := c.direct.QueryRow(t.Context(), `SELECT output FROM job_runs WHERE map_reduce = $1 AND id <> $1`, fire.ID).Scan(&out); err != nil || out != fmt.Sprint(mrItems) {
		t.Errorf("the reduce run's output %q (%v), want %d", out, err, mrItems)
	}

	// The parts' outputs are given to a reduce run of the group that has
	// not ended only.
	nc := c.connect("intruder")
	var reduceRun, part int64
	var reduceAt, partAt time.Time
	if err := c.direct.QueryRow(t.Context(), `SELECT id, scheduled_at FROM job_runs WHERE map_reduce = $1 AND id <> $1`, fire.ID).Scan(&reduceRun, &reduceAt); err != nil {
		t.Fatal(err)
	}
	if err := c.direct.QueryRow(t.Context(), `SELECT id, scheduled_at FROM job_runs WHERE shard_fire = $1 AND shard_index = 0`, fire.ID).Scan(&part, &partAt); err != nil {
		t.Fatal(err)
	}
	for what, req := range map[string]wire.MapOutputsRequest{
		"the ended reduce run": {RunID: reduceRun, ScheduledAt: reduceAt, WorkerID: "w1"},
		"a part":               {RunID: part, ScheduledAt: partAt, WorkerID: "w1"},
	} {
		data, err := wire.EncodeControl(&req)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := nc.Request(stream.MapOutputsSubject("g"), data, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply wire.MapOutputsReply
		if err := wire.DecodeControl(msg.Data, &reply); err != nil || !strings.HasPrefix(reply.Error, "refused") || len(reply.Outputs) > 0 {
			t.Errorf("outputs asked for %s: %+v (%v), want refused", what, reply, err)
		}
	}

	// The API links the fire's runs: the root, a part and the reduce run
	// each name the root as their map_fire; a run of no map names none.
	for _, id := range []int64{fire.ID, part, reduceRun} {
		r, err := c.api.GetRun(t.Context(), id)
		if err != nil || r.MapFire == nil || *r.MapFire != fire.ID {
			t.Errorf("run %d reads map_fire %v (%v), want %d", id, r.MapFire, err, fire.ID)
		}
	}
	var childRun int64
	if err := c.direct.QueryRow(t.Context(), `SELECT id FROM job_runs WHERE job_id = $1`, child.ID).Scan(&childRun); err != nil {
		t.Fatal(err)
	}
	if r, err := c.api.GetRun(t.Context(), childRun); err != nil || r.MapFire != nil {
		t.Errorf("the child run reads map_fire %v (%v), want none", r.MapFire, err)
	}

	// A fire whose part 5 fails for good: the fire fails, no reduce, no
	// child.
	hard := "hard"
	fire2 := trigger(t, c.api, job.ID, &hard)
	testwait.Eventually(t, 120*time.Second, "every part of the second fire to end for good", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE shard_fire = $1 AND shard_total > 0 AND status = 'SUCCEEDED'`, fire2.ID) == mrItems-1 &&
			c.count(`SELECT count(*) FROM job_runs WHERE shard_fire = $1 AND shard_index = 5 AND attempt = 1
				AND status = 'FAILED'`, fire2.ID) == 1
	})
	if n := c.count(`SELECT count(*) FROM job_runs WHERE map_reduce = $1 AND id <> $1`, fire2.ID); n != 0 {
		t.Errorf("%d reduce runs of a fire whose part failed for good, want none", n)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1`, child.ID); n != 1 {
		t.Errorf("%d child runs after a fire whose part failed for good, want still 1", n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.reduces) != 1 {
		t.Errorf("reduce called %d times, want still once", len(l.reduces))
	}
}

// Map/reduce through crashes: in the middle of the parts a worker dies in
// a part and a scheduler dies (kill -9 as the failover tests simulate it).
// The lost part is retried alone on the worker left; every part ends
// succeeded, the reduce is called once with every output in order, the
// child fires once, and no (part, attempt) started twice.
func TestMapReduceCrashes(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	c.startScheduler(4)
	const ackWait = 2 * time.Second
	l := newMRLog()
	base := l.handler()
	hung := make(chan *worker.Job, 1)
	var once atomic.Bool
	a := c.newCrashWorker(worker.Config{AckWait: ackWait, Concurrency: 4})
	// Once 200 parts have started, the next part on worker a is the one
	// its process dies in.
	a.Handle("mr", func(ctx context.Context, j *worker.Job) error {
		if j.IsMapPart() && l.started() >= 200 && once.CompareAndSwap(false, true) {
			l.mu.Lock()
			l.starts[[2]int{j.ShardIndex, j.Attempt}]++
			l.mu.Unlock()
			hung <- j
			a.hang()
			return nil
		}
		return base(ctx, j)
	}, worker.WithReduce(l.reduce()))
	a.Handle("after", func(ctx context.Context, j *worker.Job) error { return nil })
	a.start()
	b, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect("worker-b"), Group: "g", ID: "b",
		AckWait: ackWait, Concurrency: 4, Logger: c.log.Named("b")})
	if err != nil {
		t.Fatal(err)
	}
	b.Handle("mr", base, worker.WithReduce(l.reduce()))
	b.Handle("after", func(ctx context.Context, j *worker.Job) error { return nil })
	runWorker(t, b)
	job, child := mrJob(t, c, 2)

	fire := trigger(t, c.api, job.ID, nil)
	var lost *worker.Job
	select {
	case lost = <-hung:
	case <-time.After(120 * time.Second):
		t.Fatal("no part started on worker a after the first 200")
	}
	c.crash(0)
	a.crash()
	if n := c.count(`SELECT count(*) FROM job_runs WHERE shard_fire = $1 AND shard_total > 0 AND status = 'SUCCEEDED'`, fire.ID); n >= mrItems {
		t.Errorf("every part had succeeded when the scheduler and the worker died: the crashes came too late to test anything")
	}
	testwait.Eventually(t, 180*time.Second, "the child run to succeed", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, child.ID) == 1
	})
	l.check(t)
	checkFire(t, c, fire.ID, child.ID)
	if n := c.count(`SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'LOST'`, lost.RunID); n != 1 {
		t.Errorf("the part worker a died in (run %d) is not LOST", lost.RunID)
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE retry_of = $1 AND shard_fire = $2 AND shard_index = $3
		AND status = 'SUCCEEDED' AND worker_id = 'b'`, lost.RunID, fire.ID, lost.ShardIndex); n != 1 {
		t.Errorf("no retry of the part lost with worker a (run %d, part %d) succeeded on worker b", lost.RunID, lost.ShardIndex)
	}
}

// started is how many part executions have started.
func (l *mrLog) started() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, k := range l.starts {
		n += k
	}
	return n
}
