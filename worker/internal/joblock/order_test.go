package joblock

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
)

// A run that takes the lock over with others still queued behind it holds
// a contended lock: when it ends, its worker neither leaves the lock for
// its next run to hold without a write nor lets that run write over the
// queue, even when the waiters' questions never reach it (its control
// responder fails, as under heavy load): the next in line gets the lock.
func TestTakeOverKeepsQueue(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	w1.ctl.Stop()
	key := Key(job, 0, 0)
	t0 := time.Now()
	recv(t, "run 1's lock", w2.acquire(req(1, t0, "")))
	e.nextHold(1)
	r2 := w1.acquire(req(2, t0.Add(time.Second), ""))
	e.waitQueue(key, 2)
	r3 := w2.acquire(req(3, t0.Add(2*time.Second), ""))
	e.waitQueue(key, 2, 3)
	w2.end(1)
	recv(t, "run 2 to take the lock over", r2) // w2 answers that run 1 ended
	e.nextHold(2)
	w1.end(2)
	r4 := w1.acquire(req(4, t0.Add(3*time.Second), ""))
	e.nextHold(3)
	recv(t, "run 3's lock", r3)
	pending(t, "run 4 while run 3 holds the lock", r4)
	w2.end(3)
	recv(t, "run 4's lock", r4)
	e.nextHold(4)
	w1.end(4)
}

// A holder's beat that finds runs queued makes its lock contended: when
// the run ends, the lock goes to the first in line, not to the next run
// of its worker — whether that run would hold it without a write (young)
// or write over the revision the beat left (reuseFor passed).
func TestBeatSeesQueue(t *testing.T) {
	for _, c := range []struct {
		name  string
		reuse bool
	}{{"reuse", true}, {"take", false}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			w1, w2 := e.worker("w1", testTTL), e.worker("w2", stream.LockTTL)
			if !c.reuse {
				w1.locks.held.reuseFor = 0 // as if the lock were older than reuseFor
			}
			w1.ctl.Stop() // run 2's questions never reach w1
			key := Key(job, 0, 0)
			t0 := time.Now()
			recv(t, "run 1's lock", w1.acquire(req(1, t0, "")))
			e.nextHold(1)
			r2 := w2.acquire(req(2, t0.Add(time.Second), ""))
			e.waitQueue(key, 2)
			joined := e.value(key).Beat
			e.signals.Beat.WaitFor(t, waitLimit, "run 1 to beat over the queue", func(b Beat) bool {
				return b.Run == 1 && b.Beat > joined
			})
			w1.end(1)
			r3 := w1.acquire(req(3, t0.Add(2*time.Second), ""))
			e.nextHold(2)
			recv(t, "run 2's lock", r2)
			pending(t, "run 3 while run 2 holds the lock", r3)
			w2.end(2)
			recv(t, "run 3's lock", r3)
			e.nextHold(3)
			w1.end(3)
		})
	}
}

// A waiter whose questions never reach the holder's worker (its control
// responder fails) and that would not see the holder stale for a long
// time still gets the lock once a later run of the holder's worker reads
// the key: that run knows the holder ended and hands the lock to the first
// in line instead of waiting behind it.
func TestFailingResponderHandsOn(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", time.Hour)
	w1.locks.held.reuseFor = 0 // run 1's lock is older than reuseFor when run 3 comes
	w1.ctl.Stop()
	key := Key(job, 0, 0)
	t0 := time.Now()
	recv(t, "run 1's lock", w1.acquire(req(1, t0, "")))
	e.nextHold(1)
	r2 := w2.acquire(req(2, t0.Add(time.Second), ""))
	e.waitQueue(key, 2)
	w1.end(1)
	r3 := w1.acquire(req(3, t0.Add(2*time.Second), ""))
	e.nextHold(2)
	recv(t, "run 2's lock", r2)
	pending(t, "run 3 while run 2 holds the lock", r3)
	w2.end(2)
	recv(t, "run 3's lock", r3)
	e.nextHold(3)
	w1.end(3)
}

// Runs of a serial job arrive in fire order on two workers, some while the
// lock is held (they queue behind the holder, on its worker or the
// other), some while it is free (the job's last run here left it: reused
// without a write, or taken over): they take it in fire order, and none
// while an earlier fire waits (nextHold). Also when one worker's control
// responder fails, as under heavy load, so that the other's questions go
// unanswered: contended locks are handed on at their end, and a run of the
// silent worker that finds its ended run holding the lock hands it to the
// first in line. (That worker's runs would reuse a lock for up to reuseFor
// after its last write while a waiter it has not heard of is queued — the
// documented exception —, so here they always write.)
func TestSerialFireOrderAcrossWorkers(t *testing.T) {
	for _, silent := range []bool{false, true} {
		name := "answering"
		if silent {
			name = "w1_silent"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
			if silent {
				w1.ctl.Stop()
				w1.locks.held.reuseFor = 0
			}
			key := Key(job, 0, 0)
			t0 := time.Now()
			on := map[int64]*worker{}
			asked := map[int64]<-chan result{}
			arrive := func(w *worker, run int64) {
				on[run] = w
				asked[run] = w.acquire(req(run, t0.Add(time.Duration(run)*time.Second), policy.BlockSerial))
			}
			hold := func(run int64) {
				t.Helper()
				e.nextHold(run)
				recv(t, fmt.Sprintf("run %d's lock", run), asked[run])
			}
			end := func(run int64) { on[run].end(run) }

			arrive(w1, 1)
			hold(1)
			arrive(w2, 2) // queues behind a holder elsewhere
			e.waitQueue(key, 2)
			arrive(w1, 3) // queues behind a holder on its worker
			e.waitQueue(key, 2, 3)
			end(1)
			hold(2) // takes over with run 3 queued behind it
			arrive(w2, 4)
			e.waitQueue(key, 3, 4)
			end(2)
			hold(3)
			end(3)
			hold(4)
			end(4)
			arrive(w2, 5) // free: reuses the lock run 4 left on w2
			hold(5)
			arrive(w1, 6)
			e.waitQueue(key, 6)
			arrive(w2, 7)
			e.waitQueue(key, 6, 7)
			end(5)
			hold(6) // takes over with run 7 queued behind it
			end(6)  // at once: run 7 may not have asked w1 about run 6 yet
			arrive(w1, 8)
			hold(7)
			e.waitQueue(key, 8)
			end(7)
			hold(8)
			end(8)
			arrive(w1, 9) // free: takes over from run 8 on w2
			hold(9)
			arrive(w2, 10) // its questions go unanswered when w1 is silent
			e.waitQueue(key, 10)
			end(9)
			arrive(w1, 11)
			hold(10)
			e.waitQueue(key, 11)
			end(10)
			hold(11)
			end(11)
		})
	}
}
