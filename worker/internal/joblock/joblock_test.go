package joblock

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
)

// Runs of a serial job on two workers take the lock one at a time, in fire
// order whatever order they asked in: the holder's worker answers that its
// run ended, and the first waiter takes over.
func TestSerialRunsInFireOrder(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	t0 := time.Now()
	if r := recv(t, "run 1's lock", w1.acquire(req(1, t0, ""))); r.waited {
		t.Error("run 1 found the free lock held")
	}
	// Run 3, a later fire, asks first; run 2 still goes before it.
	r3 := w2.acquire(req(3, t0.Add(2*time.Second), policy.BlockSerial))
	e.waitQueue(Key(job, 0, 0), 3)
	r2 := w2.acquire(req(2, t0.Add(time.Second), policy.BlockSerial))
	e.waitQueue(Key(job, 0, 0), 2, 3)
	pending(t, "run 2 while run 1 holds the lock", r2)

	w1.end(1)
	if r := recv(t, "run 2 to take the lock over", r2); !r.waited {
		t.Error("run 2 waited but says it did not")
	}
	if v := e.value(Key(job, 0, 0)); v.Holder != 2 || v.Worker != "w2" || !slices.Equal(v.queue(), []int64{3}) {
		t.Errorf("lock %+v, want run 2 of w2 holding, run 3 waiting", v)
	}
	pending(t, "run 3 while run 2 holds the lock", r3)

	w2.end(2)
	recv(t, "run 3 to take the lock over", r3)
	if v := e.value(Key(job, 0, 0)); v.Holder != 3 || len(v.Queue) != 0 {
		t.Errorf("lock %+v, want run 3 holding, nobody waiting", v)
	}
	w2.end(3)
}

// A lock whose holder's worker is gone (it cannot be asked and never
// beats) is taken over once the holder has been still for the TTL, not
// before.
func TestDeadHolderTakenOverAfterTTL(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", testTTL)
	if _, err := e.kv.Create(e.ctx(), Key(job, 0, 0), []byte(`{"holder":999,"worker":"gone","beat":3}`)); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	r := recv(t, "the dead holder's lock", w.acquire(req(1, asked, policy.BlockSerial)))
	if took := time.Since(asked); took < testTTL {
		t.Errorf("lock taken over %s after asking, before the TTL %s", took, testTTL)
	}
	if v := e.value(Key(job, 0, 0)); v.Holder != 1 || v.Worker != "w1" || v.Beat != 0 || !r.waited {
		t.Errorf("lock %+v (waited %v), want run 1 of w1 holding at beat 0 after a wait", v, r.waited)
	}
	w.end(1)
}

// A live holder keeps its lock beyond the TTL by beating: a waiter on
// another worker whose questions go unanswered (the holder's worker is cut
// off from control) still waits while the beat moves.
func TestLiveHolderKeepsLockByBeating(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", testTTL), e.worker("w2", testTTL)
	w1.ctl.Stop() // only the beat tells w2 that run 1 is alive
	t0 := time.Now()
	recv(t, "run 1's lock", w1.acquire(req(1, t0, "")))
	r2 := w2.acquire(req(2, t0.Add(time.Second), ""))
	e.waitQueue(Key(job, 0, 0), 2)
	// Four beats after run 2 joined are three beat intervals (TTL/3 each),
	// a whole TTL, after it first saw the holder: a still holder would
	// have been taken over by then.
	joined := e.value(Key(job, 0, 0)).Beat
	e.signals.Beat.WaitFor(t, waitLimit, "run 1 to beat four times (else its lock was taken over)", func(b Beat) bool {
		return b.Run == 1 && b.Beat >= joined+4
	})
	pending(t, "run 2 while run 1 beats", r2)
	if v := e.value(Key(job, 0, 0)); v.Holder != 1 {
		t.Fatalf("lock %+v, want run 1 still holding", v)
	}
	w1.end(1)
	// Its worker does not answer: run 2 takes the lock once it is still.
	recv(t, "run 2 to take the lock of the ended run over", r2)
	w2.end(2)
}

// A stopping worker hands a lock its ended run left, and someone waits
// for, to the first waiter at once: the waiter does not have to wait for it
// to go stale, nor ask a worker that is about to go.
func TestStopHandsLockOn(t *testing.T) {
	e := newEnv(t)
	w1, w2, t0 := e.run1Holding()
	r2 := w2.acquire(req(2, t0.Add(time.Second), ""))
	e.waitQueue(Key(job, 0, 0), 2) // run 2 asked w1 about run 1 first: w1's lock is contended
	w1.ctl.Stop()                  // from now on only the hand-over can give run 2 the lock in time
	w1.end(1)
	stopped := time.Now()
	w1.locks.Stop(e.ctx())
	recv(t, "run 2 to get the lock handed on", r2)
	if wait := time.Since(stopped); wait >= stream.LockTTL/2 {
		t.Errorf("run 2 got the lock %s after the stop, want well within %s (it went stale instead)", wait, stream.LockTTL/2)
	}
	if v := e.value(Key(job, 0, 0)); v.Holder != 2 || v.Worker != "w2" || len(v.Queue) != 0 {
		t.Errorf("lock %+v, want run 2 of w2 holding", v)
	}
	w2.end(2)
}

// A stopping worker deletes the locks its ended runs left that nobody
// waits for.
func TestStopDeletesLeftLocks(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", stream.LockTTL)
	recv(t, "run 1's lock", w.acquire(req(1, time.Now(), "")))
	w.end(1)
	if v := e.value(Key(job, 0, 0)); v.Holder != 1 {
		t.Fatalf("lock %+v, want it left naming run 1", v)
	}
	w.locks.Stop(e.ctx())
	if _, err := e.kv.Get(e.ctx(), Key(job, 0, 0)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("left lock after the stop: %v, want it deleted", err)
	}
}

// A serial job's runs that follow each other on one worker write the lock
// once: the next run holds it under the name of the one that left it.
func TestLockReusedWithoutWrite(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", stream.LockTTL)
	recv(t, "run 1's lock", w.acquire(req(1, time.Now(), "")))
	w.end(1)
	r := recv(t, "run 2's lock", w.acquire(req(2, time.Now(), "")))
	// Counting the bucket's writes here would race run 2's first beat,
	// due TTL/12 after it took the lock: the name it holds the lock under
	// says that it wrote nothing.
	if r.lock.as != 1 {
		t.Errorf("run 2 holds the lock as run %d, want as run 1 (reused without a write)", r.lock.as)
	}
	if v := e.value(Key(job, 0, 0)); v.Holder != 1 {
		t.Errorf("lock %+v, want it still naming run 1", v)
	}
	w.end(2)
}

// A waiting run that is interrupted (killed, its worker stopping) gives
// its place up and gets Interrupt's error back.
func TestInterruptedWaiterLeavesQueue(t *testing.T) {
	e := newEnv(t)
	w1, w2, t0 := e.run1Holding()
	errKilled := errors.New("killed")
	var mu sync.Mutex
	var stop error
	rq := req(2, t0.Add(time.Second), "")
	rq.Interrupt = func() error {
		mu.Lock()
		defer mu.Unlock()
		return stop
	}
	r2 := w2.acquire(rq)
	e.waitQueue(Key(job, 0, 0), 2)
	mu.Lock()
	stop = errKilled
	mu.Unlock()
	select {
	case r := <-r2:
		if !errors.Is(r.err, errKilled) || r.lock != nil || !r.waited {
			t.Errorf("interrupted wait: %+v, want the interrupt's error after a wait", r)
		}
	case <-time.After(waitLimit):
		t.Fatal("interrupted run still waiting")
	}
	if q := e.value(Key(job, 0, 0)).queue(); len(q) != 0 {
		t.Errorf("queue %v after run 2 gave up, want empty", q)
	}
	w1.end(1)
}

// A run that gives up after the lock was handed to it hands it on to the
// next waiter, or deletes it when nobody waits.
func TestLeaveQueueHandsOn(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", stream.LockTTL)
	key := Key(job, 0, 0)
	if _, err := e.kv.Create(e.ctx(), key, []byte(`{"holder":2,"worker":"w1","queue":[{"run":3,"at":1,"worker":"w2"}]}`)); err != nil {
		t.Fatal(err)
	}
	w.locks.leaveQueue(e.ctx(), key, 2)
	if v := e.value(key); v.Holder != 3 || v.Worker != "w2" || len(v.Queue) != 0 {
		t.Errorf("lock %+v, want it handed to run 3 of w2", v)
	}
	w.locks.leaveQueue(e.ctx(), key, 3)
	if _, err := e.kv.Get(e.ctx(), key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("lock after its last run gave up: %v, want it deleted", err)
	}
}

// discard_later turns a run away while the job's lock is held.
func TestDiscardLater(t *testing.T) {
	e := newEnv(t)
	w1, w2, _ := e.run1Holding()
	var r result
	select {
	case r = <-w2.acquire(req(2, time.Now(), policy.BlockDiscardLater)):
	case <-time.After(waitLimit):
		t.Fatal("discard_later run still waiting")
	}
	var d *DiscardedError
	if !errors.As(r.err, &d) || d.Holder != 1 || r.lock != nil {
		t.Fatalf("discard_later: %+v, want a DiscardedError naming run 1", r)
	}
	if want := "discarded: run 1 of this job is still active (block strategy discard_later)"; d.Error() != want {
		t.Errorf("message %q, want %q", d.Error(), want)
	}
	w1.end(1)
}

// buffer_one lets one run wait behind the holder and turns away another
// while it waits, naming both; the one waiting runs next.
func TestBufferOne(t *testing.T) {
	e := newEnv(t)
	w1, w2, _ := e.run1Holding()
	r2 := w2.acquire(req(2, time.Now(), policy.BlockBufferOne))
	e.waitQueue(Key(job, 0, 0), 2)
	var r result
	select {
	case r = <-w1.acquire(req(3, time.Now(), policy.BlockBufferOne)):
	case <-time.After(waitLimit):
		t.Fatal("a second run waiting behind the holder under buffer_one")
	}
	var d *DiscardedError
	if !errors.As(r.err, &d) || d.Holder != 1 || d.Waiting != 2 || r.lock != nil {
		t.Fatalf("buffer_one with run 2 waiting: %+v, want a DiscardedError naming runs 1 and 2", r)
	}
	if want := "discarded: run 1 of this job is active and run 2 waits behind it (block strategy buffer_one)"; d.Error() != want {
		t.Errorf("message %q, want %q", d.Error(), want)
	}
	w1.end(1)
	recv(t, "run 2's lock", r2)
	w2.end(2)
}

// cover_early asks for the holder to be killed, then runs next.
func TestCoverEarly(t *testing.T) {
	e := newEnv(t)
	w1, w2, _ := e.run1Holding()
	r2 := w2.acquire(req(2, time.Now(), policy.BlockCoverEarly))
	e.waitQueue(Key(job, 0, 0), 2)
	w2.mu.Lock()
	reason := w2.kills[1]
	w2.mu.Unlock()
	if want := "covered by run 2 (block strategy cover_early)"; reason != want {
		t.Errorf("kill request for run 1: %q, want %q", reason, want)
	}
	w1.end(1) // the kill took effect
	recv(t, "run 2's lock", r2)
	w2.end(2)
}

// A concurrent job with max_concurrency 2 runs two at a time: the third
// run waits for a slot, which is given back when a run ends; the slots key
// is deleted when the last run ends. Without a cap no lock is taken.
func TestSlots(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	slot := func(run int64, at time.Time) Request {
		r := req(run, at, policy.BlockConcurrent)
		r.MaxConcurrency = 2
		return r
	}
	t0 := time.Now()
	recv(t, "run 1's slot", w1.acquire(slot(1, t0)))
	recv(t, "run 2's slot", w2.acquire(slot(2, t0.Add(time.Second))))
	r3 := w2.acquire(slot(3, t0.Add(2*time.Second)))
	key := SlotsKey(job, 0, 0)
	e.waitQueue(key, 3)
	pending(t, "run 3 while both slots are held", r3)
	w1.end(1)
	if r := recv(t, "run 3's slot", r3); !r.waited {
		t.Error("run 3 waited but says it did not")
	}
	w2.end(2)
	w2.end(3)
	if _, err := e.kv.Get(e.ctx(), key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("slots key after the last run: %v, want it deleted", err)
	}

	free := req(4, t0, policy.BlockConcurrent)
	if r := recv(t, "an uncapped concurrent run", w1.acquire(free)); r.lock != nil {
		t.Errorf("uncapped concurrent run took lock %s", r.lock.key)
	}
}

// Slots held by runs of a dead worker (their beats never move) are dropped
// once their beats have been still for the TTL.
func TestDeadSlotsDropped(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", testTTL)
	key := SlotsKey(job, 0, 0)
	if _, err := e.kv.Create(e.ctx(), key, []byte(`{"slots":[{"run":998,"worker":"gone","beat":1},{"run":999,"worker":"gone","beat":4}]}`)); err != nil {
		t.Fatal(err)
	}
	rq := req(1, time.Now(), policy.BlockConcurrent)
	rq.MaxConcurrency = 2
	asked := time.Now()
	recv(t, "a slot of the dead runs", w.acquire(rq))
	if took := time.Since(asked); took < testTTL {
		t.Errorf("slot taken %s after asking, before the TTL %s", took, testTTL)
	}
	if v := e.value(key); len(v.Slots) != 1 || v.Slots[0].Run != 1 {
		t.Errorf("slots %+v, want run 1's alone", v.Slots)
	}
	w.end(1)
}

// Parts of a sharding-broadcast fire lock per part; keys are one token.
func TestKeys(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Key(7, 0, 0), "job.7"},
		{Key(7, 2, 4), "job.7_part2"},
		{SlotsKey(7, 0, 0), "job.7_slots"},
		{SlotsKey(7, 1, 3), "job.7_part1_slots"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
}
