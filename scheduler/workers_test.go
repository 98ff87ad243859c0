package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// The API lists the live workers of a group, from their heartbeats.
func TestWorkersAPI(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("a", func(context.Context, *worker.Job) error { return nil })
		w.Handle("b", func(context.Context, *worker.Job) error { return nil })
	})
	ctx := context.Background()
	var l *apiv1.WorkerList
	testwait.Eventually(t, 15*time.Second, "the worker to be listed", func() bool {
		var err error
		l, err = sys.api.ListWorkers(ctx, "g")
		return err == nil && len(l.Workers) == 1
	})
	w := l.Workers[0]
	if w.Group != "g" || fmt.Sprint(w.Handlers) != "[a b]" || w.Capacity != 128 || w.PID == 0 {
		t.Errorf("worker %+v: want group g, handlers [a b], capacity 128, a pid", w)
	}
	other, err := sys.api.ListWorkers(ctx, "other")
	if err != nil || len(other.Workers) != 0 {
		t.Errorf("group other: %v %+v, want no worker", err, other)
	}
}
