// Package wheel holds planned runs in memory until their fire time and then
// hands them to dispatch, with millisecond precision.
//
// It is a min-heap keyed by fire time with a single timer set to the
// earliest entry, rather than xxl-job's 60-slot one-second ring: a heap
// fires each run at its own millisecond, never skips a slot when the loop
// runs late (everything due is drained at once), and deduplicates by run id
// so that re-planting the same run (recovery after a lease change) cannot
// fire it twice from one process. The runs of a trigger batch
// (runs.Planned.Batch) are handed over together, in one call.
package wheel

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// Wheel is safe for concurrent use: the planner adds, Run fires.
type Wheel struct {
	fire  func(context.Context, []runs.Planned)
	ready func(context.Context) bool
	now   func() time.Time

	mu    sync.Mutex
	h     runHeap
	held  map[int64]struct{}
	wake  chan struct{}
	limit int
	// firing is the earliest fire time of the runs handed to fire and not
	// yet returned from it (zero while none are): Lag counts them as
	// waiting, since dispatch has not published them yet.
	firing time.Time
}

// New returns a wheel that calls fire with every batch of due runs, in fire
// order. fire may block: the wheel then waits, and runs due meanwhile go in
// the next batch (backpressure instead of an unbounded queue). ready, if
// not nil, is called before each batch is taken and may block until the
// runs can be published (NATS connected): runs that fell due meanwhile then
// come out together, so that a misfire policy sees all of a job's missed
// fires at once.
func New(fire func(context.Context, []runs.Planned), ready func(context.Context) bool) *Wheel {
	return &Wheel{
		fire:  fire,
		ready: ready,
		now:   time.Now,
		held:  make(map[int64]struct{}),
		wake:  make(chan struct{}, 1),
		limit: 10000,
	}
}

// Add plants runs. A run already held is ignored.
func (w *Wheel) Add(rs ...runs.Planned) {
	w.mu.Lock()
	earliest := time.Time{}
	if len(w.h) > 0 {
		earliest = w.h[0].ScheduledAt
	}
	added := false
	for _, r := range rs {
		if _, ok := w.held[r.RunID]; ok {
			continue
		}
		w.held[r.RunID] = struct{}{}
		heap.Push(&w.h, r)
		added = true
	}
	newEarliest := added && (earliest.IsZero() || w.h[0].ScheduledAt.Before(earliest))
	w.mu.Unlock()
	if newEarliest {
		w.poke()
	}
}

// Remove drops every held run for which drop returns true (e.g. the runs of
// a shard whose lease was lost, or of a job that was edited) and returns how
// many it dropped.
func (w *Wheel) Remove(drop func(*runs.Planned) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.h[:0]
	n := 0
	for i := range w.h {
		if drop(&w.h[i]) {
			delete(w.held, w.h[i].RunID)
			n++
			continue
		}
		kept = append(kept, w.h[i])
	}
	clear(w.h[len(kept):])
	w.h = kept
	heap.Init(&w.h)
	return n
}

// IDs returns the ids of the runs held.
func (w *Wheel) IDs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int64, 0, len(w.h))
	for i := range w.h {
		out = append(out, w.h[i].RunID)
	}
	return out
}

// Lag is how long the oldest due run has waited to be published: the
// earliest fire time of the runs due and still held, or handed to fire and
// not yet returned from it, up to now; 0 when none is waiting. It is the
// planner's measure of how far dispatch is behind (package planner, the
// admission of planning): a dispatcher that publishes as fast as runs fall
// due keeps it near 0, one held back (NATS away, its own writes slow) lets
// it grow.
func (w *Wheel) Lag() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	oldest := w.firing
	if len(w.h) > 0 && (oldest.IsZero() || w.h[0].ScheduledAt.Before(oldest)) {
		oldest = w.h[0].ScheduledAt
	}
	if oldest.IsZero() {
		return 0
	}
	return max(0, w.now().Sub(oldest))
}

// Len is the number of runs held.
func (w *Wheel) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.h)
}

func (w *Wheel) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run fires due runs until ctx ends. Runs still held then are dropped from
// memory only: they stay SCHEDULED in PostgreSQL and are recovered by the
// next owner of their shard.
func (w *Wheel) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if w.ready != nil && !w.ready(ctx) {
			return nil
		}
		due, wait := w.due()
		if len(due) > 0 {
			w.fire(ctx, due)
			w.release(due)
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// due pops up to limit runs whose time has come, or says how long to wait.
// A trigger batch is never split across two calls of fire (its runs are
// adjacent in the heap's order): past the limit it keeps popping the runs
// of the batch it is in. Dispatch publishes a batch as one message when it
// gets it, and a message that lacked some of the batch's runs would make
// every later publish of them a duplicate the stream drops.
func (w *Wheel) due() ([]runs.Planned, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	var out []runs.Planned
	for len(w.h) > 0 && !w.h[0].ScheduledAt.After(now) {
		if len(out) >= w.limit && (out[len(out)-1].Batch == 0 || w.h[0].Batch != out[len(out)-1].Batch) {
			break
		}
		out = append(out, heap.Pop(&w.h).(runs.Planned))
	}
	if len(out) > 0 {
		w.firing = out[0].ScheduledAt // the heap's order: the earliest
	}
	if len(out) > 0 || len(w.h) == 0 {
		return out, time.Hour
	}
	return nil, w.h[0].ScheduledAt.Sub(now)
}

// release forgets fired runs, after they were handed over, so that an Add of
// the same run racing with its firing is still ignored.
func (w *Wheel) release(fired []runs.Planned) {
	w.mu.Lock()
	for _, r := range fired {
		delete(w.held, r.RunID)
	}
	w.firing = time.Time{}
	w.mu.Unlock()
}

type runHeap []runs.Planned

func (h runHeap) Len() int      { return len(h) }
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(runs.Planned)) }

// Less orders runs by (ScheduledAt, Batch, RunID): the runs of a trigger
// batch, which share ScheduledAt, come out one after the other.
func (h runHeap) Less(i, j int) bool {
	a, b := &h[i], &h[j]
	if !a.ScheduledAt.Equal(b.ScheduledAt) {
		return a.ScheduledAt.Before(b.ScheduledAt)
	}
	if a.Batch != b.Batch {
		return a.Batch < b.Batch
	}
	return a.RunID < b.RunID
}

func (h *runHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	old[n-1] = runs.Planned{}
	*h = old[:n-1]
	return x
}
