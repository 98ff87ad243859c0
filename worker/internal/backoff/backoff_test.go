package backoff

import (
	"context"
	"testing"
	"time"
)

// Delays double from First to Most, each within ±20%, and start over after
// Reset.
func TestBackoff(t *testing.T) {
	var b Backoff
	want := []time.Duration{First, 2 * First, 4 * First, 8 * First, 16 * First, 32 * First, Most, Most}
	for i, w := range want {
		if d := b.Next(); d < w-w/5 || d > w+w/5 {
			t.Errorf("delay %d: %s, want %s ±20%%", i, d, w)
		}
	}
	b.Reset()
	if d := b.Next(); d > First+First/5 {
		t.Errorf("after Reset: %s, want about %s", d, First)
	}
}

func TestSleepStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep on a done context reported it live")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep on a live context reported it done")
	}
}
