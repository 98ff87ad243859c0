package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestSucceededRunReportsStartedThenFinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	jobs := make(chan Job, 1)
	r := e.start(Config{}, func(w *Worker) {
		w.Handle("echo", func(ctx context.Context, job *Job) error {
			jobs <- *job
			return nil
		})
	})
	tr := trigger(1, "echo", `{"to":"alice"}`)
	tr.TriggerType, tr.Attempt, tr.ShardIndex, tr.ShardTotal = wire.TriggerRetry, 2, 1, 3
	e.publish(tr)

	job := recv(t, "the handler", jobs)
	if job.Params != `{"to":"alice"}` || job.RunID != 1 || job.JobID != 1001 || job.Group != testGroup ||
		job.Handler != "echo" || job.TriggerType != TriggerRetry || job.Attempt != 2 ||
		job.ShardIndex != 1 || job.ShardTotal != 3 || job.Delivery != 1 || !job.ScheduledAt.Equal(tr.ScheduledAt) ||
		job.Logger == nil {
		t.Errorf("handler got %+v, trigger was %+v", job, tr)
	}
	ev.waitFinished(1)
	got := ev.run(1)
	if len(got) != 2 || got[0].Kind != wire.EventStarted || got[0].Status != wire.StatusRunning ||
		got[1].Kind != wire.EventFinished || got[1].Status != wire.StatusSucceeded {
		t.Fatalf("events %+v, want started RUNNING then finished SUCCEEDED", got)
	}
	for _, g := range got {
		if g.WorkerID != r.w.ID() || g.JobID != 1001 || g.At.IsZero() {
			t.Errorf("event %+v: want worker %s, job 1001, a time", g, r.w.ID())
		}
	}
	if got[1].At.Before(got[0].At) {
		t.Errorf("finished at %s before started at %s", got[1].At, got[0].At)
	}
	r.waitProcessed(1)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want them acked", left)
	}
}

// A run that is no part of a sharding broadcast (the wire's shard_total
// 0) is part 0 of 1 to its handler, as in xxl-job: `i % ShardTotal` never
// divides by zero.
func TestShardOutsideBroadcastIsZeroOfOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	jobs := make(chan Job, 1)
	e.start(Config{}, func(w *Worker) {
		w.Handle("echo", func(ctx context.Context, job *Job) error {
			jobs <- *job
			return nil
		})
	})
	e.publish(trigger(1, "echo", ""))
	if job := recv(t, "the handler", jobs); job.ShardIndex != 0 || job.ShardTotal != 1 {
		t.Errorf("shard %d/%d outside a broadcast, want 0/1", job.ShardIndex, job.ShardTotal)
	}
}

// Each handler outcome maps to its status and message.
func TestRunResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	release := make(chan struct{})
	stubbornReturned := make(chan struct{})
	r := e.start(Config{AbandonGrace: 300 * time.Millisecond}, func(w *Worker) {
		w.Handle("fail", func(ctx context.Context, job *Job) error {
			return fmt.Errorf("disk full on %s", job.Params)
		})
		w.Handle("panic", func(ctx context.Context, job *Job) error {
			panic("kaboom")
		})
		w.Handle("polite", func(ctx context.Context, job *Job) error {
			<-ctx.Done()
			return ctx.Err()
		})
		w.Handle("stubborn", func(ctx context.Context, job *Job) error {
			defer close(stubbornReturned)
			<-release // ignores ctx
			return nil
		})
		w.Handle("long-error", func(ctx context.Context, job *Job) error {
			return errors.New(strings.Repeat("x", 2*wire.MaxMessageBytes))
		})
	})
	e.publish(trigger(1, "fail", "/var"))
	e.publish(trigger(2, "panic", ""))
	polite := trigger(3, "polite", "")
	polite.TimeoutMS = 200
	e.publish(polite)
	stubborn := trigger(4, "stubborn", "")
	stubborn.TimeoutMS = 200
	e.publish(stubborn)
	e.publish(trigger(5, "long-error", ""))
	e.publish(trigger(6, "nope", ""))

	fin := ev.waitFinished(1, 2, 3, 4, 5, 6)
	check := func(id int64, status wire.Status, msg string) {
		t.Helper()
		if f := fin[id]; f.Status != status || !strings.Contains(f.Message, msg) {
			t.Errorf("run %d finished %s %q, want %s containing %q", id, f.Status, f.Message, status, msg)
		}
	}
	check(1, wire.StatusFailed, "disk full on /var")
	check(2, wire.StatusFailed, "panic: kaboom")
	check(3, wire.StatusTimedOut, "timed out after 200ms")
	check(4, wire.StatusTimedOut, "abandoned after 300ms")
	check(5, wire.StatusFailed, "[truncated]")
	if len(fin[5].Message) > wire.MaxMessageBytes {
		t.Errorf("message of %d bytes, want at most %d", len(fin[5].Message), wire.MaxMessageBytes)
	}
	check(6, wire.StatusFailed, fmt.Sprintf(`no handler "nope" registered on worker %s (group g)`, r.w.ID()))
	if got := ev.run(6); len(got) != 1 {
		t.Errorf("unknown handler: events %+v, want only the finished one", got)
	}

	// The stubborn handler was reported while it still ran (it can only
	// return once release is closed), no sooner than timeout + AbandonGrace.
	select {
	case <-stubbornReturned:
		t.Fatal("stubborn handler returned before it was released")
	default:
	}
	if st := ev.run(4); len(st) != 2 || st[0].Kind != wire.EventStarted || st[1].At.Sub(st[0].At) < 450*time.Millisecond {
		t.Errorf("stubborn run events %+v: want finished at least timeout+grace after started", st)
	}
	if s := r.w.Stats(); s.AbandonedTotal != 1 || s.Abandoned != 1 {
		t.Errorf("stats %+v, want one abandoned handler still running", s)
	}
	close(release)
	recv(t, "the abandoned handler to return", stubbornReturned)
	r.w.signals.abandonedReturned.WaitFor(t, waitLimit, "the worker to see it return", func(run int64) bool { return run == 4 })
	if s := r.w.Stats(); s.Abandoned != 0 {
		t.Errorf("stats %+v once the abandoned handler returned, want none abandoned", s)
	}
	r.waitProcessed(1, 2, 3, 4, 5, 6)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want them acked", left)
	}
}

// Garbage on the trigger subject is reported when it names a run and
// dropped in every case, and the worker keeps working.
func TestMalformedTriggers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	e.start(Config{}, func(w *Worker) {
		w.Handle("ok", func(context.Context, *Job) error { return nil })
	})
	e.publishRaw([]byte("not json at all"))
	e.publishRaw([]byte(`{"v":1,"run_id":7,"job_id":70,"group":"g","handler":"ok","trigger_type":"bogus","scheduled_at":"2026-01-01T00:00:00Z"}`))
	e.publishRaw([]byte(`{"v":1,"run_id":8,"job_id":80,"attempt":"three"}`))
	e.publishRaw([]byte(`{"v":1,"run_id":9,"job_id":90,"group":"other","handler":"ok","trigger_type":"manual","scheduled_at":"2026-01-01T00:00:00Z"}`))
	e.publishRaw([]byte(`{"v":2,"run_id":10,"job_id":100}`))
	e.publishRaw([]byte(`{"v":1}`))
	e.publish(trigger(11, "ok", ""))

	fin := ev.waitFinished(7, 8, 9, 10, 11)
	want := map[int64]string{
		7:  `unknown trigger_type "bogus"`,
		8:  "malformed JSON",
		9:  `group "other" delivered to a worker of group "g"`,
		10: "unsupported message version",
	}
	for id, msg := range want {
		if f := fin[id]; f.Status != wire.StatusFailed || !strings.Contains(f.Message, msg) || f.JobID != id*10 {
			t.Errorf("run %d finished %+v, want FAILED containing %q", id, f, msg)
		}
		if got := ev.run(id); len(got) != 1 {
			t.Errorf("run %d: events %+v, want only finished", id, got)
		}
	}
	if fin[11].Status != wire.StatusSucceeded {
		t.Errorf("valid trigger after garbage: %+v", fin[11])
	}
	testwait.Eventually(t, waitLimit, "every trigger, malformed ones included, to leave the stream",
		func() bool { return e.triggersLeft() == 0 })
}

// A handler that panics ends its run FAILED with the panic's message (not
// its stack), and the worker goes on: a later run of another job on the
// same worker succeeds.
func TestPanicFailsRunAndWorkerGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	r := e.start(Config{Concurrency: 1}, func(w *Worker) {
		w.Handle("index", func(ctx context.Context, job *Job) error {
			fields := strings.Fields(job.Params)
			return errors.New(fields[5]) // a runtime error, not a panic the handler chose
		})
		w.Handle("ok", func(ctx context.Context, job *Job) error { return nil })
	})
	e.publish(trigger(1, "index", "one field"))
	fin := ev.waitFinished(1)
	if f := fin[1]; f.Status != wire.StatusFailed || !strings.Contains(f.Message, "panic: runtime error: index out of range [5] with length 2") ||
		strings.Contains(f.Message, "goroutine ") {
		t.Errorf("panicking run finished %s %q, want FAILED with the panic's message and no stack", f.Status, f.Message)
	}
	// Run 2 is another job (trigger gives job id 1000 + run id), on the
	// same worker's only slot.
	e.publish(trigger(2, "ok", ""))
	if f := ev.waitFinished(2)[2]; f.Status != wire.StatusSucceeded || f.WorkerID != r.w.ID() {
		t.Errorf("run after the panic finished %s on %q, want SUCCEEDED on %s", f.Status, f.WorkerID, r.w.ID())
	}
	select {
	case err := <-r.done:
		t.Fatalf("worker stopped after a handler panicked: %v", err)
	default:
	}
	r.waitProcessed(1, 2)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want them acked", left)
	}
}
