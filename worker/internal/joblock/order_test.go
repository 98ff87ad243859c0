package joblock

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/stream"
)

// The order in which the runs of a serial job take its lock: fire order,
// whichever worker they wait on, even when one worker does not hear the
// other's questions (its control responder fails, as under heavy load).

// A run that takes the lock over with others still queued behind it holds
// a contended lock: when it ends, its worker neither leaves the lock for
// its next run to hold without a write nor lets that run write over the
// queue, even when the waiters' questions never reach it: the next in line
// gets the lock.
func TestTakeOverKeepsQueue(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	w1.ctl.Stop()
	s := e.script()
	s.arrive(w2, 1)
	s.hold(1)
	s.arrive(w1, 2)
	s.queue(2)
	s.arrive(w2, 3)
	s.queue(2, 3)
	s.end(1)
	s.hold(2) // w2 answers that run 1 ended
	s.end(2)
	s.arrive(w1, 4)
	s.hold(3)
	s.waits(4)
	s.end(3)
	s.hold(4)
	s.end(4)
}

// Run 2 waits on w2 for run 1 of w1, whose worker never hears its
// questions; run 1 ends, and run 3 comes to w1: run 2 takes the lock
// first. When run 1 beat after run 2 queued, the beat found the queue:
// the lock was contended, and is handed on when run 1 ends — rather than
// held by run 3 without a write (reuse) or written over the revision the
// beat left (take, once reuseFor has passed), dropping the queue. When
// run 1 did not beat and reuseFor has passed (the documented exception
// before), run 3 reads the key, finds run 1 of its worker ended, and hands
// the lock to the first in line, where run 2 would otherwise wait until
// run 1 went stale (here: never).
func TestSilentHolderWorkerHandsOn(t *testing.T) {
	for _, c := range []struct {
		name         string
		beat, reuse  bool
		w1TTL, w2TTL time.Duration // w1's: run 1 beats before it ends or not
	}{
		{"beat_then_reuse", true, true, testTTL, stream.LockTTL},
		{"beat_then_take", true, false, testTTL, stream.LockTTL},
		{"no_beat_then_take", false, false, stream.LockTTL, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			w1, w2 := e.worker("w1", c.w1TTL), e.worker("w2", c.w2TTL)
			if !c.reuse {
				w1.locks.held.reuseFor = 0 // as if the lock were older than reuseFor
			}
			w1.ctl.Stop() // run 2's questions never reach w1
			s := e.script()
			s.arrive(w1, 1)
			s.hold(1)
			s.arrive(w2, 2)
			s.queue(2)
			if c.beat {
				joined := e.value(Key(job, 0, 0)).Beat
				e.signals.Beat.WaitFor(t, waitLimit, "run 1 to beat over the queue", func(b Beat) bool {
					return b.Run == 1 && !b.Place && b.Beat > joined
				})
			}
			s.end(1)
			s.arrive(w1, 3)
			s.hold(2)
			s.waits(3)
			s.end(2)
			s.hold(3)
			s.end(3)
		})
	}
}

// Runs of a serial job arrive in fire order on two workers, some while the
// lock is held (they queue behind the holder, on its worker or the
// other), some while it is free (the job's last run here left it: reused
// without a write, or taken over): they take it in fire order, and none
// while an earlier fire waits (nextHold). Also when one worker's control
// responder fails, so that the other's questions go unanswered: contended
// locks are handed on at their end, and a run of the silent worker that
// finds its ended run holding the lock hands it to the first in line.
// (That worker's runs would reuse a lock for up to reuseFor after its last
// write while a waiter it has not heard of is queued — the documented
// exception —, so here they always write.)
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
			s := e.script()
			s.arrive(w1, 1)
			s.hold(1)
			s.arrive(w2, 2) // queues behind a holder elsewhere
			s.queue(2)
			s.arrive(w1, 3) // queues behind a holder on its worker
			s.queue(2, 3)
			s.end(1)
			s.hold(2) // takes over with run 3 queued behind it
			s.arrive(w2, 4)
			s.queue(3, 4)
			s.end(2)
			s.hold(3)
			s.end(3)
			s.hold(4)
			s.end(4)
			s.arrive(w2, 5) // free: reuses the lock run 4 left on w2
			s.hold(5)
			s.arrive(w1, 6)
			s.queue(6)
			s.arrive(w2, 7)
			s.queue(6, 7)
			s.end(5)
			s.hold(6) // takes over with run 7 queued behind it
			s.end(6)  // at once: run 7 may not have asked w1 about run 6 yet
			s.arrive(w1, 8)
			s.hold(7)
			s.queue(8)
			s.end(7)
			s.hold(8)
			s.end(8)
			s.arrive(w1, 9) // free: takes over from run 8 on w2
			s.hold(9)
			s.arrive(w2, 10) // its questions go unanswered when w1 is silent
			s.queue(10)
			s.end(9)
			s.arrive(w1, 11)
			s.hold(10)
			s.queue(11)
			s.end(10)
			s.hold(11)
			s.end(11)
		})
	}
}

// The first in line beats its place every TTL/3, so that a key some run
// waits for never expires (the queue would go with it).
func TestFirstWaiterBeatsItsPlace(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", testTTL), e.worker("w2", testTTL)
	s := e.script()
	s.arrive(w1, 1)
	s.hold(1)
	s.arrive(w2, 2)
	s.queue(2)
	e.signals.Beat.WaitFor(t, waitLimit, "run 2 to beat its place", func(b Beat) bool { return b.Run == 2 && b.Place })
	s.end(1)
	s.hold(2)
	s.end(2)
}

// A first in line whose place stands still for the TTL is dropped: here
// the head of the queue, of a dead worker, does not keep the run behind it
// from taking over the dead holder's lock.
func TestDeadWaiterDropped(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", testTTL)
	key := Key(job, 0, 0)
	s := e.script()
	dead := fmt.Sprintf(`{"holder":999,"worker":"gone","beat":3,"queue":[{"run":998,"at":%d,"worker":"gone","beat":1}]}`, s.t0.UnixMilli())
	if _, err := e.kv.Create(e.ctx(), key, []byte(dead)); err != nil {
		t.Fatal(err)
	}
	s.arrive(w, 1)
	s.queue(998, 1)
	s.hold(1)
	if v := e.value(key); v.Holder != 1 || len(v.Queue) != 0 {
		t.Errorf("lock %+v, want run 1 holding, the dead waiter dropped", v)
	}
	s.end(1)
}
