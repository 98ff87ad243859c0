package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/worker"
)

// A group whose live workers fall behind (every slot held by a handler
// that does not return, triggers waiting) has its jobs left out of
// planning once its oldest pending trigger waited twice the planning's
// MaxLag (planner/admit.go): the backlog sampler's figures reach the
// planner through the scheduler's wiring.
func TestPlanningLeavesOutAGroupWhoseWorkersAreBehind(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("stuck", func(ctx context.Context, _ *worker.Job) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	})
	t.Cleanup(func() { close(release) }) // before startSystem's stop: cleanups run last first
	ctx := context.Background()
	// More runs every second than the worker's 128 slots.
	for i := range 200 {
		if _, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: fmt.Sprintf("stuck%d", i), Handler: "stuck",
			ScheduleType: "cron", ScheduleExpr: "@every 1s", MisfirePolicy: "fire_once", BlockStrategy: "concurrent"}); err != nil {
			t.Fatal(err)
		}
	}
	sys.signals.Planner.ShardPlanned.WaitFor(t, 60*time.Second, "a pass that leaves group g out",
		func(p planner.Pass) bool { return slices.Contains(p.Behind, "g") })
}
