package joblock

import (
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
)

// A key's notifier wakes the waiters that have something to do: the run
// a lock is handed to (every waiter when it waits elsewhere), the runs
// that yield on any change that may end their yielding, all on all; a
// wake-up waits for its run (a token) until drained. It keeps no entry for
// a key nobody waits for.
func TestWakes(t *testing.T) {
	var ws wakes
	ws.all(key) // nobody waits: nothing to wake, nothing kept
	if ws.watched() != 0 {
		t.Fatal("a key nobody joined has a notifier")
	}
	chs := map[int64]chan struct{}{2: ws.join(key, 2), 3: ws.join(key, 3), 4: ws.join(key, 4)}
	other := ws.join("job.8", 2)
	ws.yield(key, 4, true)
	check := func(what string, woken ...int64) {
		t.Helper()
		for run, ch := range chs {
			got := false
			select {
			case <-ch:
				got = true
			default:
			}
			if want := slices.Contains(woken, run); got != want {
				t.Errorf("%s: run %d woken %v, want %v", what, run, got, want)
			}
		}
	}
	ws.handedTo(key, 2)
	ws.handedTo(key, 2) // one token until drained
	check("handed to run 2", 2, 4)
	ws.yielders(key)
	check("a run here queued", 4)
	ws.yield(key, 4, false)
	ws.yielders(key)
	check("a run here queued, none yielding")
	ws.handedTo(key, 99)
	check("handed to a run elsewhere", 2, 3, 4)
	ws.all(key)
	check("all", 2, 3, 4)
	select {
	case <-other:
		t.Error("a waiter of another key was woken")
	default:
	}
	for run := range chs {
		ws.leave(key, run)
	}
	if ws.watched() != 1 {
		t.Error("the notifier of a key outlived its last waiter, or went with another key's")
	}
	ws.leave("job.8", 2)
	if ws.watched() != 0 {
		t.Error("a notifier outlived its last waiter")
	}
}

// wokenOnlyWorker is worker w1 whose waiters look at their lock only when
// woken: its polls never come in a test's time, and its TTL is beyond the
// test (no beat reads the key meanwhile).
func (e *env) wokenOnlyWorker() *worker {
	w := e.worker("w1", time.Hour)
	w.locks.poll, w.locks.pollLocal = time.Hour, time.Hour
	return w
}

// A run waiting on the worker of the run holding the lock takes it as soon
// as that run releases it, woken by the release rather than by a poll
// (here polls never come): the hand-on's read of the key and the waiter's
// one read, and nothing else.
func TestReleaseWakesLocalWaiter(t *testing.T) {
	for _, strategy := range []policy.Block{policy.BlockSerial, policy.BlockCoverEarly} {
		t.Run(string(strategy), func(t *testing.T) {
			e := newEnv(t)
			w := e.wokenOnlyWorker()
			s := e.script()
			s.arrive(w, 1)
			s.hold(1)
			s.on[2] = w
			s.asked[2] = w.acquire(req(2, s.t0.Add(time.Second), strategy))
			s.queue(2)
			before := w.locks.reads.Load()
			s.end(1)
			s.hold(2)
			if n := w.locks.reads.Load() - before; n > 2 {
				t.Errorf("%d reads of the key from the release to run 2 holding, want at most 2 (the hand-on's, the waiter's)", n)
			}
			s.end(2)
			if n := w.locks.wake.watched(); n != 0 {
				t.Errorf("%d keys still watched with nobody waiting", n)
			}
		})
	}
}

// A run given back its slot by a run of its worker is woken at once.
func TestSlotReleaseWakesLocalWaiter(t *testing.T) {
	e := newEnv(t)
	w := e.wokenOnlyWorker()
	t0 := time.Now()
	slot := func(run int64) Request {
		r := req(run, t0.Add(time.Duration(run)*time.Second), policy.BlockConcurrent)
		r.MaxConcurrency = 1
		return r
	}
	recv(t, "run 1's slot", w.acquire(slot(1)))
	r2 := w.acquire(slot(2))
	e.waitQueue(SlotsKey(job, 0, 0), 2)
	w.end(1)
	recv(t, "run 2's slot", r2)
	w.end(2)
}

// N runs of a serial job wait on the worker of the run holding its lock,
// and take it one after the other: each hand-on costs two reads of the key
// (the hand-on's own, and the one by the run it is handed to), the runs
// still waiting behind read nothing, and no waiter reads on a poll of its
// own (here polls never come). The counts are logged for the record (issue
// #27): with polls every 100 ms each waiter read the key ten times a
// second however long the runs ahead of it held the lock.
func TestLocalWaitersReads(t *testing.T) {
	const n = 8
	e := newEnv(t)
	w := e.wokenOnlyWorker()
	s := e.script()
	s.arrive(w, 1)
	s.hold(1)
	var queue []int64
	for run := int64(2); run <= n+1; run++ {
		s.arrive(w, run)
		queue = append(queue, run)
		s.queue(queue...)
	}
	queued := w.locks.reads.Load()
	for run := int64(1); run <= n; run++ {
		s.end(run)
		s.hold(run + 1)
	}
	s.end(n + 1)
	chain := w.locks.reads.Load() - queued
	t.Logf("%d local waiters: %d reads to queue, %d for the %d hand-ons", n, queued, chain, n)
	if want := int64(2 * n); chain > want {
		t.Errorf("%d reads for %d hand-ons, want at most %d", chain, n, want)
	}
	if got := w.locks.wake.watched(); got != 0 {
		t.Errorf("%d keys still watched with nobody waiting", got)
	}
}
