package backoff

import (
	"context"
	"errors"
	"fmt"
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

// When ctx ends, Retry returns its error with the last failure's text,
// calls OnRetry for no failure after the end, and calls fn no more. An
// ended ctx still gets the first attempt: what fn makes of an ended ctx
// is its business.
func TestRetryEndsWithContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cancelled before Retry, in fn, or in OnRetry (just before a wait
		// of an hour, which must end with ctx)
		before, inFn, inHook bool
		fnErr                error // nil: fn returns ctx.Err() wrapped
		wantErr              string
		wantHooks            int
	}{
		{name: "during the wait", inHook: true, fnErr: errors.New("PostgreSQL away"),
			wantErr: "context canceled (last error: PostgreSQL away)", wantHooks: 1},
		{name: "during an attempt", inFn: true,
			wantErr: "context canceled (last error: query: context canceled)"},
		{name: "before the first attempt, which fails", before: true, fnErr: errors.New("down"),
			wantErr: "context canceled (last error: down)"},
		{name: "before the first attempt, which succeeds", before: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.before {
				cancel()
			}
			hooks, calls := 0, 0
			p := Policy{Backoff: Backoff{Initial: time.Hour}, OnRetry: func(int, time.Duration, error) {
				hooks++
				if tc.inHook {
					cancel()
				}
			}}
			err := Retry(ctx, p, func(ctx context.Context) error {
				calls++
				if tc.inFn {
					cancel()
				}
				if tc.fnErr != nil {
					return tc.fnErr
				}
				if ctx.Err() != nil && !tc.before {
					return fmt.Errorf("query: %w", ctx.Err())
				}
				return nil
			})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Retry returned %v, want nil", err)
				}
			} else if !errors.Is(err, context.Canceled) || err.Error() != tc.wantErr {
				t.Fatalf("Retry returned %v, want context.Canceled as %q", err, tc.wantErr)
			}
			if calls != 1 || hooks != tc.wantHooks {
				t.Fatalf("fn called %d times, OnRetry %d; want 1 and %d", calls, hooks, tc.wantHooks)
			}
		})
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
