package auth

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// LoginLimiter bounds password guesses per user name and per client
// address over a sliding window, so that guessing a password costs an
// attacker hours per handful of tries, while a person who mistypes a few
// times is not locked out for long. It is per scheduler process (held in
// memory): behind a load balancer of n schedulers an attacker gets at most
// n times the budget, which is still slow, and no login has to write to
// PostgreSQL on failure.
//
// An attempt counts from the moment it starts, not from the moment its
// hash says it failed: Reserve takes a place in the user's and the
// address's budgets before the password is hashed, and Settle turns it
// into a failure (or, for the right password, forgets the user's
// failures). Counting only after the hash let a wave of simultaneous
// guesses all pass the check while none had failed yet (40 at once all got
// their answer; of 300, one found the password). Now a wave gets at most
// the budget's evaluations, and everything beyond it is refused at once,
// without a hash.
//
// Of the reserved attempts, at most InFlightPerUser of one user and
// InFlightPerAddr of one address are hashed at a time; the others wait
// their turn (bounded by the request's context and MaxWait). One user or
// address therefore never holds more than a slot or two of the hash pool
// (password.go), and other people's logins are served during a wave.
//
// Every password check of the API goes through it: logins (the API's and
// the console's, which calls the API) and the current password of a
// password change.
type LoginLimiter struct {
	// PerUser and PerAddr are the attempts allowed in Window: failures,
	// plus the attempts under way.
	PerUser, PerAddr int
	Window           time.Duration
	// InFlightPerUser and InFlightPerAddr are the attempts of one user,
	// respectively one address, hashed at the same time.
	InFlightPerUser, InFlightPerAddr int
	// MaxWait bounds how long an attempt waits for its turn to be hashed.
	MaxWait time.Duration

	mu    sync.Mutex
	now   func() time.Time
	fails map[string][]time.Time // "u:<name>" or "a:<addr>" → failure times, oldest first
	// reserved counts the attempts not yet settled, hashing the ones being
	// hashed, by key.
	reserved, hashing map[string]int
	// turn is closed, and replaced, whenever an attempt ends: the waiting
	// ones look again.
	turn chan struct{}
}

// NewLoginLimiter allows 5 attempts per user and 20 per address in 15
// minutes, hashing one attempt per user and two per address at a time,
// each waiting at most 5 s for its turn.
func NewLoginLimiter() *LoginLimiter {
	return &LoginLimiter{PerUser: 5, PerAddr: 20, Window: 15 * time.Minute, InFlightPerUser: 1, InFlightPerAddr: 2,
		MaxWait: 5 * time.Second, now: time.Now, fails: map[string][]time.Time{},
		reserved: map[string]int{}, hashing: map[string]int{}, turn: make(chan struct{})}
}

// SetClock replaces time.Now (tests).
func (l *LoginLimiter) SetClock(now func() time.Time) { l.now = now }

// LimitError refuses an attempt before any hash: the budget is spent, or
// the attempt waited too long for its turn. It answers 429 Too Many
// Requests with a Retry-After of RetryAfter.
type LimitError struct {
	RetryAfter time.Duration
	msg        string
}

func (e *LimitError) Error() string { return e.msg }

// LoginAttempt is a reserved attempt: its password may be checked now.
// Settle it with the outcome, or Cancel it when the password was not
// checked after all; a deferred Cancel after Settle does nothing.
type LoginAttempt struct {
	l          *LoginLimiter
	user, addr string
	// hashing says the attempt has its turn; done that it has ended.
	hashing, done bool
}

// Reserve claims an attempt of user from addr: a place in both budgets,
// then, waiting for it with ctx and at most MaxWait, a turn to be hashed.
// A *LimitError says why and for how long it is refused.
func (l *LoginLimiter) Reserve(ctx context.Context, user, addr string) (*LoginAttempt, error) {
	uk, ak := "u:"+user, "a:"+addr
	if err := l.reserve(user, uk, ak); err != nil {
		return nil, err
	}
	a := &LoginAttempt{l: l, user: uk, addr: ak}
	timer := time.NewTimer(l.MaxWait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if l.hashing[uk] < l.InFlightPerUser && l.hashing[ak] < l.InFlightPerAddr {
			l.hashing[uk]++
			l.hashing[ak]++
			a.hashing = true
			l.mu.Unlock()
			return a, nil
		}
		turn := l.turn
		l.mu.Unlock()
		select {
		case <-turn:
		case <-ctx.Done():
			a.end(false, false)
			return nil, fmt.Errorf("waiting for a turn to check a password: %w", ctx.Err())
		case <-timer.C:
			a.end(false, false)
			return nil, &LimitError{RetryAfter: time.Second,
				msg: fmt.Sprintf("too many logins in progress for user %q or your address: try again in 1s", user)}
		}
	}
}

// reserve takes the places in both budgets, or says why it cannot.
func (l *LoginLimiter) reserve(user, uk, ak string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.fails) > 100_000 {
		// Bound memory under a spray of names: drop what has expired.
		for k := range l.fails {
			l.recent(k, now)
		}
	}
	for _, c := range []struct {
		key, what string
		max       int
	}{{uk, fmt.Sprintf("user %q", user), l.PerUser}, {ak, "your address", l.PerAddr}} {
		ts, busy := l.recent(c.key, now), l.reserved[c.key]
		if len(ts)+busy < c.max {
			continue
		}
		// The wait until enough failures leave the window for one more
		// attempt; when attempts under way fill the budget, a moment.
		wait := time.Second
		if k := len(ts) + busy - c.max; k < len(ts) {
			wait = max(ts[k].Add(l.Window).Sub(now), wait)
		}
		wait = wait.Round(time.Second)
		return &LimitError{RetryAfter: wait, msg: fmt.Sprintf("too many failed logins for %s (%d in %s, %d under way): try again in %s",
			c.what, len(ts), l.Window, busy, wait)}
	}
	l.reserved[uk]++
	l.reserved[ak]++
	return nil
}

// Settle ends the attempt with its outcome: a wrong password counts as a
// failure of the user and the address; the right one forgets the user's
// failures (not the address's: one right password must not reset a spray
// over many users).
func (a *LoginAttempt) Settle(ok bool) { a.end(true, ok) }

// Cancel ends the attempt without counting it: its password was not
// checked (the store failed, the hash pool was busy).
func (a *LoginAttempt) Cancel() { a.end(false, false) }

// end releases the attempt's places (and its turn, once it had one) and,
// when checked, records the outcome.
func (a *LoginAttempt) end(checked, ok bool) {
	l := a.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.done {
		return
	}
	a.done = true
	for _, k := range []string{a.user, a.addr} {
		decr(l.reserved, k)
		if a.hashing {
			decr(l.hashing, k)
		}
	}
	switch {
	case checked && ok:
		delete(l.fails, a.user)
	case checked:
		now := l.now()
		for _, k := range []string{a.user, a.addr} {
			l.fails[k] = append(l.recent(k, now), now)
		}
	}
	close(l.turn)
	l.turn = make(chan struct{})
}

// decr lowers a count, dropping it at zero (the maps hold only the keys
// with attempts under way).
func decr(m map[string]int, k string) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// recent drops a key's failures older than the window and returns the rest.
func (l *LoginLimiter) recent(key string, now time.Time) []time.Time {
	ts := l.fails[key]
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-l.Window)) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.fails, key)
		return nil
	}
	l.fails[key] = ts
	return ts
}
