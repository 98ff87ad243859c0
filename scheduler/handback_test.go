package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// A scheduler that stops while its results applier holds run events it has
// not applied yet hands them back: another scheduler applies them at once,
// not after the events consumer's ack wait (30 s). Without that, a rolling
// restart of the schedulers leaves runs without their start or end for
// half a minute.
func TestStoppingSchedulerHandsBackEvents(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	// The first scheduler gathers events for 20 s before applying them:
	// it still holds the run's events when it stops. An ack wait of two
	// minutes makes a message left unacknowledged plain to see.
	const ackWait = 2 * time.Minute
	first := c.startScheduler(4, func(cfg *scheduler.Config) {
		cfg.Results.Linger, cfg.Results.AckWait = 20*time.Second, ackWait
	})
	c.startWorker("w1")
	ctx := context.Background()
	job := c.createJobs(1, apiv1.JobSpec{Name: "once", ScheduleType: "none"})[0]
	run := trigger(t, c.api, job, nil)
	nc := c.connect("test")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, stream.Events, stream.EventsConsumer)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 20*time.Second, "the run's events to be taken by the first scheduler, unapplied", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending > 0 && info.NumPending == 0
	})
	stopped := time.Now()
	c.stop(c.nodes[first])
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("the stop took %s: it waited for the batch's linger", took)
	}

	second := c.startScheduler(4, func(cfg *scheduler.Config) { cfg.Results.AckWait = ackWait })
	api, err := client.New(c.nodes[second].url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	var got *apiv1.Run
	// The run's row changes only when a results applier applies its events.
	c.signals.Results.Applied.WaitUntil(t, ackWait+30*time.Second, "the run's result to be applied", func() bool {
		got, err = api.GetRun(ctx, run.ID)
		return err == nil && got.Status == "SUCCEEDED" && got.StartedAt != nil
	})
	// Well within the ack wait the events would otherwise have waited out.
	if took := time.Since(started); took > ackWait/4 {
		t.Errorf("the result was applied %s after the second scheduler started, want well within the %s ack wait", took, ackWait)
	}
}
