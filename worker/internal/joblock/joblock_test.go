package joblock

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/worker/internal/control"
	"github.com/jetjob/jetjob/worker/internal/testnats"
)

const waitLimit = testnats.WaitLimit

// testTTL is the TTL of the tests that wait for a holder to go stale: 2s,
// not the default 6s, yet beats (every 2/3 s) keep a live holder's lock
// through the stalls of a loaded -race run.
const testTTL = 2 * time.Second

const job = 7

// env is one embedded NATS server with the locks bucket.
type env struct {
	*testnats.Env
	t  *testing.T
	kv jetstream.KeyValue
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Env: testnats.New(t), t: t}
	var err error
	if e.kv, err = stream.Locks(e.Ctx(), e.JS, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) ctx() context.Context { return e.Ctx() }

// worker is one worker's Locks, with the parts of a worker they ask: its
// run table (active) and its control server, which answers run_active
// from the locks and the table as the real worker does.
type worker struct {
	t     *testing.T
	id    string
	locks *Locks
	ctl   *control.Server

	mu     sync.Mutex
	active map[int64]bool
	held   map[int64]*Lock
	kills  map[int64]string // kill requests made (cover_early)
}

func (e *env) worker(id string, ttl time.Duration) *worker {
	e.t.Helper()
	nc := e.Connect()
	w := &worker{t: e.t, id: id, active: map[int64]bool{}, held: map[int64]*Lock{}, kills: map[int64]string{}}
	w.locks = New(Config{
		NATS: nc, KV: e.kv, WorkerID: id, TTL: ttl, Logger: zaptest.NewLogger(e.t),
		Active: w.isActive,
		Kill: func(_ context.Context, run int64, reason string) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.kills[run] = reason
			return nil
		},
	})
	ctl, err := control.Serve(nc, id, w, zaptest.NewLogger(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	w.ctl = ctl
	e.t.Cleanup(func() {
		ctl.Stop()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, l := range w.held {
			l.Release() // no beat may log after the test
		}
	})
	return w
}

func (w *worker) isActive(run int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active[run]
}

func (w *worker) RunsJob(int64) bool { return false }

func (w *worker) RunActive(job int64, lock string, run int64) bool {
	holds := w.locks.Asked(job, lock, run)
	return holds || w.isActive(run)
}

type result struct {
	lock   *Lock
	waited bool
	err    error
}

// acquire asks for run's lock in a goroutine, the run counting as active
// here from now on, as it is in a worker's run table while it waits.
func (w *worker) acquire(req Request) <-chan result {
	w.mu.Lock()
	w.active[req.Run] = true
	w.mu.Unlock()
	out := make(chan result, 1)
	go func() {
		l, waited, err := w.locks.Acquire(context.Background(), req)
		if l != nil {
			w.mu.Lock()
			w.held[req.Run] = l
			w.mu.Unlock()
		}
		out <- result{l, waited, err}
	}()
	return out
}

// end ends run as a worker does: the lock is released, then the run leaves
// the table.
func (w *worker) end(run int64) {
	w.mu.Lock()
	l := w.held[run]
	delete(w.held, run)
	w.mu.Unlock()
	l.Release()
	w.mu.Lock()
	delete(w.active, run)
	w.mu.Unlock()
}

func req(run int64, at time.Time, strategy policy.Block) Request {
	return Request{Run: run, Job: job, FireAt: at, Strategy: strategy}
}

func recv(t *testing.T, what string, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r
	case <-time.After(waitLimit):
		t.Fatalf("timed out after %s waiting for %s", waitLimit, what)
		panic("unreachable")
	}
}

func pending(t *testing.T, what string, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: returned %+v, want it still waiting", what, r)
	default:
	}
}

// value reads key, the zero value when it is absent.
func (e *env) value(key string) value {
	e.t.Helper()
	var v value
	entry, err := e.kv.Get(e.ctx(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return v
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(entry.Value(), &v); err != nil {
		e.t.Fatalf("lock %s holds %s: %v", key, entry.Value(), err)
	}
	return v
}

func (v value) queue() []int64 {
	var q []int64
	for _, w := range v.Queue {
		q = append(q, w.Run)
	}
	return q
}

// waitQueue waits until the job's lock queues exactly runs, in order.
func (e *env) waitQueue(runs ...int64) {
	e.t.Helper()
	testwait.Eventually(e.t, waitLimit, "the queue to be "+fmtRuns(runs), func() bool {
		return slices.Equal(e.value(Key(job, 0, 0)).queue(), runs)
	})
}

func fmtRuns(runs []int64) string {
	b, _ := json.Marshal(runs)
	return string(b)
}

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
	e.waitQueue(3)
	r2 := w2.acquire(req(2, t0.Add(time.Second), policy.BlockSerial))
	e.waitQueue(2, 3)
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
	e.waitQueue(2)
	// Four beats after run 2 joined are three beat intervals (TTL/3 each),
	// a whole TTL, after it first saw the holder: a still holder would
	// have been taken over by then.
	joined := e.value(Key(job, 0, 0)).Beat
	testwait.Eventually(t, waitLimit, "run 1 to beat four times", func() bool {
		v := e.value(Key(job, 0, 0))
		if v.Holder != 1 {
			t.Fatalf("lock %+v: run 1's lock taken over while it beats", v)
		}
		return v.Beat >= joined+4
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
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	t0 := time.Now()
	recv(t, "run 1's lock", w1.acquire(req(1, t0, "")))
	r2 := w2.acquire(req(2, t0.Add(time.Second), ""))
	e.waitQueue(2) // run 2 asked w1 about run 1 first: w1's lock is contended
	w1.ctl.Stop()  // from now on only the hand-over can give run 2 the lock in time
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
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	t0 := time.Now()
	recv(t, "run 1's lock", w1.acquire(req(1, t0, "")))
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
	e.waitQueue(2)
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
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	recv(t, "run 1's lock", w1.acquire(req(1, time.Now(), "")))
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

// cover_early asks for the holder to be killed, then runs next.
func TestCoverEarly(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	recv(t, "run 1's lock", w1.acquire(req(1, time.Now(), "")))
	r2 := w2.acquire(req(2, time.Now(), policy.BlockCoverEarly))
	e.waitQueue(2)
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
	testwait.Eventually(t, waitLimit, "run 3 to queue for a slot", func() bool {
		return slices.Equal(e.value(key).queue(), []int64{3})
	})
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
