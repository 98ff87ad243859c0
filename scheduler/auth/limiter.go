package auth

import (
	"fmt"
	"sync"
	"time"
)

// LoginLimiter bounds failed logins per user name and per client address
// over a sliding window, so that guessing a password costs an attacker
// hours per handful of tries, while a person who mistypes a few times is
// not locked out for long. It is per scheduler process (held in memory):
// behind a load balancer of n schedulers an attacker gets at most n times
// the budget, which is still slow, and no login has to write to
// PostgreSQL on failure.
type LoginLimiter struct {
	// PerUser and PerAddr are the failures allowed in Window.
	PerUser, PerAddr int
	Window           time.Duration

	mu    sync.Mutex
	now   func() time.Time
	fails map[string][]time.Time // "u:<name>" or "a:<addr>" → failure times, oldest first
}

// NewLoginLimiter allows 5 failures per user and 20 per address in 15
// minutes.
func NewLoginLimiter() *LoginLimiter {
	return &LoginLimiter{PerUser: 5, PerAddr: 20, Window: 15 * time.Minute, now: time.Now, fails: map[string][]time.Time{}}
}

// SetClock replaces time.Now (tests).
func (l *LoginLimiter) SetClock(now func() time.Time) { l.now = now }

// Allow reports whether a login of user from addr may be tried now; when
// not, err says why and for how long, for the person to read.
func (l *LoginLimiter) Allow(user, addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, c := range []struct {
		key, what string
		max       int
	}{{"u:" + user, fmt.Sprintf("user %q", user), l.PerUser}, {"a:" + addr, "your address", l.PerAddr}} {
		ts := l.recent(c.key, now)
		if len(ts) >= c.max {
			wait := ts[len(ts)-c.max].Add(l.Window).Sub(now).Round(time.Second)
			return fmt.Errorf("too many failed logins for %s (%d in %s): try again in %s", c.what, len(ts), l.Window, max(wait, time.Second))
		}
	}
	return nil
}

// Failed records a failed login.
func (l *LoginLimiter) Failed(user, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.fails) > 100_000 {
		// Bound memory under a spray of names: drop what has expired.
		for k := range l.fails {
			if len(l.recent(k, now)) == 0 {
				delete(l.fails, k)
			}
		}
	}
	for _, k := range []string{"u:" + user, "a:" + addr} {
		l.fails[k] = append(l.recent(k, now), now)
	}
}

// Succeeded forgets the user's failures (not the address's: one right
// password must not reset a spray over many users).
func (l *LoginLimiter) Succeeded(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, "u:"+user)
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
