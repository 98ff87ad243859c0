package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// A worker dies mid-run with max deliveries 1: the run ends LOST within
// the ack wait (plus the advisory's way), ended by the lost-run monitor,
// then its retry runs on another worker and succeeds.
func TestLostRunIsRetried(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	ctx := context.Background()
	const ackWait = 2 * time.Second

	startedOnA := make(chan int64, 1)
	a := c.newCrashWorker(worker.Config{AckWait: ackWait, MaxDeliver: 1})
	a.Handle("work", func(ctx context.Context, j *worker.Job) error {
		startedOnA <- j.RunID
		a.hang() // the process "dies" while this runs
		return nil
	})
	a.start()

	job := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "work", Handler: "work", ScheduleType: "none",
		MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond)})
	run := trigger(t, c.api, job.ID, nil)
	select {
	case id := <-startedOnA:
		if id != run.ID {
			t.Fatalf("worker a started run %d, want %d", id, run.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("worker a never started the run")
	}
	a.crash()

	b, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect("worker-b"), Group: "g", ID: "b", AckWait: ackWait, MaxDeliver: 1, Logger: c.log.Named("b")})
	if err != nil {
		t.Fatal(err)
	}
	ranOnB := make(chan worker.Job, 2)
	b.Handle("work", func(ctx context.Context, j *worker.Job) error { ranOnB <- *j; return nil })
	bctx, stopB := context.WithCancel(context.Background())
	bDone := make(chan error, 1)
	go func() { bDone <- b.Run(bctx) }()
	t.Cleanup(func() { stopB(); <-bDone })

	var lost *apiv1.Run
	testwait.Eventually(t, 20*time.Second, "the run to end LOST", func() bool {
		lost, err = c.api.GetRun(ctx, run.ID)
		return err == nil && lost.Status == "LOST"
	})
	// How soon after the crash is not asserted: on a loaded machine the
	// advisory's way takes what it takes. The message shows the run was
	// ended by the lost-run monitor on JetStream's max-deliveries advisory
	// (the path bounded by the ack wait), not by anything slower.
	if !strings.Contains(lost.Message, "delivered 1 times") {
		t.Errorf("LOST message %q does not say why", lost.Message)
	}
	var retry apiv1.Run
	testwait.Eventually(t, 20*time.Second, "the retry to succeed", func() bool {
		runs := runsOf(t, c.api, job.ID)
		for _, r := range runs {
			if r.RetryOf != nil && *r.RetryOf == run.ID && r.Status == "SUCCEEDED" {
				retry = r
				return true
			}
		}
		return false
	})
	if retry.WorkerID != "b" || retry.Attempt != 1 || retry.TriggerType != "retry" {
		t.Errorf("retry %+v: want attempt 1 of type retry on worker b", retry)
	}
	if got := len(ranOnB); got != 1 {
		t.Errorf("worker b ran %d executions, want 1 (the retry; the lost run's trigger was deleted)", got)
	}
}
