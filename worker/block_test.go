package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/joblock"
)

// Block strategies, seen from the worker: the job lock protocol itself is
// tested in package joblock; these tests run it through whole workers.

// A capped concurrent job whose slots are all held by runs of a dead
// worker (they never beat) gets them back once their beats have not moved
// for Config.LockTTL (testLockTTL here), although waiting runs keep
// writing the key (so its expiry alone would never free it). Its runs then
// all run, never more than max_concurrency at once, and the slots key is
// gone when the last ends.
func TestSlotsOfDeadWorkerFreed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	var mu sync.Mutex
	active, peak := 0, 0
	r := e.start(Config{Concurrency: 16, LockTTL: testLockTTL}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			mu.Lock()
			active++
			peak = max(peak, active)
			mu.Unlock()
			defer func() { mu.Lock(); active--; mu.Unlock() }()
			select {
			case <-time.After(300 * time.Millisecond): // the run's work
			case <-ctx.Done():
			}
			return nil
		})
	})
	key := joblock.SlotsKey(7, 0, 0)
	ghost := []byte(`{"slots":[{"run":998,"worker":"gone","beat":1},{"run":999,"worker":"gone","beat":4}]}`)
	if _, err := e.lockKV().Create(e.ctx(), key, ghost); err != nil {
		t.Fatal(err)
	}
	ids := []int64{1, 2, 3, 4, 5}
	for _, id := range ids {
		tr := trigger(id, "h", "")
		tr.JobID, tr.BlockStrategy, tr.MaxConcurrency = 7, "concurrent", 2
		e.publish(tr)
	}
	wantSucceeded(t, ev.waitFinished(ids...))
	mu.Lock()
	defer mu.Unlock()
	if peak > 2 {
		t.Errorf("%d runs of a job with max_concurrency 2 ran at once", peak)
	}
	// Each run gives its slot back with a write before it is released.
	r.w.signals.locks.Released.WaitUntil(t, waitLimit, "the slots key deleted after the last run", func() bool {
		_, err := e.lockKV().Get(e.ctx(), key)
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
}

// A run of an unbounded concurrent job takes no lock: five runs of one job
// run at once.
func TestConcurrentRunsTakeNoLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	release := make(chan struct{})
	running := make(chan int64, 5)
	e.start(Config{Concurrency: 16}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			running <- job.RunID
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	})
	ids := []int64{1, 2, 3, 4, 5}
	for _, id := range ids {
		tr := trigger(id, "h", "")
		tr.JobID, tr.BlockStrategy = 7, "concurrent"
		e.publish(tr)
	}
	for n := range len(ids) {
		recv(t, fmt.Sprintf("%d runs of one job executing at once", n+1), running)
	}
	close(release)
	ev.waitFinished(ids...)
	for _, k := range []string{joblock.Key(7, 0, 0), joblock.SlotsKey(7, 0, 0)} {
		if _, err := e.lockKV().Get(e.ctx(), k); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("lock key %s written (%v)", k, err)
		}
	}
}

// A lock whose holder's worker is gone (it cannot be asked and never
// refreshes) is taken over once the holder has not beaten for
// Config.LockTTL (testLockTTL here), even while later runs keep joining its queue: each such
// write resets the key's age, so its expiry alone would never free it.
func TestLockOfDeadWorkerTakenOver(t *testing.T) {
	t.Parallel()
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
	ghost := []byte(`{"holder":999,"worker":"gone","beat":3}`)
	if _, err := kv.Create(e.ctx(), joblock.Key(7, 0, 0), ghost); err != nil {
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
	wantSucceeded(t, ev.waitFinished(ids...))
}

// Runs of a job that do not overlap and land on one worker write the job
// lock once: a run that ends leaves the lock naming it, and the job's next
// run here holds it under that name while it is young. A stopping worker
// frees the locks its runs left.
func TestLockWrittenOnceForRunsOnOneWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	r := e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error { return nil })
	})
	for i := int64(1); i <= 3; i++ {
		e.runJob7(ev, r, i)
	}
	e.wantLockWrites(1, "3 runs: only the first writes")
	e.wantLockHolder(r, 1)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lockKV().Get(e.ctx(), joblock.Key(7, 0, 0)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("lock after the worker stopped: %v, want it deleted", err)
	}
}

// A worker asked by another whether the run its job lock names is active
// says yes while a later run holds the lock under that name, and once it
// has been asked, the job's next run here writes the lock again: an asker
// told "not active" may have taken the key meanwhile.
func TestLockReusedOnlyUntilAsked(t *testing.T) {
	t.Parallel()
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
	e.wantLockWrites(1, "run 2 must not write it")
	if !ask(1) {
		t.Error("asked about run 1 while run 2 holds the lock under its name: not busy, want busy")
	}
	close(unblock)
	ev.waitFinished(2)
	r.waitProcessed(2)
	if ask(1) {
		t.Error("asked about run 1 after run 2 ended: busy, want not busy")
	}
	e.runJob7(ev, r, 3)
	e.wantLockWrites(2, "run 3 takes it over")
	e.wantLockHolder(r, 3)

	// The question about run 1 came before run 3 took the lock over: it
	// does not make run 3's hold contended, and run 4 holds the lock run 3
	// left without a write. A question about the run the key names (3),
	// left here and held by nobody, makes the next run here write
	// (joblock's tests check which questions count).
	e.runJob7(ev, r, 4)
	e.wantLockWrites(2, "run 4 holds it as run 3")
	if ask(3) {
		t.Error("asked about run 3 after runs 3 and 4 ended: busy, want not busy")
	}
	e.runJob7(ev, r, 5)
	e.wantLockWrites(3, "run 5 takes it over")
	e.wantLockHolder(r, 5)
}

// A run that outlasts the lock's TTL keeps its job lock by beating: the
// job's next run, on whichever worker it lands, waits for it to end rather
// than taking over a lock that looks abandoned.
func TestLockHeldBeyondTTLByItsBeat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	release := make(chan struct{})
	handler := func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			if job.Params == "long" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
	}
	// One set of lock signals for both workers: run 2 waits on either.
	var locks joblock.TestSignals
	locks.Init(t)
	withLocks := func(w *Worker) { handler(w); w.signals.locks = locks }
	e.start(Config{ID: "w1", LockTTL: testLockTTL}, withLocks)
	e.start(Config{ID: "w2", LockTTL: testLockTTL}, withLocks)
	tr := trigger(1, "h", "long")
	tr.JobID = 7
	e.publish(tr)
	ev.waitFor("run 1 to start", func() bool {
		return slices.ContainsFunc(ev.run(1), func(x wire.Event) bool { return x.Kind == wire.EventStarted })
	})
	tr = trigger(2, "h", "")
	tr.JobID = 7
	e.publish(tr)
	// Run 1 ends only once it has held the lock for longer than the TTL
	// while run 2 waited: four beats after run 2 joined the queue are at
	// least three beat intervals (TTL/3 each), a whole TTL, after it first
	// saw the holder, and a still holder would have been taken over by then.
	// (If run 2 takes the lock over meanwhile, the wait ends too, and the
	// overlap is reported below.)
	locks.Waiting.WaitFor(t, waitLimit, "run 2 to wait for the lock", func(run int64) bool { return run == 2 })
	v := e.lockValue(7)
	if v.Holder != 1 || !slices.ContainsFunc(v.Queue, func(q struct{ Run int64 }) bool { return q.Run == 2 }) {
		t.Fatalf("job lock %+v once run 2 waits, want run 1 holding and run 2 queued", v)
	}
	joined := v.Beat
	locks.Beat.WaitFor(t, waitLimit, "run 1 to beat four times while run 2 waits for its lock (else run 2 took it over)",
		func(b joblock.Beat) bool { return b.Run == 1 && b.Beat >= joined+4 })
	if held := e.lockValue(7); held.Holder != 1 {
		t.Errorf("job lock %+v after run 1's fourth beat, want run 1 still holding it", held)
	}
	close(release)
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
	r.waitProcessed(id)
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

// wantLockWrites checks that the job lock was written want times so far;
// why says why that many.
func (e *env) wantLockWrites(want uint64, why string) {
	e.t.Helper()
	if n := e.lockWrites(); n != want {
		e.t.Errorf("the job lock was written %d times, want %d (%s)", n, want, why)
	}
}

// lockShape is the part of a job lock's value (docs/protocol.md, "Job
// locks") the tests look at.
type lockShape struct {
	Holder int64
	Worker string
	Beat   int64
	Queue  []struct{ Run int64 }
}

// lockValue reads job's lock, the zero value if it has none.
func (e *env) lockValue(job int64) lockShape {
	e.t.Helper()
	var v lockShape
	entry, err := e.lockKV().Get(e.ctx(), joblock.Key(job, 0, 0))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return v
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(entry.Value(), &v); err != nil {
		e.t.Fatalf("job lock %s: %v", entry.Value(), err)
	}
	return v
}

func (e *env) wantLockHolder(r *running, run int64) {
	e.t.Helper()
	entry, err := e.lockKV().Get(e.ctx(), joblock.Key(7, 0, 0))
	if err != nil {
		e.t.Fatal(err)
	}
	var v lockShape
	if err := json.Unmarshal(entry.Value(), &v); err != nil || v.Holder != run || v.Worker != r.w.cfg.ID {
		e.t.Errorf("job lock: %s (%v), want run %d of this worker", entry.Value(), err, run)
	}
}
