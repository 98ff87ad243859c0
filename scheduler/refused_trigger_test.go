package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/worker"
)

// A scheduler that signs with a key its workers were not given: every
// worker refuses its triggers and hands them back, and once a trigger's
// deliveries run out the lost-run monitor, which knows the key, ends the
// run LOST (with its retry and alarm path), instead of the run staying
// TRIGGERED forever. Nothing ran.
func TestRunOfARefusedTriggerEndsLost(t *testing.T) {
	t.Parallel()
	newKey, _, err := trigsign.GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 1)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("h", func(context.Context, *worker.Job) error {
			ran <- struct{}{}
			return nil
		})
	}, func(c *systemConfig) { c.Deps.TriggerSigner = newKey })
	ctx := context.Background()
	job, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "refused", Handler: "h", ScheduleType: "none"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sys.api.TriggerJob(ctx, job.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Five deliveries, each handed back 5 s after its refusal.
	testwait.Eventually(t, 90*time.Second, "the refused run to end LOST", func() bool {
		r, err = sys.api.GetRun(ctx, r.ID)
		return err == nil && r.Status == "LOST"
	})
	if !strings.Contains(r.Message, "delivered 5 times") {
		t.Errorf("LOST run's message %q does not say its deliveries ran out", r.Message)
	}
	select {
	case <-ran:
		t.Error("the handler ran a trigger its worker should have refused")
	default:
	}
}
