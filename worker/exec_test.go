package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestSucceededRunReportsStartedThenFinished(t *testing.T) {
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
		job.Handler != "echo" || job.TriggerType != wire.TriggerRetry || job.Attempt != 2 ||
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
	testwait.Eventually(t, waitLimit, "the trigger to be acked", func() bool { return e.triggersLeft() == 0 })
}

// Each handler outcome maps to its status and message.
func TestRunResults(t *testing.T) {
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
	testwait.Eventually(t, waitLimit, "the abandoned count to drop", func() bool { return r.w.Stats().Abandoned == 0 })
	testwait.Eventually(t, waitLimit, "all triggers acked", func() bool { return e.triggersLeft() == 0 })
}

// Garbage on the trigger subject is reported when it names a run and
// dropped in every case, and the worker keeps working.
func TestMalformedTriggers(t *testing.T) {
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

// A lock whose holder's worker is gone (it cannot be asked and never
// refreshes) is taken over once the holder has not beaten for
// Config.LockTTL (testLockTTL here), even while later runs keep joining its queue: each such
// write resets the key's age, so its expiry alone would never free it.
func TestLockOfDeadWorkerTakenOver(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	// Room for every queued run: each one that joins the queue writes the key.
	e.start(Config{Concurrency: 128, LockTTL: testLockTTL}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { return nil })
	})
	kv, err := e.js.KeyValue(e.ctx(), stream.LocksBucket)
	if err != nil {
		t.Fatal(err)
	}
	ghost, _ := json.Marshal(lockValue{Holder: 999, Worker: "gone", Beat: 3})
	if _, err := kv.Create(e.ctx(), lockKey(7), ghost); err != nil {
		t.Fatal(err)
	}
	next := int64(1)
	publish := func() {
		tr := trigger(next, "h", "")
		tr.JobID = 7
		e.publish(tr)
		next++
	}
	publish()
	last := time.Now()
	ev.waitFor("run 1 to finish while later runs keep queueing behind it", func() bool {
		if time.Since(last) > 500*time.Millisecond {
			publish()
			last = time.Now()
		}
		return ev.finished(1) != nil
	})
	ids := make([]int64, 0, next-1)
	for id := int64(1); id < next; id++ {
		ids = append(ids, id)
	}
	for id, f := range ev.waitFinished(ids...) {
		if f.Status != wire.StatusSucceeded {
			t.Errorf("run %d: %s %q, want SUCCEEDED", id, f.Status, f.Message)
		}
	}
}

// Runs of a job that do not overlap and land on one worker write the job
// lock once: a run that ends leaves the lock naming it, and the job's next
// run here holds it under that name while it is young. A stopping worker
// frees the locks its runs left.
func TestLockWrittenOnceForRunsOnOneWorker(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	r := e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { return nil })
	})
	for i := int64(1); i <= 3; i++ {
		e.runJob7(ev, r, i)
	}
	if n := e.lockWrites(); n != 1 {
		t.Errorf("3 runs wrote the job lock %d times, want 1", n)
	}
	e.wantLockHolder(r, 1)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lockKV().Get(e.ctx(), lockKey(7)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("lock after the worker stopped: %v, want it deleted", err)
	}
}

// A worker asked by another whether the run its job lock names is active
// says yes while a later run holds the lock under that name, and once it
// has been asked, the job's next run here writes the lock again: an asker
// told "not active" may have taken the key meanwhile.
func TestLockReusedOnlyUntilAsked(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	unblock := make(chan struct{})
	r := e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			if job.Params == "block" {
				<-unblock
			}
			return nil
		})
	})
	e.runJob7(ev, r, 1)
	tr := trigger(2, "h", "block")
	tr.JobID = 7
	e.publish(tr)
	ev.waitFor("run 2 to start", func() bool {
		return slices.ContainsFunc(ev.run(2), func(x wire.Event) bool { return x.Kind == wire.EventStarted })
	})
	ask := func(run int64) bool {
		t.Helper()
		reply, err := stream.Ask(e.ctx(), e.nc, r.w.cfg.ID, wire.ControlRequest{Op: wire.OpRunActive, JobID: 7, RunID: run})
		if err != nil {
			t.Fatal(err)
		}
		return reply.Busy
	}
	if n := e.lockWrites(); n != 1 {
		t.Errorf("run 2 wrote the job lock: %d writes, want 1", n)
	}
	if !ask(1) {
		t.Error("asked about run 1 while run 2 holds the lock under its name: not busy, want busy")
	}
	close(unblock)
	ev.waitFinished(2)
	testwait.Eventually(t, waitLimit, "run 2 to leave the worker", func() bool { return !r.w.runActive(2) })
	if ask(1) {
		t.Error("asked about run 1 after run 2 ended: busy, want not busy")
	}
	e.runJob7(ev, r, 3)
	if n := e.lockWrites(); n != 2 {
		t.Errorf("the job lock was written %d times, want 2 (run 3 takes it over)", n)
	}
	e.wantLockHolder(r, 3)

	// A question about a lock left here and held by nobody: the next run
	// here writes. (Run 4 writes too: a question just before its write may
	// have raced it; past askedWindow, its lock is left for reuse.)
	time.Sleep(askedWindow)
	e.runJob7(ev, r, 4)
	if ask(4) {
		t.Error("asked about run 4 after it ended: busy, want not busy")
	}
	e.runJob7(ev, r, 5)
	if n := e.lockWrites(); n != 4 {
		t.Errorf("the job lock was written %d times, want 4 (runs 4 and 5 take it over)", n)
	}
	e.wantLockHolder(r, 5)
}

// A run that outlasts the lock's TTL keeps its job lock by beating: the
// job's next run, on whichever worker it lands, waits for it to end rather
// than taking over a lock that looks abandoned.
func TestLockHeldBeyondTTLByItsBeat(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	handler := func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			if job.Params == "long" {
				time.Sleep(testLockTTL + 2*time.Second)
			}
			return nil
		})
	}
	e.start(Config{ID: "w1", LockTTL: testLockTTL}, handler)
	e.start(Config{ID: "w2", LockTTL: testLockTTL}, handler)
	tr := trigger(1, "h", "long")
	tr.JobID = 7
	e.publish(tr)
	ev.waitFor("run 1 to start", func() bool {
		return slices.ContainsFunc(ev.run(1), func(x wire.Event) bool { return x.Kind == wire.EventStarted })
	})
	tr = trigger(2, "h", "")
	tr.JobID = 7
	e.publish(tr)
	got := ev.waitFinished(1, 2)
	if got[1].Status != wire.StatusSucceeded || got[2].Status != wire.StatusSucceeded {
		t.Fatalf("runs 1 and 2: %s %q, %s %q; want both SUCCEEDED", got[1].Status, got[1].Message, got[2].Status, got[2].Message)
	}
	var started2 time.Time
	for _, x := range ev.run(2) {
		if x.Kind == wire.EventStarted {
			started2 = x.At
		}
	}
	if started2.Before(got[1].At) {
		t.Errorf("run 2 started at %s, before run 1 ended at %s: the job's runs overlapped", started2, got[1].At)
	}
}

// runJob7 runs run id of job 7 and waits until it has left the worker (the
// next one must not overlap it: it would queue, a write of its own).
func (e *env) runJob7(ev *events, r *running, id int64) {
	e.t.Helper()
	tr := trigger(id, "h", "")
	tr.JobID = 7
	e.publish(tr)
	ev.waitFinished(id)
	testwait.Eventually(e.t, waitLimit, fmt.Sprint("run ", id, " to leave the worker"), func() bool { return !r.w.runActive(id) })
}

func (e *env) lockKV() jetstream.KeyValue {
	e.t.Helper()
	kv, err := e.js.KeyValue(e.ctx(), stream.LocksBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	return kv
}

// lockWrites counts the writes to the job lock bucket so far.
func (e *env) lockWrites() uint64 { return e.streamState("KV_" + stream.LocksBucket).LastSeq }

func (e *env) wantLockHolder(r *running, run int64) {
	e.t.Helper()
	entry, err := e.lockKV().Get(e.ctx(), lockKey(7))
	if err != nil {
		e.t.Fatal(err)
	}
	var v lockValue
	if err := json.Unmarshal(entry.Value(), &v); err != nil || v.Holder != run || v.Worker != r.w.cfg.ID {
		e.t.Errorf("job lock: %s (%v), want run %d of this worker", entry.Value(), err, run)
	}
}

// A handler that panics ends its run FAILED with the panic's message (not
// its stack), and the worker goes on: a later run of another job on the
// same worker succeeds.
func TestPanicFailsRunAndWorkerGoesOn(t *testing.T) {
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
	testwait.Eventually(t, waitLimit, "both triggers to be acked", func() bool { return e.triggersLeft() == 0 })
}
