package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/worker"
)

// A scheduler that crashes between recording a failure and delivering its
// alert loses nothing: the first scheduler's alert engine runs only once,
// at its start (its interval is an hour), so the failure it records
// (results applier: the run's end and its outbox row, one transaction)
// waits undelivered; it crashes; the scheduler started after it delivers
// the alert, exactly once — a second failure later (the alert counts 2,
// so the engine has run past the delivery) sends nothing more.
func TestAlertDeliveredOnceAcrossACrash(t *testing.T) {
	t.Parallel()
	hook := newHookServer(t)
	c := newCluster(t)
	allow := func(cfg *scheduler.Config) {
		cfg.Egress.Allow = append(cfg.Egress.Allow, hook.Listener.Addr().String())
	}
	c.startScheduler(4, allow, func(cfg *scheduler.Config) { cfg.Alerts.Interval = time.Hour })
	w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect("w1"), Group: "g", ID: "w1", Logger: c.log.Named("w1")})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("broken", func(context.Context, *worker.Job) error { return errors.New("database unreachable") })
	runWorker(t, w)

	ctx := context.Background()
	ch, err := c.api.CreateChannel(ctx, apiv1.Channel{Name: "hook", Kind: "webhook", Group: "g", Target: hook.URL + "/jetjob"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.api.CreateAlertRule(ctx, apiv1.AlertRule{Name: "failures", Group: "g", Events: []string{"failed"},
		Channels: []int64{ch.ID}}); err != nil {
		t.Fatal(err)
	}
	job := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: "broken", Handler: "broken", ScheduleType: "none"})
	trigger(t, c.api, job.ID, nil)
	testwait.Eventually(t, 60*time.Second, "the failure recorded with its outbox row", func() bool {
		return c.count(`SELECT count(*) FROM alert_outbox WHERE job_id = $1 AND status = 'FAILED'`, job.ID) == 1
	})
	if got := hook.got(); len(got) != 0 {
		t.Fatalf("the first scheduler delivered %q before its crash", got)
	}
	c.crash(0)

	next := c.startScheduler(4, allow)
	api, err := client.New(c.nodes[next].url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "the alert delivered by the next scheduler", func() bool {
		return c.count(`SELECT count(*) FROM alert_deliveries WHERE state = 'sent'`) == 1
	})
	trigger(t, api, job.ID, nil)
	testwait.Eventually(t, 60*time.Second, "the second failure counted by the alert", func() bool {
		return c.count(`SELECT count(*) FROM alerts WHERE job_id = $1 AND count = 2`, job.ID) == 1
	})
	if got := hook.got(); fmt.Sprint(got) != "[failed]" {
		t.Fatalf("the receiver got %q, want one failed notice", got)
	}
	if n := c.count(`SELECT count(*) FROM alert_outbox`); n != 0 {
		t.Fatalf("%d outbox rows left", n)
	}
}
