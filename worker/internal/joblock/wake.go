package joblock

import (
	"context"
	"sync"
	"time"
)

// How a waiting run learns that its lock may have changed. Under overload
// the runs of one job overlap and most of them wait on the same worker as
// the run holding the lock; polling the key every pollLock was then a
// fifth of the worker's CPU (docs/performance.md, issue #27), every waiter
// re-reading a key that only a run of its own process could change. So a
// waiter is woken by its own process instead: every change this process
// makes to a key — a write or delete that sticks (publish), a release that
// writes nothing (Lock.Release), a run giving up its wait (acquireHolder) —
// wakes the process's waiters on that key at once, and a waiter whose
// holder is held here (heldLocks.holds) re-reads the key only when woken or
// every pollLocal (TTL/3), which still catches what only another worker can
// do to it: take over a holder gone stale, write a place, drop a dead
// first in line. A holder elsewhere is polled every pollLock as before:
// its release or death shows only in the key.

// wakes is the per-key notifier of one Locks: for each key some run here
// waits for, a channel closed when this process changes the key. Keys
// nobody here waits for have no entry, so a change to them costs a map
// lookup.
type wakes struct {
	mu   sync.Mutex
	keys map[string]*keyWake
}

// keyWake is the notifier of one key.
type keyWake struct {
	ch      chan struct{} // closed, and replaced, at the key's next change
	waiters int           // runs here between join and leave
}

// join registers a run here as waiting for the lock key; leave ends that.
func (ws *wakes) join(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.keys == nil {
		ws.keys = make(map[string]*keyWake)
	}
	k := ws.keys[key]
	if k == nil {
		k = &keyWake{ch: make(chan struct{})}
		ws.keys[key] = k
	}
	k.waiters++
}

// leave unregisters a waiter of the lock key (joined before); the key's
// entry goes with its last waiter.
func (ws *wakes) leave(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if k := ws.keys[key]; k != nil {
		if k.waiters--; k.waiters <= 0 {
			delete(ws.keys, key)
		}
	}
}

// next is the channel closed at the lock key's next change here. A waiter
// that joined takes it before it reads the key, so that a change after the
// read is never missed.
func (ws *wakes) next(key string) <-chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if k := ws.keys[key]; k != nil {
		return k.ch
	}
	return nil // not joined: never woken, polls only
}

// changed wakes the waiters of the lock key: this process changed it.
func (ws *wakes) changed(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if k := ws.keys[key]; k != nil {
		close(k.ch)
		k.ch = make(chan struct{})
	}
}

// watched is how many keys have waiters here (for tests: none are left
// behind).
func (ws *wakes) watched() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.keys)
}

// await waits until a waiting run should look at its lock again: woken
// (the key changed here), ctx done, or the next poll. With local unset it
// waits one pollLock. With local set (the holder the run saw is held here)
// it waits up to pollLocal, and every pollLock it asks stay whether to go
// on waiting without a read — false once the holder is no longer held here
// (a wake missed between the read and the check is then no worse than a
// poll) or the run is interrupted, which Request.Interrupt only tells when
// asked.
func (ls *Locks) await(ctx context.Context, woken <-chan struct{}, local bool, stay func() bool) {
	tick := time.NewTicker(ls.poll)
	defer tick.Stop()
	var deadline <-chan time.Time
	if local {
		t := time.NewTimer(ls.pollLocal)
		defer t.Stop()
		deadline = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-woken:
			return
		case <-deadline:
			return
		case <-tick.C:
			if !local || !stay() {
				return
			}
		}
	}
}
