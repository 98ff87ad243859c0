// Package gctune gives the Go garbage collector of a jetjob process a fixed
// amount of room to grow into before it runs, however small the live heap.
//
// With Go's default (GOGC=100) a collection starts when the heap has grown
// by as much as was live after the last one. A scheduler or a worker keeps
// little alive (tens of MB: the runs planned ahead, the runs in flight)
// while it allocates for every run it plans, publishes or executes, so at
// thousands of runs a second it collected several times a second, and the
// collector was 15 % of its CPU (docs/performance.md). Start sets GOGC so
// that the next collection starts once the heap has grown by the larger of
// the live heap and Headroom: a small heap then collects less often, at the
// price of at most Headroom more memory, and a large heap keeps Go's
// default, so the extra memory stays bounded whatever the process holds.
//
// An operator who sets GOGC (or wants Go's behaviour back: GOGC=100) is
// obeyed: Start then changes nothing. GOMEMLIMIT, if set, still bounds the
// heap as Go documents.
package gctune

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"go.uber.org/zap"
)

// Headroom is the growth of the heap past its live size that Start allows
// before the next collection, at the least.
const Headroom = 128 << 20

// interval is how often Start looks at the live heap: it changes only when
// a collection ends, and the percentage needs to follow it only roughly.
const interval = time.Second

// Percent is the GOGC value under which the next collection starts once
// the heap has grown by max(live, headroom): Go's default of 100 when the
// live heap is at least headroom, more below it.
func Percent(live, headroom uint64) int {
	if live == 0 || live >= headroom {
		return 100
	}
	return int(min(headroom*100/live, 100_000))
}

// Start adjusts GOGC every second to Percent(live heap, Headroom), from a
// goroutine of its own, until ctx ends or stop is called; stop waits for
// that goroutine, which restores the GOGC it found. It changes nothing
// when the GOGC environment variable is set.
func Start(ctx context.Context, log *zap.Logger) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		log.Info("GOGC is set: the garbage collector keeps it")
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, Headroom, interval)
	}()
	return func() {
		cancel()
		<-done
	}
}

func run(ctx context.Context, headroom uint64, every time.Duration) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := debug.SetGCPercent(100)
	debug.SetGCPercent(current)
	defer debug.SetGCPercent(current)
	applied := current
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			// Changing GOGC recomputes the pacer's goal: skip changes
			// under a tenth, the live heap wobbles between collections.
			if p := Percent(sample[0].Value.Uint64(), headroom); p*10 < applied*9 || p*10 > applied*11 {
				debug.SetGCPercent(p)
				applied = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
