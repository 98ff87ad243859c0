package supervise

import (
	"context"
	"time"
)

// Every is the loop of a component that does one thing on a period: it
// waits d, calls tick, and again, until ctx ends, and then returns nil. A
// tick handles its own failure (logs it; the next tick is the retry), so
// the loop never dies of one.
func Every(ctx context.Context, d time.Duration, tick func(ctx context.Context)) error {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		tick(ctx)
	}
}
