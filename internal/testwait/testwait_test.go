package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyPollsUntilTrue(t *testing.T) {
	var n atomic.Int32
	Eventually(t, time.Second, "the third poll", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("polled %d times, want 3", got)
	}
}

func TestEventuallyTimesOut(t *testing.T) {
	start := time.Now()
	msg := Fails(t, func(tb testing.TB) { Eventually(tb, 100*time.Millisecond, "never", func() bool { return false }) })
	if msg != "timed out after 100ms waiting for never" {
		t.Fatalf("message %q", msg)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > time.Second {
		t.Fatalf("gave up after %s, want just over 100ms", d)
	}
}

func TestPollReportsTimeout(t *testing.T) {
	if Poll(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll of a condition that never holds reported true")
	}
	if !Poll(time.Second, func() bool { return true }) {
		t.Fatal("Poll of a condition that holds at once reported false")
	}
}

func TestSleepUntil(t *testing.T) {
	instant := time.Now().Add(20 * time.Millisecond)
	SleepUntil(instant)
	if now := time.Now(); now.Before(instant) {
		t.Fatalf("woke at %s, before %s", now, instant)
	}
	start := time.Now()
	SleepUntil(start.Add(-time.Hour)) // past: returns at once
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("SleepUntil of a past instant took %s", d)
	}
}

func TestSecondsBetweenIsTheWholeSecondsInTheClosedRange(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 1, 500e6, time.UTC)
	got := SecondsBetween(from, from.Add(2*time.Second))
	want := []time.Time{from.Add(500 * time.Millisecond), from.Add(1500 * time.Millisecond)}
	if len(got) != 2 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Fatalf("seconds in [%s, %s]: %v, want %v", from, from.Add(2*time.Second), got, want)
	}
}
