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
// waiter is woken by its own process instead, and only when it has
// something to do: the run a lock is handed to (handOn, leaveQueue, a
// waiter handing an ended holder's lock on); every waiter when a holder
// here ends without handing the lock on, hands it to another worker's run,
// or a run gives up its wait; and the runs that yield to an earlier fire
// here (heldLocks.yield) whenever another run here joins the queue, takes
// the lock or gives up. Other writes (beats, places, take-overs) wake
// nobody: a waiter that stays in line behind a run of this process need
// not look. A waiter whose holder is held here (heldLocks.holds) therefore
// reads the key only when woken, or every pollLocal (TTL/3), which still
// catches what only another worker can do to it: take over a holder gone
// stale, write a place, drop a dead first in line. A holder elsewhere is
// polled every pollLock as before: its release or death shows only in the
// key.

// wakes is the per-key notifier of one Locks: for each key some runs here
// wait for, each waiter's wake-up channel. Keys nobody here waits for have
// no entry, so waking them costs a map lookup.
type wakes struct {
	mu   sync.Mutex
	keys map[string]map[int64]*wakeup // lock key → waiting run → its wake-up
}

// wakeup is one waiting run's: a token in ch (capacity 1) wakes it. The
// run empties ch before each read of the key, so a wake-up after the read
// is never lost, and one before it costs at most a look.
type wakeup struct {
	ch chan struct{}
	// yielding: the run's last look yielded to a run here of an earlier
	// fire that had not queued yet.
	yielding bool
}

func (u *wakeup) wake() {
	select {
	case u.ch <- struct{}{}:
	default: // a token is there already
	}
}

// join registers run as waiting for the lock key and returns its wake-up
// channel; leave ends that.
func (ws *wakes) join(key string, run int64) chan struct{} {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.keys == nil {
		ws.keys = make(map[string]map[int64]*wakeup)
	}
	runs := ws.keys[key]
	if runs == nil {
		runs = make(map[int64]*wakeup)
		ws.keys[key] = runs
	}
	u := &wakeup{ch: make(chan struct{}, 1)}
	runs[run] = u
	return u.ch
}

// leave unregisters run, no longer waiting for the lock key; the key's
// entry goes with its last waiter.
func (ws *wakes) leave(key string, run int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.keys[key], run)
	if len(ws.keys[key]) == 0 {
		delete(ws.keys, key)
	}
}

// yield records whether run's last look at the lock key yielded.
func (ws *wakes) yield(key string, run int64, yielding bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if u := ws.keys[key][run]; u != nil {
		u.yielding = yielding
	}
}

// all wakes every run here waiting for the lock key.
func (ws *wakes) all(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.wake(key, 0, true)
}

// handedTo wakes run, to which the lock key was handed, and the runs
// that yield; if run does not wait here, every waiter here: the holder is
// now elsewhere, so they poll again.
func (ws *wakes) handedTo(key string, run int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.wake(key, run, ws.keys[key][run] == nil)
}

// yielders wakes the runs waiting for the lock key that yield to an
// earlier fire here: another run here joined the queue, took the lock or
// gave up.
func (ws *wakes) yielders(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.wake(key, 0, false)
}

// wake wakes run, the runs that yield, or with all every waiter of the
// lock key. ws.mu is held.
func (ws *wakes) wake(key string, run int64, all bool) {
	for r, u := range ws.keys[key] {
		if all || r == run || u.yielding {
			u.wake()
		}
	}
}

// watched is how many keys have waiters here (for tests: none are left
// behind).
func (ws *wakes) watched() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.keys)
}

// drain empties a wake-up channel: the run is about to read the key.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// await waits until a waiting run should look at its lock again: woken,
// ctx done, or the next poll: one pollLock, or with local set (the holder
// the run saw is held here) pollLocal. A local wait still asks stay every
// pollLock whether to go on (Request.Interrupt tells a kill only when
// asked).
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
