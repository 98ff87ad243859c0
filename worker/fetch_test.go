package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

// Two workers of a group share its triggers: each runs exactly once across
// both, and both take part.
func TestWorkersShareTriggers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	var (
		mu       sync.Mutex
		runs     = make(map[int64]int)  // executions per run id
		byWorker = make(map[string]int) // executions per worker
	)
	gate := make(chan struct{})
	held := make(chan string, 2) // the workers holding a gated run
	handler := func(id string) HandlerFunc {
		return func(ctx context.Context, job *Job) error {
			mu.Lock()
			runs[job.RunID]++
			byWorker[id]++
			mu.Unlock()
			if job.RunID <= 2 {
				held <- id
				<-gate
			}
			return nil
		}
	}
	// Concurrency 1 each: while one worker holds a gated run, the other
	// gated run can only go to the other worker.
	e.start(Config{ID: "w1", Concurrency: 1}, func(w *Worker) { w.Handle("h", handler("w1")) })
	e.start(Config{ID: "w2", Concurrency: 1}, func(w *Worker) { w.Handle("h", handler("w2")) })
	e.publish(trigger(1, "h", ""))
	e.publish(trigger(2, "h", ""))
	if a, b := recv(t, "a worker to hold a gated run", held), recv(t, "both workers to hold a gated run", held); a == b {
		t.Fatalf("worker %s holds both gated runs, with concurrency 1", a)
	}
	close(gate)

	const n = 40
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i + 1)
		if i >= 2 {
			e.publish(trigger(ids[i], "h", ""))
		}
	}
	ev.waitFinished(ids...)
	ev.expectNone(2 * testFetchWait)

	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("run %d executed %d times", id, runs[id])
		}
		got := ev.run(id)
		if len(got) != 2 || got[0].Kind != wire.EventStarted || got[1].Status != wire.StatusSucceeded ||
			got[0].WorkerID != got[1].WorkerID {
			t.Errorf("run %d events %+v, want one started and one finished by the same worker", id, got)
		}
	}
	if byWorker["w1"] == 0 || byWorker["w2"] == 0 || byWorker["w1"]+byWorker["w2"] != n {
		t.Errorf("executions per worker %v, want both and %d in all", byWorker, n)
	}
}

// A worker never runs more than Concurrency handlers, and never takes more
// triggers from the shared consumer than it can start.
func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	const limit, n = 3, 12
	var g gauge
	release := make(chan struct{})
	e.start(Config{Concurrency: limit}, func(w *Worker) {
		w.Handle("h", g.blocking(release))
	})
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i + 1)
		e.publish(trigger(ids[i], "h", ""))
	}
	for done := 0; done < n; done++ {
		want := int32(min(limit, n-done))
		g.waitFor(t, "the worker to fill its slots", want)
		info := e.groupConsumer()
		if info.NumAckPending > limit {
			t.Fatalf("%d triggers delivered to a worker of concurrency %d: it holds triggers it cannot run",
				info.NumAckPending, limit)
		}
		if p := g.peak.Load(); p > limit {
			t.Fatalf("%d handlers ran at once, limit %d", p, limit)
		}
		release <- struct{}{}
	}
	ev.waitFinished(ids...)
	if p := g.peak.Load(); p != limit {
		t.Errorf("peak concurrency %d, want %d", p, limit)
	}
}

// A second delivery of a run that is executing here joins the execution
// instead of starting another; one that arrives after it finished is acked
// without running.
func TestRepeatedTriggerRunsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	var execs atomic.Int32
	started := make(chan struct{}, 1)
	gate := make(chan struct{})
	r := e.start(Config{Concurrency: 2}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			execs.Add(1)
			started <- struct{}{}
			<-gate
			return nil
		})
	})
	// The same run published twice without the scheduler's message id:
	// two stream messages, as after a re-publish outside the duplicate window.
	data, err := wire.EncodeTrigger(trigger(5, "h", ""))
	if err != nil {
		t.Fatal(err)
	}
	e.publishRaw(data)
	recv(t, "the first execution", started)
	e.publishRaw(data)
	// The second delivery is processed (it joins) while the first runs.
	r.waitProcessed(5)
	if s := r.w.Stats(); s.Running != 1 {
		t.Errorf("stats %+v, want 1 running", s)
	}
	if info := e.groupConsumer(); info.NumAckPending != 2 {
		t.Errorf("%d deliveries unacknowledged while the run goes on, want both held", info.NumAckPending)
	}
	close(gate)
	r.waitProcessed(5)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d messages left once the run ended, want both acked", left)
	}
	ev.waitFinished(5)

	e.publishRaw(data) // after it finished
	r.waitProcessed(5)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d messages left, want the late one acked", left)
	}
	ev.expectNone(2 * testFetchWait)
	ev.wantRanOnce(5, execs.Load())
}

// A true redelivery (same stream message, here forced by shrinking the
// consumer's ack wait below the worker's in-progress interval) of a run
// still executing here joins it; both deliveries are settled by one ack.
func TestRedeliveryWhileRunningJoins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	logger, observed := observedLogger(t, zap.WarnLevel)
	var execs atomic.Int32
	started := make(chan struct{}, 1)
	gate := make(chan struct{})
	r := e.start(Config{Concurrency: 2, Logger: logger},
		func(w *Worker) {
			w.Handle("h", func(ctx context.Context, job *Job) error {
				execs.Add(1)
				started <- struct{}{}
				<-gate
				return nil
			})
		})
	e.publish(trigger(1, "h", ""))
	recv(t, "the first execution", started)

	// The worker keeps sending in-progress acks every 10s (AckWait 30s / 3);
	// the server now redelivers after 500ms.
	info := e.groupConsumer()
	cfg := info.Config
	cfg.AckWait = 500 * time.Millisecond
	if _, err := e.js.CreateOrUpdateConsumer(e.ctx(), stream.Triggers, cfg); err != nil {
		t.Fatal(err)
	}
	// The first execution is gated: a delivery processed now joined it.
	r.waitProcessed(1)
	if observed.FilterMessageSnippet("joined, not started twice").Len() == 0 {
		t.Error("a redelivery processed while the run goes on, yet no join logged")
	}
	close(gate)
	fin := ev.waitFinished(1)
	if fin[1].Status != wire.StatusSucceeded {
		t.Errorf("finished %+v", fin[1])
	}
	testwait.Eventually(t, waitLimit, "the trigger to be acked", func() bool { return e.triggersLeft() == 0 })
	ev.wantRanOnce(1, execs.Load())
}

// A run that outlasts its trigger's ack wait keeps the trigger with
// in-progress acks (every AckWait/3): the
// stream delivers it once, however long the handler takes.
func TestLongRunKeepsItsTrigger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	r := e.start(Config{AckWait: 600 * time.Millisecond}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			select {
			case <-time.After(2 * time.Second): // more than three ack waits
			case <-ctx.Done():
			}
			return nil
		})
	})
	e.publish(trigger(1, "h", ""))
	r.waitProcessed(1)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once the run was processed, want it acked", left)
	}
	if fin := ev.waitFinished(1); fin[1].Status != wire.StatusSucceeded {
		t.Fatalf("finished %+v, want SUCCEEDED", fin[1])
	}
	if info := e.groupConsumer(); info.Delivered.Consumer != 1 || info.NumRedelivered != 0 {
		t.Errorf("the consumer delivered %d times (%d redelivered), want the trigger once",
			info.Delivered.Consumer, info.NumRedelivered)
	}
}
