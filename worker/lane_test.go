package worker

import (
	"context"
	"slices"
	"testing"
	"time"
)

// The lanes' slot accounting (fetch.go, judge.go), without a server: how
// many slots a pull request holds, who gets a slot that frees up, and what
// a closing lane does with the triggers waiting for one.

// waiterLog is a lane's waiters, by name, recording what happened to them.
type waiterLog struct{ started, dropped []string }

func (x *waiterLog) waiter(name string) waiter {
	return waiter{start: func() { x.started = append(x.started, name) }, drop: func() { x.dropped = append(x.dropped, name) }}
}

// A pull request takes every free slot, never more than the lane has; a
// cancelled wait for a slot takes none.
func TestLaneAcquireTakesEveryFreeSlot(t *testing.T) {
	t.Parallel()
	l := newLane(laneShared, nil, 3, 2)
	n, ok := l.acquire(context.Background())
	if !ok || n != 3 || len(l.slots) != 3 {
		t.Fatalf("acquire on an idle lane: %d, %v (%d slots taken); want all 3", n, ok, len(l.slots))
	}
	if got := l.tryAcquire(5); got != 0 {
		t.Fatalf("tryAcquire on a full lane took %d", got)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if n, ok := l.acquire(cancelled); ok || n != 0 {
		t.Fatalf("acquire with every slot taken and its context done: %d, %v; want none", n, ok)
	}
	l.release(2)
	if n, ok := l.acquire(context.Background()); !ok || n != 2 {
		t.Fatalf("acquire after 2 slots freed: %d, %v; want 2", n, ok)
	}
	if len(l.slots) != 3 {
		t.Fatalf("%d slots taken, want 3 (the lane's size)", len(l.slots))
	}
}

// A slot that frees goes to the trigger waiting longest, before any pull
// request; only with nobody waiting is it free again.
func TestLaneReleaseServesWaitersInOrder(t *testing.T) {
	t.Parallel()
	l := newLane(laneBatch, nil, 1, 2)
	var x waiterLog
	if !l.enqueue(x.waiter("first")) || !slices.Equal(x.started, []string{"first"}) {
		t.Fatalf("a waiter on a free slot: started %v, want it started at once", x.started)
	}
	for _, name := range []string{"second", "third"} {
		if !l.enqueue(x.waiter(name)) {
			t.Fatalf("%s refused by an open lane", name)
		}
	}
	if !slices.Equal(x.started, []string{"first"}) {
		t.Fatalf("started %v with the only slot taken, want first alone", x.started)
	}
	l.release(1)
	if !slices.Equal(x.started, []string{"first", "second"}) || len(l.slots) != 1 {
		t.Fatalf("after a release: started %v, %d slots taken; want second on first's slot", x.started, len(l.slots))
	}
	if got := l.tryAcquire(1); got != 0 {
		t.Fatal("a pull request got a slot while a trigger waited for one")
	}
	l.release(2)
	if !slices.Equal(x.started, []string{"first", "second", "third"}) || len(l.slots) != 0 {
		t.Fatalf("after two more releases: started %v, %d slots taken; want third started, then the slot free",
			x.started, len(l.slots))
	}
}

// A lane that closes (the worker stops) returns the triggers waiting for a
// slot, to be handed back, and refuses new ones.
func TestLaneCloseReturnsWaiters(t *testing.T) {
	t.Parallel()
	l := newLane(laneDirected, nil, 1, 2)
	var x waiterLog
	for _, name := range []string{"running", "a", "b"} {
		l.enqueue(x.waiter(name))
	}
	for _, wt := range l.close() {
		wt.drop()
	}
	if !slices.Equal(x.dropped, []string{"a", "b"}) {
		t.Fatalf("dropped %v, want the waiters a and b in order", x.dropped)
	}
	if l.enqueue(x.waiter("late")) {
		t.Fatal("a closed lane took a waiter")
	}
	l.release(1)
	if len(l.slots) != 0 || len(x.started) != 1 {
		t.Fatalf("after the close: %d slots taken, started %v; want the slot free and nothing else started", len(l.slots), x.started)
	}
}

// A pull request holding n slots asks for as many messages as the lane's
// messages carry runs: one each, batchRunsGuess on the batch lane, or as
// many as the last message carried on the directed lane.
func TestLaneMessagesFor(t *testing.T) {
	t.Parallel()
	shared := newLane(laneShared, nil, 10, 2)
	batch := newLane(laneBatch, nil, 64, 2)
	batch.runsPerMsg = batchRunsGuess
	directed := newLane(laneDirected, nil, 10, 2)
	cases := []struct {
		l          *lane
		lastRuns   int32
		slots, msg int
	}{
		{shared, 0, 1, 1},
		{shared, 0, 10, 10},
		{batch, 0, 64, 4},
		{batch, 0, 3, 1}, // at least one
		{directed, 1, 10, 10},
		{directed, 5, 10, 2}, // it got batches of 5 lately
	}
	for _, c := range cases {
		c.l.lastRuns.Store(c.lastRuns)
		if got := c.l.messagesFor(c.slots); got != c.msg {
			t.Errorf("%s lane (last message %d runs), %d slots: %d messages, want %d", c.l.name, c.lastRuns, c.slots, got, c.msg)
		}
	}
}

// A trigger handed back waits until every pull request the worker has open
// has expired (plus a margin), so that it does not come back here; with
// none open it goes back at once.
func TestHandBackDelay(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	shared, batch := newLane(laneShared, nil, 1, 2), newLane(laneBatch, nil, 1, 2)
	w := &Worker{lanes: []*lane{shared, batch}}
	if d := w.handBackDelay(now); d != 0 {
		t.Fatalf("no pull request open: delay %s, want none", d)
	}
	shared.tokens <- struct{}{}
	shared.openUntil.Store(now.Add(300 * time.Millisecond).UnixNano())
	batch.tokens <- struct{}{}
	batch.openUntil.Store(now.Add(700 * time.Millisecond).UnixNano())
	if d := w.handBackDelay(now); d != 700*time.Millisecond+handBackMargin {
		t.Fatalf("pull requests open until +300ms and +700ms: delay %s, want %s", d, 700*time.Millisecond+handBackMargin)
	}
	<-batch.tokens // its request ended
	if d := w.handBackDelay(now); d != 300*time.Millisecond+handBackMargin {
		t.Fatalf("one request open until +300ms: delay %s, want %s", d, 300*time.Millisecond+handBackMargin)
	}
	if d := w.handBackDelay(now.Add(time.Second)); d != 0 {
		t.Fatalf("every request expired: delay %s, want none", d)
	}
}

// A late trigger judged off its slot gives the slot to the next waiter,
// and takes one again ahead of any pull request; if the lane closes
// meanwhile it holds none (judge.go).
func TestSlotHoldGiveAndRetake(t *testing.T) {
	t.Parallel()
	w := bareWorker(t)
	w.cfg.Concurrency = 1
	w.metrics = newMetrics(w)
	w.signals.slotWaiting.Init(t)
	l := newLane(laneShared, nil, 1, 2)
	l.waitingSignal = w.signals.slotWaiting
	if n, _ := l.acquire(context.Background()); n != 1 {
		t.Fatal("the lane's slot not taken")
	}
	late := w.holdSlot(l)
	var x waiterLog
	l.enqueue(x.waiter("next"))
	late.give()
	if !slices.Equal(x.started, []string{"next"}) {
		t.Fatalf("started %v once the late trigger gave its slot, want next", x.started)
	}
	retook := make(chan bool, 1)
	go func() { retook <- late.retake() }()
	// "next" was queued before: the late trigger's wait is the second.
	waits := 0
	l.waitingSignal.WaitFor(t, waitLimit, "the late trigger waiting for a slot", func(laneRun) bool { waits++; return waits == 2 })
	select {
	case ok := <-retook:
		t.Fatalf("retake returned %v with the only slot taken", ok)
	default:
	}
	l.release(1) // next ends
	if !recv(t, "the late trigger to get the slot back", retook) {
		t.Fatal("retake failed on an open lane")
	}
	late.end()
	if len(l.slots) != 0 {
		t.Fatalf("%d slots taken once the late run ended, want none", len(l.slots))
	}

	closing := w.holdSlot(l)
	l.tryAcquire(1)
	closing.give()
	l.tryAcquire(1) // someone else holds the slot now
	go func() { retook <- closing.retake() }()
	l.waitingSignal.WaitFor(t, waitLimit, "the late trigger waiting for a slot", func(laneRun) bool { return true })
	for _, wt := range l.close() {
		wt.drop()
	}
	if recv(t, "retake to give up", retook) {
		t.Fatal("retake got a slot from a closed lane")
	}
}
