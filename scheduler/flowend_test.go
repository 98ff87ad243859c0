package scheduler_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// starts records the runs a handler starts, in order, and how many run at
// once at most.
type starts struct {
	mu      sync.Mutex
	order   []int64
	running int
	peak    int
}

func (s *starts) begin(run int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order = append(s.order, run)
	s.running++
	s.peak = max(s.peak, s.running)
}

func (s *starts) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
}

func (s *starts) get() ([]int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order), s.peak
}

// The flow controls from end to end (issue #33): a group cap set through
// the API holds across two worker processes; the runs waiting at it show
// in the group's queue view in the order they will start, priority first;
// and they start in that order — a job's priority and a manual trigger's
// own priority both count.
func TestGroupCapAndPriorityEndToEnd(t *testing.T) {
	t.Parallel()
	var seen starts
	release := make(chan struct{})
	var first sync.Once
	handler := func(ctx context.Context, job *worker.Job) error {
		seen.begin(job.RunID)
		defer seen.end()
		var hold bool
		first.Do(func() { hold = true })
		if hold { // the first run holds the cap until the others queue
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	sys := startSystem(t, func(w *worker.Worker) { w.Handle("gated", handler) })
	ctx := context.Background()

	// A second worker process of group g.
	w2, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: sys.connect(t), Group: "g", ID: "second",
		Logger: zaptest.NewLogger(t).Named("second")})
	if err != nil {
		t.Fatal(err)
	}
	w2.Handle("gated", handler)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w2.Run(wctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("second worker: %v", err)
		}
	})

	one := 1
	if _, err := sys.api.SetGroupLimits(ctx, "g", apiv1.GroupLimitsRequest{MaxRunning: &one}); err != nil {
		t.Fatal(err)
	}
	spec := func(name string, priority int) apiv1.JobSpec {
		return apiv1.JobSpec{Group: "g", Name: name, Handler: "gated", ScheduleType: "none",
			BlockStrategy: "concurrent", Priority: priority}
	}
	low := createJob(t, sys.api, spec("low", 0))
	high := createJob(t, sys.api, spec("high", 10))

	holder := trigger(t, sys.api, low.ID, nil)
	waitStatus(t, sys.api, holder.ID, "RUNNING", 30*time.Second)
	var lows, highs []int64
	for range 3 {
		lows = append(lows, trigger(t, sys.api, low.ID, nil).ID)
	}
	for range 2 {
		highs = append(highs, trigger(t, sys.api, high.ID, nil).ID)
	}
	urgent := 50
	boosted, err := sys.api.TriggerJobWith(ctx, low.ID, apiv1.TriggerRequest{Priority: &urgent})
	if err != nil {
		t.Fatal(err)
	}

	// Every run queues at the cap; the queue view lists them in turn.
	want := append(append([]int64{boosted.ID}, highs...), lows...)
	var queued []int64
	testwait.Eventually(t, 30*time.Second, "six runs waiting at the group's cap", func() bool {
		q, err := sys.api.GroupQueue(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		queued = queued[:0]
		for _, r := range q.Waiting {
			queued = append(queued, r.RunID)
		}
		return len(q.Running) == 1 && q.Running[0].RunID == holder.ID && len(queued) == len(want)
	})
	if !slices.Equal(queued, want) {
		t.Errorf("queue view lists %v, want %v (the manual trigger's priority 50, then job high's 10, then fire order)", queued, want)
	}

	close(release)
	for _, id := range append(want, holder.ID) {
		waitStatus(t, sys.api, id, "SUCCEEDED", 60*time.Second)
	}
	order, peak := seen.get()
	if peak != 1 {
		t.Errorf("%d runs of group g ran at once, want at most 1 (max_running)", peak)
	}
	if wantOrder := append([]int64{holder.ID}, want...); !slices.Equal(order, wantOrder) {
		t.Errorf("runs started in order %v, want %v", order, wantOrder)
	}
}
