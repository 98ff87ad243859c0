package testsignal

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
)

func TestZeroSignalDoesNothing(t *testing.T) {
	var s Signal[int]
	s.Signal(1) // no panic, no effect
	if s.On() {
		t.Fatal("a zero signal is on")
	}
	s.Init(t)
	if !s.On() {
		t.Fatal("an initialised signal is off")
	}
}

func TestWaitOrTimeoutTakesValuesInOrder(t *testing.T) {
	var s Signal[int]
	s.Init(t)
	s.Signal(1)
	go s.Signal(2)
	if v := s.WaitOrTimeout(t, time.Second); v != 1 {
		t.Fatalf("first value %d, want 1", v)
	}
	if v := s.WaitOrTimeout(t, time.Second); v != 2 {
		t.Fatalf("second value %d, want 2", v)
	}
	s.RequireEmpty(t)
}

func TestWaitForSkipsToAMatchAndKeepsTheRest(t *testing.T) {
	var s Signal[int]
	s.Init(t)
	for i := range 5 {
		s.Signal(i)
	}
	if v := s.WaitFor(t, time.Second, "3", func(v int) bool { return v == 3 }); v != 3 {
		t.Fatalf("got %d, want 3", v)
	}
	if v := s.WaitOrTimeout(t, time.Second); v != 4 {
		t.Fatalf("after the match: %d, want 4 (kept)", v)
	}
}

func TestACopySharesTheQueue(t *testing.T) {
	var s Signal[string]
	s.Init(t)
	held := s // as a composition root hands it to a component
	held.Signal("from the component")
	if v := s.WaitOrTimeout(t, time.Second); v != "from the component" {
		t.Fatalf("got %q", v)
	}
}

func TestSignalNeverBlocks(t *testing.T) {
	var s Signal[int]
	s.Init(t)
	done := make(chan struct{})
	go func() {
		for i := range limit + 10 { // past the limit: dropped, still no block
			s.Signal(i)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Signal blocked")
	}
}

func TestWaitUntilChecksAfterEachSignal(t *testing.T) {
	var s Signal[struct{}]
	s.Init(t)
	var state, checks atomic.Int32
	go func() {
		for range 3 {
			state.Add(1)
			s.Signal(struct{}{})
		}
	}()
	s.WaitUntil(t, 5*time.Second, "state 3", func() bool { checks.Add(1); return state.Load() == 3 })
	if n := checks.Load(); n > 5 {
		t.Fatalf("checked %d times for 3 changes: polling?", n)
	}
}

// fails runs f with a TB that records its failure (testwait.Fails) and
// returns the message it failed with.
func fails(t *testing.T, f func(tb TB)) string {
	t.Helper()
	return testwait.Fails(t, func(tb testing.TB) { f(tb) })
}

func TestWaitForTimesOut(t *testing.T) {
	var s Signal[int]
	s.Init(t)
	s.Signal(1)
	start := time.Now()
	msg := fails(t, func(tb TB) { s.WaitFor(tb, 50*time.Millisecond, "a two", func(v int) bool { return v == 2 }) })
	if msg != "timed out after 50ms waiting for a two" {
		t.Fatalf("message %q", msg)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > time.Second {
		t.Fatalf("gave up after %s, want just over 50ms", d)
	}
}

func TestWaitUntilTimesOut(t *testing.T) {
	var s Signal[int]
	s.Init(t)
	msg := fails(t, func(tb TB) { s.WaitUntil(tb, 20*time.Millisecond, "never", func() bool { return false }) })
	if msg != "timed out after 20ms waiting for never" {
		t.Fatalf("message %q", msg)
	}
}

func TestRequireEmptyFailsOnAValue(t *testing.T) {
	var s Signal[int]
	s.Init(t)
	s.Signal(7)
	if msg := fails(t, s.RequireEmpty); !strings.Contains(msg, "first 7") {
		t.Fatalf("message %q", msg)
	}
}

func TestOverflowFailsTheWaiter(t *testing.T) {
	var s Signal[int]
	s.Init(t)
	for i := range limit + 1 {
		s.Signal(i)
	}
	msg := fails(t, func(tb TB) { s.WaitFor(tb, time.Second, "-1", func(v int) bool { return v < 0 }) })
	if !strings.Contains(msg, "never taken") {
		t.Fatalf("message %q", msg)
	}
}

func TestUninitialisedWaitFails(t *testing.T) {
	var s Signal[int]
	if msg := fails(t, func(tb TB) { s.WaitOrTimeout(tb, time.Second) }); !strings.Contains(msg, "not initialised") {
		t.Fatalf("message %q", msg)
	}
}

func TestSignalAfterTheTestEndedIsDropped(t *testing.T) {
	var s Signal[int]
	t.Run("sub", func(t *testing.T) { s.Init(t) })
	s.Signal(1) // the subtest ended: nothing queued, no panic
	if n := len(s.q.values); n != 0 {
		t.Fatalf("%d values queued after the test ended", n)
	}
}
