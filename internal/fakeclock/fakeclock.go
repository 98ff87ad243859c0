// Package fakeclock is a clock that moves only when a test moves it, for the
// unexported `now func() time.Time` seams of the scheduler's components.
// It is for tests only: no non-test file imports it.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is safe for concurrent use: the component under test reads it from
// its own goroutines while the test moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass the method value as a component's now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}
