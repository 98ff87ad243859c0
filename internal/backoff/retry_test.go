package backoff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// These tests use delays of nanoseconds, or of an hour that a cancelled
// context cuts short: none depends on how fast the machine is.

// failures records what Retry told OnRetry.
type failures struct {
	attempts []int
	delays   []time.Duration
	errs     []error
}

func (f *failures) hook(attempt int, delay time.Duration, err error) {
	f.attempts = append(f.attempts, attempt)
	f.delays = append(f.delays, delay)
	f.errs = append(f.errs, err)
}

// failing returns an fn that fails n times, then succeeds, and counts its
// calls.
func failing(n int, calls *int) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= n {
			return fmt.Errorf("failure %d", *calls)
		}
		return nil
	}
}

func TestRetryUntilSuccess(t *testing.T) {
	var f failures
	calls := 0
	p := Policy{Backoff: Backoff{Initial: 1, Max: 4}, OnRetry: f.hook}
	if err := Retry(context.Background(), p, failing(4, &calls)); err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if calls != 5 {
		t.Fatalf("fn called %d times, want 5", calls)
	}
	if want := []int{1, 2, 3, 4}; fmt.Sprint(f.attempts) != fmt.Sprint(want) {
		t.Fatalf("OnRetry attempts %v, want %v", f.attempts, want)
	}
	if want := []time.Duration{1, 2, 4, 4}; fmt.Sprint(f.delays) != fmt.Sprint(want) {
		t.Fatalf("OnRetry delays %v, want %v (doubling up to Max)", f.delays, want)
	}
	if f.errs[2].Error() != "failure 3" {
		t.Fatalf("OnRetry's third error %q, want the third failure's", f.errs[2])
	}
}

func TestRetryFirstSuccessCallsNoHook(t *testing.T) {
	var f failures
	calls := 0
	if err := Retry(context.Background(), Policy{Backoff: Backoff{Initial: 1}, OnRetry: f.hook}, failing(0, &calls)); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(f.attempts) != 0 {
		t.Fatalf("fn called %d times, OnRetry %d times; want 1 and 0", calls, len(f.attempts))
	}
}

func TestRetryPermanentEndsAtOnce(t *testing.T) {
	bad := errors.New("bad input")
	var f failures
	calls := 0
	err := Retry(context.Background(), Policy{Backoff: Backoff{Initial: 1}, OnRetry: f.hook}, func(context.Context) error {
		calls++
		return Permanent(bad)
	})
	if err != bad {
		t.Fatalf("Retry returned %v (%T), want the permanent error itself, unmarked", err, err)
	}
	if calls != 1 || len(f.attempts) != 0 {
		t.Fatalf("fn called %d times, OnRetry %d times; want 1 and 0", calls, len(f.attempts))
	}

	// Marked deep inside fn and wrapped on the way out: still permanent,
	// and the wrapping's context is kept.
	err = Retry(context.Background(), Policy{Backoff: Backoff{Initial: 1}}, func(context.Context) error {
		return fmt.Errorf("run 7: %w", Permanent(bad))
	})
	if !errors.Is(err, bad) || err.Error() != "run 7: bad input" {
		t.Fatalf("Retry returned %q, want %q wrapping bad", err, "run 7: bad input")
	}
	if Permanent(nil) != nil {
		t.Fatal("Permanent(nil) is not nil")
	}
}

func TestRetryMaxAttempts(t *testing.T) {
	var f failures
	calls := 0
	err := Retry(context.Background(), Policy{Backoff: Backoff{Initial: 1}, MaxAttempts: 3, OnRetry: f.hook}, failing(10, &calls))
	if err == nil || err.Error() != "failure 3" {
		t.Fatalf("Retry returned %v, want the last failure as fn returned it", err)
	}
	if calls != 3 {
		t.Fatalf("fn called %d times, want 3", calls)
	}
	// No wait, and no hook, after the last attempt: nothing follows it.
	if want := []int{1, 2}; fmt.Sprint(f.attempts) != fmt.Sprint(want) {
		t.Fatalf("OnRetry attempts %v, want %v", f.attempts, want)
	}
}

func TestRetryEndsWithContextDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	p := Policy{
		Backoff: Backoff{Initial: time.Hour},
		// Cancelled just before the hour's wait: the wait must end with it.
		OnRetry: func(int, time.Duration, error) { cancel() },
	}
	err := Retry(ctx, p, func(context.Context) error {
		calls++
		return errors.New("PostgreSQL away")
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Retry returned %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "PostgreSQL away") {
		t.Fatalf("Retry's error %q does not say what was failing", err)
	}
	if calls != 1 {
		t.Fatalf("fn called %d times after ctx ended, want 1", calls)
	}
}

func TestRetryFailureAfterContextEndIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var f failures
	err := Retry(ctx, Policy{Backoff: Backoff{Initial: 1}, OnRetry: f.hook}, func(ctx context.Context) error {
		cancel() // the process stops while the attempt runs
		return fmt.Errorf("query: %w", ctx.Err())
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Retry returned %v, want context.Canceled", err)
	}
	if len(f.attempts) != 0 {
		t.Fatalf("OnRetry called %d times for a stopping process, want 0", len(f.attempts))
	}
}

// An ended ctx still gets one attempt (what fn makes of it is fn's
// business), but no retry.
func TestRetryEndedContextMakesOneAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if err := Retry(ctx, Policy{}, failing(0, &calls)); err != nil || calls != 1 {
		t.Fatalf("Retry returned %v after %d calls, want nil after 1", err, calls)
	}
	calls = 0
	err := Retry(ctx, Policy{}, failing(5, &calls))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "failure 1") {
		t.Fatalf("Retry returned %v, want context.Canceled with the failure's text", err)
	}
	if calls != 1 {
		t.Fatalf("fn called %d times with ctx ended, want 1", calls)
	}
}

func TestRetryZeroPolicyWaitsDefault(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first time.Duration
	_ = Retry(ctx, Policy{OnRetry: func(_ int, d time.Duration, _ error) { first = d; cancel() }},
		func(context.Context) error { return errors.New("down") })
	if first != Default.Initial {
		t.Fatalf("zero Policy's first delay %s, want Default's %s", first, Default.Initial)
	}
}

// A Policy is a value: each call starts from Initial, whatever the Backoff
// it holds has counted, and calls do not share a count.
func TestRetryStartsEachCallAfresh(t *testing.T) {
	p := Policy{Backoff: Backoff{Initial: 1, Max: 100}}
	p.Backoff.Next()
	p.Backoff.Next()
	for range 2 {
		var f failures
		p.OnRetry = f.hook
		calls := 0
		if err := Retry(context.Background(), p, failing(2, &calls)); err != nil {
			t.Fatal(err)
		}
		if want := []time.Duration{1, 2}; fmt.Sprint(f.delays) != fmt.Sprint(want) {
			t.Fatalf("delays %v, want %v", f.delays, want)
		}
	}
}
