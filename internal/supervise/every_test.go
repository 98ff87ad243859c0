package supervise

import (
	"context"
	"testing"
	"time"
)

// Every ticks again and again, and returns nil once ctx ends.
func TestEveryTicksUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ticks := 0
	err := Every(ctx, time.Millisecond, func(tctx context.Context) {
		if tctx != ctx {
			t.Error("tick got another context than the loop's")
		}
		if ticks++; ticks == 3 {
			cancel()
		}
	})
	if err != nil || ticks != 3 {
		t.Fatalf("Every = %v after %d ticks, want nil after 3", err, ticks)
	}
}
