package joblock

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
)

// A key's notifier wakes every waiter that took its channel before the
// change, and only those; it keeps no entry for a key nobody waits for.
func TestWakes(t *testing.T) {
	var ws wakes
	ws.changed(key) // nobody waits: nothing to wake, nothing kept
	if ws.next(key) != nil || ws.watched() != 0 {
		t.Fatal("a key nobody joined has a notifier")
	}
	ws.join(key)
	ws.join(key)
	a, b := ws.next(key), ws.next(key)
	select {
	case <-a:
		t.Fatal("woken before any change")
	default:
	}
	ws.changed("job.8") // another key
	ws.changed(key)
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("a waiter was not woken by the change")
		}
	}
	c := ws.next(key)
	select {
	case <-c:
		t.Fatal("a channel taken after the change is closed already")
	default:
	}
	ws.leave(key)
	if ws.watched() != 1 {
		t.Fatal("the key's notifier went while a waiter was left")
	}
	ws.leave(key)
	if ws.watched() != 0 {
		t.Fatal("the key's notifier outlived its last waiter")
	}
}

// slowPolls makes w's waiters look at their lock only when woken: polls
// that never come in a test's time.
func slowPolls(w *worker) {
	w.locks.poll, w.locks.pollLocal = time.Hour, time.Hour
}

// A run waiting on the worker of the run holding the lock takes it as soon
// as that run releases it, woken by the release rather than by a poll
// (here polls never come): the hand-on's read of the key and the waiter's
// one read, and nothing else.
func TestReleaseWakesLocalWaiter(t *testing.T) {
	for _, strategy := range []policy.Block{policy.BlockSerial, policy.BlockCoverEarly} {
		t.Run(string(strategy), func(t *testing.T) {
			e := newEnv(t)
			// A TTL beyond the test: no beat reads the key meanwhile.
			w := e.worker("w1", time.Hour)
			slowPolls(w)
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
	w := e.worker("w1", time.Hour)
	slowPolls(w)
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
// and take it one after the other: a waiter reads the key when the run
// here ahead of it releases (woken) and when a run here writes the key,
// never on a poll of its own (here polls never come). The count is logged
// for the record (issue #27): with polls every 100 ms each waiter read the
// key ten times a second however long the runs ahead of it held the lock.
func TestLocalWaitersReads(t *testing.T) {
	const n = 8
	e := newEnv(t)
	w := e.worker("w1", time.Hour)
	slowPolls(w)
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
	// Each hand-on: its own read, and one read by each run still waiting.
	if want := int64(n + n*(n+1)/2); chain > want {
		t.Errorf("%d reads for %d hand-ons, want at most %d", chain, n, want)
	}
	if got := w.locks.wake.watched(); got != 0 {
		t.Errorf("%d keys still watched with nobody waiting", got)
	}
}
