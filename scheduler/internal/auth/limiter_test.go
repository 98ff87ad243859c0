package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// limiterAt is a limiter whose clock the test moves.
func limiterAt(now *time.Time) *LoginLimiter {
	l := NewLoginLimiter()
	l.SetClock(func() time.Time { return *now })
	return l
}

// reserve reserves an attempt and fails the test if it is refused.
func reserve(t *testing.T, ctx context.Context, l *LoginLimiter, user, addr string) *LoginAttempt {
	t.Helper()
	a, err := l.Reserve(ctx, user, addr)
	if err != nil {
		t.Fatalf("reserve %s from %s: %v", user, addr, err)
	}
	return a
}

// refused asserts that an attempt is refused by the limit with a message
// holding want and a Retry-After of at least a second.
func refused(t *testing.T, l *LoginLimiter, user, addr, want string) *LimitError {
	t.Helper()
	a, err := l.Reserve(context.Background(), user, addr)
	var le *LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), want) || le.RetryAfter < time.Second {
		if a != nil {
			a.Cancel()
		}
		t.Fatalf("reserve %s from %s: %v, want a *LimitError saying %q with a Retry-After", user, addr, err, want)
	}
	return le
}

// Failures are limited per user and per address over the window, and the
// refusal says for how long.
func TestLoginLimiterBudgets(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	ctx := context.Background()
	for range 5 {
		reserve(t, ctx, l, "alice", "10.0.0.1").Settle(false)
		now = now.Add(time.Second)
	}
	le := refused(t, l, "alice", "10.0.0.2", `user "alice"`)
	if !strings.Contains(le.Error(), "try again in") || le.RetryAfter != 15*time.Minute-5*time.Second {
		t.Errorf("6th try: %v (Retry-After %s), want the wait until the first failure leaves the window", le, le.RetryAfter)
	}
	reserve(t, ctx, l, "bob", "10.0.0.1").Settle(true) // another user from the same address
	now = now.Add(15 * time.Minute)
	reserve(t, ctx, l, "alice", "10.0.0.1").Cancel() // after the window

	// An address spraying many users is stopped too.
	for i := range 20 {
		reserve(t, ctx, l, strings.Repeat("u", i+1), "10.9.9.9").Settle(false)
	}
	refused(t, l, "zed", "10.9.9.9", "your address")

	// The right password forgets the user's failures, not the address's.
	for range 4 {
		reserve(t, ctx, l, "carol", "10.0.0.3").Settle(false)
	}
	reserve(t, ctx, l, "carol", "10.0.0.3").Settle(true)
	for range 5 {
		reserve(t, ctx, l, "carol", "10.0.0.4").Settle(false)
	}
	refused(t, l, "carol", "10.0.0.5", `user "carol"`)
}

// An attempt counts from its reservation: attempts under way fill the
// budget as failures do, so simultaneous guesses cannot all pass the check
// before any has failed. One cancelled (its password never checked) gives
// its place back.
func TestLoginLimiterCountsAttemptsUnderWay(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	l.InFlightPerUser, l.InFlightPerAddr = 10, 10 // this test holds them all at once
	ctx := context.Background()
	var held []*LoginAttempt
	for range 5 {
		held = append(held, reserve(t, ctx, l, "alice", "10.0.0.1"))
	}
	if le := refused(t, l, "alice", "10.0.0.2", "5 under way"); le.RetryAfter != time.Second {
		t.Errorf("refused while attempts are under way: Retry-After %s, want 1s", le.RetryAfter)
	}
	held[0].Cancel()
	held[0].Settle(false) // after Cancel: nothing
	held[0] = reserve(t, ctx, l, "alice", "10.0.0.2")
	for _, a := range held {
		a.Settle(false)
		a.Cancel() // after Settle: nothing
	}
	refused(t, l, "alice", "10.0.0.3", "5 in 15m0s")
}

// One user's attempts are hashed one at a time and an address's two at a
// time: the next waits for its turn (or gives up with its context, or after
// MaxWait, with its place given back), while other users and addresses go
// on. A cancelled context proves an attempt did not have to wait.
func TestLoginLimiterTakesTurns(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	l := limiterAt(&now)
	ctx := context.Background()
	noWait, cancel := context.WithCancel(ctx)
	cancel()

	first := reserve(t, ctx, l, "alice", "10.0.0.1")
	if _, err := l.Reserve(noWait, "alice", "10.0.0.2"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second attempt of alice while her first is hashed: %v, want it to wait (and give up with its context)", err)
	}
	bob := reserve(t, noWait, l, "bob", "10.0.0.1") // the address's second turn
	if _, err := l.Reserve(noWait, "carol", "10.0.0.1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a third attempt from the address: %v, want it to wait", err)
	}
	reserve(t, noWait, l, "dave", "10.0.0.9").Settle(true) // others go on

	// A waiting attempt gets its turn when the one before settles.
	got := make(chan *LoginAttempt)
	go func() {
		a, err := l.Reserve(ctx, "alice", "10.0.0.2")
		if err != nil {
			t.Errorf("alice's waiting attempt: %v", err)
		}
		got <- a
	}()
	first.Settle(false)
	second := <-got
	if second == nil {
		t.FailNow()
	}

	// Waiting longer than MaxWait is refused with a Retry-After, and
	// gives its place back.
	l.MaxWait = time.Millisecond
	_ = refused(t, l, "alice", "10.0.0.3", "in progress")
	second.Settle(false)
	bob.Settle(true)
	for range 3 {
		reserve(t, ctx, l, "alice", "10.0.0.4").Settle(false)
	}
	refused(t, l, "alice", "10.0.0.4", "5 in 15m0s")
	if len(l.reserved) != 0 || len(l.hashing) != 0 {
		t.Errorf("after every attempt ended: reserved %v, hashing %v, want none", l.reserved, l.hashing)
	}
}
