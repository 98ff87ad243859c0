package testwait

import (
	"fmt"
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

// failer records Fatalf instead of ending the test.
type failer struct {
	testing.TB
	msg string
}

func (f *failer) Helper() {}
func (f *failer) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestEventuallyTimesOut(t *testing.T) {
	f := &failer{TB: t}
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Fatalf("recovered %v, want the failer", r)
			}
		}()
		Eventually(f, 100*time.Millisecond, "never", func() bool { return false })
	}()
	if f.msg != "timed out after 100ms waiting for never" {
		t.Fatalf("message %q", f.msg)
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
