package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{live: 16 << 20, headroom: 128 << 20, want: 800}, // small heap: grows by the headroom
		{live: 128 << 20, headroom: 128 << 20, want: 100},
		{live: 1 << 30, headroom: 128 << 20, want: 100}, // large heap: Go's default
		{live: 0, headroom: 128 << 20, want: 100},       // before the first collection
		{live: 1, headroom: 128 << 20, want: 100_000},   // bounded
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

// gogc reads the GOGC the runtime runs with.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// run sets the runtime's GOGC from the live heap while it runs, and puts
// the GOGC it found back when its context ends.
func TestRunFollowsTheLiveHeap(t *testing.T) {
	before := gogc()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, 512<<20, 10*time.Millisecond)
	}()
	// Some tens of MB live: GOGC must rise far above 100 (512 MiB of room).
	live := make([][]byte, 32)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for gogc() < 300 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d with %d MiB live and 512 MiB of room", gogc(), len(live))
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	cancel()
	<-done
	if got := gogc(); got != before {
		t.Errorf("GOGC after run ended: %d, want %d back", got, before)
	}
	debug.SetGCPercent(int(before))
}
