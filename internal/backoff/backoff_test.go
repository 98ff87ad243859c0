package backoff

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestNextDoublesUpToMax(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("delay %d: %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
}

func TestResetStartsAgain(t *testing.T) {
	b := Backoff{Initial: 50 * time.Millisecond, Max: 2 * time.Second}
	b.Next()
	b.Next()
	b.Reset()
	if got := b.Next(); got != 50*time.Millisecond {
		t.Fatalf("after Reset: %s, want 50ms", got)
	}
}

func TestMaxBelowInitialCaps(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: time.Second}
	for range 3 {
		if got := b.Next(); got != time.Second {
			t.Fatalf("fixed delay: %s, want 1s", got)
		}
	}
}

// The alarm sender's delays: 5 s << (attempts−1), no cap.
func TestDelayUncapped(t *testing.T) {
	b := Backoff{Initial: 5 * time.Second}
	for failures := 1; failures <= 10; failures++ {
		if got, want := b.Delay(failures), (5*time.Second)<<(failures-1); got != want {
			t.Fatalf("Delay(%d) = %s, want %s", failures, got, want)
		}
	}
	if got := b.Delay(0); got != 5*time.Second {
		t.Fatalf("Delay(0) = %s, want Initial", got)
	}
}

func TestDelaySaturatesInsteadOfOverflowing(t *testing.T) {
	b := Backoff{Initial: time.Hour}
	if got := b.Delay(1000); got != math.MaxInt64 {
		t.Fatalf("Delay(1000) = %d, want the largest duration", got)
	}
	// Zero Initial stays zero however many failures (and ends at once).
	if got := (Backoff{}).Delay(math.MaxInt); got != 0 {
		t.Fatalf("zero Backoff: %s, want 0", got)
	}
}

func TestJitterStaysWithinBounds(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: time.Second, Jitter: 0.2}
	lo, hi := 800*time.Millisecond, 1200*time.Millisecond
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := b.Next()
		if d < lo || d > hi {
			t.Fatalf("jittered delay %s outside [%s, %s]", d, lo, hi)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Fatal("1000 jittered delays were all equal")
	}
	huge := Backoff{Initial: math.MaxInt64, Jitter: 1}
	if d := huge.Next(); d < 0 {
		t.Fatalf("jitter on the largest duration overflowed: %d", d)
	}
}

func TestSleepWaits(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Fatalf("slept %s, want at least 20ms", took)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err := Sleep(ctx, time.Hour)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a cancelled sleep took %s", took)
	}
}

func TestWaitUsesNext(t *testing.T) {
	b := Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}
	for range 3 {
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Next(); got != 4*time.Millisecond {
		t.Fatalf("after three waits Next is %s, want 4ms", got)
	}
}
