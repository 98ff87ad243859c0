package joblock

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/stream"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }
func newHeld(c *fakeClock, ttl time.Duration) *heldLocks {
	return &heldLocks{reuseFor: ttl / 2, now: c.Now}
}

const key = "job.7"

// holdRun registers run as holding key, written now.
func holdRun(h *heldLocks, c *fakeClock, run int64, rev uint64) *Lock {
	l := &Lock{key: key, as: run, rev: rev, wrote: c.now}
	h.hold(key, l, false)
	return l
}

// A lock an ended run left is reused, under that run's name and revision,
// only while younger than half the TTL; after that the next run writes,
// over the remembered revision while the bucket still keeps the key.
func TestHeldLocksReuseWhileYoung(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	h := newHeld(c, stream.LockTTL)
	h.release(key, holdRun(h, c, 1, 10))

	c.advance(stream.LockTTL/2 - time.Millisecond)
	l := &Lock{key: key, as: 2}
	if !h.reuse(key, l) || l.as != 1 || l.rev != 10 {
		t.Fatalf("young left lock: reused %+v, want it held as run 1 at revision 10", l)
	}
	h.release(key, l)

	c.advance(time.Millisecond)
	if h.reuse(key, &Lock{key: key, as: 3}) {
		t.Fatal("a left lock half a TTL old was reused without a write")
	}
	if rev, ok := h.take(key, 3); !ok || rev != 10 {
		t.Errorf("take: %d, %v; want revision 10 for a conditional write", rev, ok)
	}
	if _, ok := h.take(key, 3); ok {
		t.Error("a left lock was taken twice")
	}
}

// A question from another worker about a lock left here makes it
// contended: it is not reused, and a stop hands it on instead of deleting
// it. A question about a lock nobody here holds counts for a run that
// registers its hold under the name asked about (its write crossed the
// question), however late, and not for one holding under another name
// (the asker's write over the run asked about fails, and it asks again).
func TestHeldLocksQuestions(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	h := newHeld(c, stream.LockTTL)
	h.release(key, holdRun(h, c, 1, 10))
	if h.asked(key, 1) {
		t.Error("asked about an ended run: active, want not")
	}
	if h.reuse(key, &Lock{key: key, as: 2}) {
		t.Error("a lock asked about was reused without a write")
	}
	left, contended := h.drain()
	if len(left) != 0 || !contended[key] {
		t.Errorf("drain: left %v, contended %v; want the asked-about lock contended, none left", left, contended)
	}

	// Asked about run 2 while nobody holds the lock; run 2 registers.
	h.asked(key, 2)
	c.advance(stream.LockTTL)
	l := holdRun(h, c, 2, 11)
	if !l.contended {
		t.Error("a hold registered after a question about its run is not contended")
	}
	if h.release(key, l); h.left[key] != (leftLock{}) {
		t.Error("a contended lock was left for reuse")
	}

	// Asked about run 2 again (it ended); run 3 registers.
	h.asked(key, 2)
	l = holdRun(h, c, 3, 12)
	if l.contended {
		t.Error("a hold registered after a question about another run is contended")
	}
	if !h.asked(key, 3) || !l.contended {
		t.Error("asked about the run holding the lock: not active, or the lock not contended")
	}
	if h.asked(key, 2) {
		t.Error("asked about an ended run while another holds its lock: active, want not")
	}
}

// A question that names no lock (an older asker) finds it by the run.
func TestHeldLocksQuestionWithoutLock(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	h := newHeld(c, stream.LockTTL)
	l := holdRun(h, c, 5, 10)
	if !h.asked("", 5) || !l.contended {
		t.Error("question naming no lock about the holder: not active, or the lock not contended")
	}
	if h.asked("", 6) {
		t.Error("question naming no lock about an unknown run: active, want not")
	}
}

// A waiter here stops the held lock from being left for reuse.
func TestHeldLocksLocalContention(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	h := newHeld(c, stream.LockTTL)
	l := holdRun(h, c, 1, 10)
	h.contend(key)
	h.release(key, l)
	if h.reuse(key, &Lock{key: key, as: 2}) {
		t.Error("a lock a local run waited for was reused")
	}
}

// While another run here asks for a lock, no run takes a fast path to it
// (reuse, take, create) and the lock held here is contended; a run of an
// earlier fire that has not queued yet is yielded to, one in the queue
// read or of a later fire is not.
func TestHeldLocksPending(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	h := newHeld(c, stream.LockTTL)
	early, late := waiter{Run: 2, At: 200}, waiter{Run: 3, At: 300}
	h.release(key, holdRun(h, c, 1, 10))
	h.arrive(key, early)
	h.arrive(key, late)
	if h.reuse(key, &Lock{key: key, run: 3, as: 3}) {
		t.Error("a left lock was reused while another run here asks for it")
	}
	if _, ok := h.take(key, 3); ok {
		t.Error("a left lock was taken back while another run here asks for it")
	}
	if h.alone(key, 3) {
		t.Error("alone while another run here asks")
	}
	if !h.yield(key, late, nil) || h.yield(key, late, []waiter{early, late}) || h.yield(key, early, nil) {
		t.Error("yield: want it to the earlier unqueued run only")
	}
	l := &Lock{key: key, run: 2, as: 2, rev: 11}
	h.hold(key, l, false) // run 2 holds; run 3 still asks
	if !l.contended {
		t.Error("a lock held while another run here asks is not contended")
	}
	h.depart(key, 3)
	if !h.release(key, l) || h.left[key] != (leftLock{}) {
		t.Error("a contended lock was not to be handed on, or was left for reuse")
	}
	if !h.alone(key, 4) {
		t.Error("runs still ask after they held or departed")
	}
}

// A stop forgets what is older than the bucket keeps.
func TestHeldLocksDrainForgetsExpired(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	h := newHeld(c, stream.LockTTL)
	h.release(key, holdRun(h, c, 1, 10))
	c.advance(stream.LockTTL + time.Millisecond)
	if left, contended := h.drain(); len(left) != 0 || len(contended) != 0 {
		t.Errorf("drain after the TTL: %v, %v; want nothing", left, contended)
	}
}

// A holder is stale once its beat has stood still for the TTL on the
// waiter's clock; any change starts the count again.
func TestHolderSeenStale(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var h holderSeen
	for _, c := range []struct {
		holder, beat int64
		at           time.Duration
		want         bool
	}{
		{1, 3, 0, false},
		{1, 3, testTTL, false},
		{1, 3, testTTL + time.Millisecond, true},
		{1, 4, testTTL + time.Millisecond, false}, // it beat
		{1, 4, 2*testTTL + 2*time.Millisecond, true},
		{2, 0, 2*testTTL + 2*time.Millisecond, false}, // taken over
	} {
		if got := h.stale(c.holder, c.beat, t0.Add(c.at), testTTL); got != c.want {
			t.Errorf("holder %d beat %d at +%s: stale %v, want %v", c.holder, c.beat, c.at, got, c.want)
		}
	}
}

// freshValue writes exactly what json.Marshal writes for a lock taken with
// nobody waiting, whatever the worker's id holds.
func TestFreshValueIsJSONs(t *testing.T) {
	for _, id := range []string{"w1", "", `we"ird\id`, "<w&1>", "wörker\u2028"} {
		ls := New(Config{WorkerID: id, TTL: stream.LockTTL})
		for _, run := range []int64{0, 1, -7, 1 << 62} {
			want, err := json.Marshal(value{Holder: run, Worker: id})
			if err != nil {
				t.Fatal(err)
			}
			if got := ls.freshValue(run); string(got) != string(want) {
				t.Errorf("freshValue(%d) for worker %q = %s, want %s", run, id, got, want)
			}
		}
	}
}
