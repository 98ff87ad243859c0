// Package backoff is the worker's retry pacing: an exponential delay with
// jitter, and a sleep that a context cuts short. Fetching triggers,
// publishing events and acking triggers all retry with it, so that workers
// that failed together (a NATS leader change) do not retry together.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Bounds of the delay.
const (
	First = 100 * time.Millisecond
	Most  = 5 * time.Second
)

// Backoff is an exponential delay with jitter, from First to Most. The zero
// value is ready to use.
type Backoff struct{ d time.Duration }

// Next returns the next delay: First, then doubling up to Most, each ±20%.
func (b *Backoff) Next() time.Duration {
	switch {
	case b.d == 0:
		b.d = First
	case b.d < Most:
		b.d = min(2*b.d, Most)
	}
	// ±20% so that workers that failed together do not retry together.
	return b.d - b.d/5 + rand.N(2*b.d/5+1)
}

// Reset starts over at First: the last attempt succeeded.
func (b *Backoff) Reset() { b.d = 0 }

// Sleep waits d and reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
