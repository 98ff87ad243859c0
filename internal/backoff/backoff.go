// Package backoff is the one retry of jetjob's loops: a loop that fails
// (PostgreSQL or NATS away, a consumer not there yet) waits a little, then
// twice as long, up to a cap, so that a short outage is retried at once
// and a long one is not hammered. Each loop keeps its own initial and
// maximum delay, which say how urgent its work is, and says what it logs
// and counts on a failure and which failures are permanent; this package
// keeps the attempts, the doubling, the cap and the cancellable wait in
// one place (Retry) instead of one hand-written copy per loop, each with
// its own chance to get them wrong. Backoff alone is for the few callers
// that schedule retries themselves (the alarm sender keeps its count of
// failures in PostgreSQL).
//
// It is for scheduler/, worker/ and shared/ alike: it imports nothing of
// jetjob's.
package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential delay: Initial after the first failure, doubled
// after each further one, never more than Max. The zero value is not
// useful: set Initial. A Backoff is not safe for concurrent use; each loop
// holds its own.
type Backoff struct {
	// Initial is the first delay.
	Initial time.Duration
	// Max caps the delay; 0 leaves it uncapped (up to the largest
	// time.Duration), for callers whose number of retries is bounded
	// anyway.
	Max time.Duration
	// Jitter spreads each delay evenly over ±Jitter of it (0.2: ±20 %), so
	// that processes that failed together do not retry together. 0, the
	// default, keeps delays exact (and tests deterministic); values above
	// 1 count as 1.
	Jitter float64

	// failures counts the delays handed out since the last Reset.
	failures int
}

// Next returns the delay before the next retry and counts one more
// failure.
func (b *Backoff) Next() time.Duration {
	if b.failures < math.MaxInt {
		b.failures++
	}
	return b.Delay(b.failures)
}

// Reset starts again from Initial: for loops that go back to waiting
// briefly once an attempt succeeded.
func (b *Backoff) Reset() { b.failures = 0 }

// Wait sleeps for Next() or until ctx ends, returning ctx.Err() in that
// case (unwrapped, so callers' errors.Is(err, context.Canceled) holds).
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Delay is the delay after the given number of consecutive failures
// (1 for the first): Initial × 2^(failures−1), capped at Max, with Jitter
// applied. It does not touch the count Next keeps, so a caller that keeps
// its own count of failures (the alarm sender keeps it in PostgreSQL)
// uses it directly.
func (b Backoff) Delay(failures int) time.Duration {
	d := b.Initial
	for i := 1; i < failures && d > 0 && (b.Max <= 0 || d < b.Max); i++ {
		if d > math.MaxInt64/2 {
			d = math.MaxInt64
			break
		}
		d *= 2
	}
	if b.Max > 0 {
		d = min(d, b.Max)
	}
	return b.jitter(d)
}

// jitter moves d by a uniform amount within ±Jitter of it.
func (b Backoff) jitter(d time.Duration) time.Duration {
	if b.Jitter <= 0 || d <= 0 {
		return d
	}
	// spread ≤ d and spread ≤ MaxInt64−d, so neither d+spread nor
	// 2·spread+1 overflows. It is bounded as a float first: converting a
	// float beyond MaxInt64 to an integer is undefined.
	spread := math.MaxInt64 - d
	if f := float64(d) * min(b.Jitter, 1); f < float64(spread) {
		spread = min(time.Duration(f), spread)
	}
	return d - spread + rand.N(2*spread+1)
}

// Sleep waits for d or until ctx ends, whichever comes first, and returns
// ctx.Err() if ctx ended. Unlike time.Sleep it lets a stopping process go
// at once; unlike a bare time.After it releases its timer when ctx wins.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
