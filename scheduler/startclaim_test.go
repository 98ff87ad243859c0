package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// attemptKey is one (run, attempt): at most one execution of it may reach
// a handler (docs/architecture.md, invariant 2).
type attemptKey struct {
	run     int64
	attempt int
}

// A worker dies while runs are inside their handlers, and their triggers
// are redelivered to another worker (max deliveries 5, so not given up):
// each of those runs ends LOST at once, naming the dead worker, and is
// retried by its job's policy; none runs twice under one attempt. Runs
// whose triggers the dead worker held without starting them (their job's
// lock was taken) run once on the other worker, as normal.
func TestRunsOfDeadWorkerEndLostNotRerun(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	ctx := context.Background()
	const ackWait = 2 * time.Second
	const inHandler = 6

	var mu sync.Mutex
	execs := map[attemptKey][]string{}
	deliveries := map[attemptKey]int{}
	record := func(w string, j *worker.Job) {
		mu.Lock()
		defer mu.Unlock()
		k := attemptKey{j.RunID, j.Attempt}
		execs[k] = append(execs[k], w)
		deliveries[k] = j.Delivery
	}

	startedOnA := make(chan int64, 2*inHandler)
	a := c.newCrashWorker(worker.Config{AckWait: ackWait, AbandonGrace: 100 * time.Millisecond})
	a.Handle("work", func(ctx context.Context, j *worker.Job) error {
		record("a", j)
		startedOnA <- j.RunID
		a.hang() // the process "dies" while this runs
		return nil
	})
	a.start()

	jobs := make([]int64, inHandler)
	for i := range jobs {
		j := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: fmt.Sprintf("work-%d", i), Handler: "work",
			ScheduleType: "none", MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond)})
		jobs[i] = j.ID
	}
	// One run of each job starts on a; a second run of the first job waits
	// there for the job's lock (block strategy serial): a holds its
	// trigger without having started it.
	var started, waiting []int64
	for _, job := range jobs {
		r := trigger(t, c.api, job, nil)
		started = append(started, r.ID)
	}
	for range started {
		select {
		case <-startedOnA:
		case <-time.After(20 * time.Second):
			t.Fatal("worker a did not start every run")
		}
	}
	r := trigger(t, c.api, jobs[0], nil)
	waiting = append(waiting, r.ID)
	testwait.Eventually(t, 10*time.Second, "the second run of the first job to reach worker a", func() bool {
		got, err := c.api.GetRun(ctx, r.ID)
		return err == nil && got.Status == "TRIGGERED" && a.Stats().Running == inHandler+1
	})

	a.crash()
	crashed := time.Now()

	b, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect("worker-b"), Group: "g", ID: "b", AckWait: ackWait, Logger: c.log.Named("b")})
	if err != nil {
		t.Fatal(err)
	}
	b.Handle("work", func(ctx context.Context, j *worker.Job) error { record("b", j); return nil })
	bctx, stopB := context.WithCancel(context.Background())
	bDone := make(chan error, 1)
	go func() { bDone <- b.Run(bctx) }()
	t.Cleanup(func() { stopB(); <-bDone })

	for _, id := range started {
		var lost *apiv1.Run
		testwait.Eventually(t, 30*time.Second, fmt.Sprintf("run %d to end LOST", id), func() bool {
			lost, err = c.api.GetRun(ctx, id)
			return err == nil && lost.Status != "RUNNING"
		})
		if lost.Status != "LOST" || lost.WorkerID != "a" || !strings.Contains(lost.Message, "worker a died while it ran") {
			t.Errorf("run %d: %s on %q (%q), want LOST on worker a saying it died", id, lost.Status, lost.WorkerID, lost.Message)
		}
		// Redelivered after the ack wait, then ended at once: not after
		// the deliveries ran out.
		if took := lost.FinishedAt.Sub(crashed); took > ackWait+5*time.Second {
			t.Errorf("run %d LOST %s after the crash, want within the ack wait (%s) and a few seconds", id, took, ackWait)
		}
	}
	for _, id := range waiting {
		testwait.Eventually(t, 30*time.Second, fmt.Sprintf("the waiting run %d to succeed", id), func() bool {
			got, err := c.api.GetRun(ctx, id)
			return err == nil && got.Status == "SUCCEEDED" && got.WorkerID == "b"
		})
	}
	for i, job := range jobs {
		testwait.Eventually(t, 30*time.Second, fmt.Sprintf("the retry of run %d to succeed", started[i]), func() bool {
			for _, r := range runsOf(t, c.api, job) {
				if r.RetryOf != nil && *r.RetryOf == started[i] && r.Status == "SUCCEEDED" && r.Attempt == 1 {
					return true
				}
			}
			return false
		})
	}

	mu.Lock()
	defer mu.Unlock()
	for k, on := range execs {
		if len(on) != 1 {
			t.Errorf("run %d attempt %d executed %d times (on %v), want once", k.run, k.attempt, len(on), on)
		}
	}
	for _, id := range waiting {
		// It reached a before, without starting: it runs on b, and its
		// handler learns it is a later delivery.
		if d := deliveries[attemptKey{id, 0}]; d < 2 {
			t.Errorf("waiting run %d ran with Job.Delivery %d, want 2 or more", id, d)
		}
	}
	if want := 2*inHandler + len(waiting); len(execs) != want {
		t.Errorf("%d (run, attempt) pairs executed, want %d: the lost runs, their retries and the waiting run", len(execs), want)
	}
}
