package joblock

import (
	"slices"
	"sync"
	"time"

	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/internal/stream"
)

// heldLocks is this worker's memory of the job locks its runs hold, and of
// the ones they left when they ended, by lock key (a job's own lock, or a
// sharding-broadcast part's: Key) (the key then still names the ended
// run, see Lock.Release). It lets a job's next run here skip the lock
// write altogether: a run of a serial or discard_later job whose last run
// here left the lock less than reuseFor ago holds it under that run's
// name, writing nothing, so a job that fires every second writes its lock
// about once in three runs instead of every run. (A discard_later run
// elsewhere asks this worker about the run the key names, hears that it
// holds the lock, and is discarded; one here is discarded naming the run
// that reuses the lock, running. Not cover_early: a run elsewhere covering
// this one would ask for the kill of the run the key names, which has
// ended, and the one reusing the lock would run on.)
//
// That is safe because a run elsewhere takes a lock a run of this worker
// left only after asking this worker whether that run is still active
// (OpRunActive) or after the key went unrefreshed for Config.TTL. The
// answer to the question and the decision to reuse are taken under one
// mutex: an answer "not active" first forgets the left lock, so no run here
// reuses it afterwards (the next one writes, and its compare-and-set fails
// if the asker took the key); a run here that reuses it first makes the
// answer "active". And a left lock is reused only while it is young: the
// holder's first beat then lands long before the key could expire or look
// stale to a waiter (see Lock.start).
//
// Any contention also stops the lock from being left for reuse when its
// holder ends, and makes that end hand the lock to the first in line
// (Lock.Release): a question from another worker; another run of the job
// here asking for the lock (pending); or a queue in the value the holder
// wrote or read — taking the lock over from the head of a queue, or a
// beat that finds runs queued. Whoever waits has written itself into the
// key's queue, and the next run here must read the key and stand in line
// behind it: a lock left for reuse or taken back over its revision
// (take) never has a queue behind it. The one waiter this cannot see is
// one on another worker whose question has not reached this one (its
// control requests are slow or lost) and that joined after the holder's
// last write: this worker's next runs may reuse the lock until reuseFor
// after that write; then they read the key.
type heldLocks struct {
	// reuseFor bounds the age of a left lock that a run holds without
	// writing: Config.TTL/2. With the holder's first beat due TTL/3 after
	// the key's last write at the latest (see Lock.start), the key is
	// refreshed at most half a TTL after it was written, leaving half a
	// TTL to spare.
	reuseFor time.Duration
	// now is the clock; tests set a fake one.
	now func() time.Time

	mu   sync.Mutex
	left map[string]leftLock // lock key → the lock its last run here left
	held map[string]*Lock    // lock key → the lock a run here holds
	// askedAt: locks another worker asked about while no run here held
	// them, the run asked about, and when. A run here that registers its
	// hold under that run's name wrote the key just before the question
	// (its write done, not yet registered): its lock counts as contended.
	// A question about another run is not about that hold: its asker's
	// compare-and-set fails, and it asks again about the new holder.
	askedAt map[string]askedMark
	// contended: locks a run here left while others waited for them (they
	// are not in left), and when; a stopping worker hands them on.
	contended map[string]time.Time
	// pending: the runs here asking for each lock (Acquire, a single
	// holder's lock) that do not hold it: the order of their fires is
	// known here exactly, so none of them takes the lock ahead of an
	// earlier one that has yet to write its place in the queue (yield),
	// none takes a fast path (reuse, take, create) while another asks, and
	// a lock held here while one asks is contended.
	pending map[string][]waiter
}

// leftLock is a lock an ended run left.
type leftLock struct {
	holder int64  // the run the key names
	rev    uint64 // the key's revision, as that run last wrote it
	wrote  time.Time
}

// maxLockMarks bounds the memory: frequent jobs refill it at once.
const maxLockMarks = 100_000

// askedMark is a question about a lock nobody here held.
type askedMark struct {
	run int64 // the run asked about
	at  time.Time
}

// arrive registers run me of this worker as asking for the lock key;
// depart (or register, once it holds) ends that.
func (h *heldLocks) arrive(key string, me waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending == nil {
		h.pending = make(map[string][]waiter)
	}
	h.pending[key] = append(h.pending[key], me)
}

// depart unregisters run, which no longer asks for the lock key.
func (h *heldLocks) depart(key string, run int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unpend(key, run)
}

func (h *heldLocks) unpend(key string, run int64) {
	q := slices.DeleteFunc(h.pending[key], func(w waiter) bool { return w.Run == run })
	if len(q) == 0 {
		delete(h.pending, key)
		return
	}
	h.pending[key] = q
}

// others reports whether a run here other than run asks for the lock key.
func (h *heldLocks) others(key string, run int64) bool {
	return slices.ContainsFunc(h.pending[key], func(w waiter) bool { return w.Run != run })
}

// yield reports whether a run here of an earlier fire than me asks for the
// lock key and is not in queue (the value me read) yet: me must not take
// the lock ahead of it, nor hand it to a later one.
func (h *heldLocks) yield(key string, me waiter, queue []waiter) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.pending[key], func(w waiter) bool {
		return w.Run != me.Run && flowkv.ByFire(w, me) < 0 &&
			!slices.ContainsFunc(queue, func(q waiter) bool { return q.Run == w.Run })
	})
}

// reuse registers l as holding lock key under the name of the run that
// left it, if that lock is young enough (and nobody asked about it since),
// and no other run here asks for it.
func (h *heldLocks) reuse(key string, l *Lock) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	lf, ok := h.left[key]
	if !ok || h.now().Sub(lf.wrote) >= h.reuseFor || h.others(key, l.run) {
		return false
	}
	delete(h.left, key)
	l.as, l.rev, l.wrote = lf.holder, lf.rev, lf.wrote
	h.register(key, l, false)
	return true
}

// take removes and returns the revision of the lock the job's last run
// here left, for run's conditional write over it: only worth it while the
// bucket still keeps the key (stream.LockTTL after its last write; after
// that the key is gone and Create takes it in one write anyway), and only
// while no other run here asks for it. A left lock has no queue at that
// revision (see the type's doc): the write loses no waiter.
func (h *heldLocks) take(key string, run int64) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.others(key, run) {
		return 0, false
	}
	lf, ok := h.left[key]
	delete(h.left, key)
	if !ok || h.now().Sub(lf.wrote) > stream.LockTTL-time.Second {
		return 0, false
	}
	return lf.rev, true
}

// alone reports whether no run here but run asks for the lock key: only
// then may run create it without reading it first.
func (h *heldLocks) alone(key string, run int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.others(key, run)
}

// hold registers l, whose run has just written the lock key (or found it
// handed over); contended: the value has runs queued behind it.
func (h *heldLocks) hold(key string, l *Lock, contended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.register(key, l, contended)
}

func (h *heldLocks) register(key string, l *Lock, contended bool) {
	if h.held == nil {
		h.held = make(map[string]*Lock)
	}
	h.held[key] = l
	delete(h.left, key) // whatever a run here left is not the key's now
	h.unpend(key, l.run)
	l.contended = contended || h.others(key, l.run)
	if m, ok := h.askedAt[key]; ok {
		delete(h.askedAt, key)
		l.contended = l.contended || m.run == l.as
	}
}

// contendHeld marks l contended: its beat found runs queued.
func (h *heldLocks) contendHeld(l *Lock) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l.contended = true
}

// release unregisters l, whose run has ended, and remembers the lock it
// leaves unless someone waits for it; it reports whether someone does (or
// may): the lock is then to be handed on (Locks.handOn).
func (h *heldLocks) release(key string, l *Lock) (contended bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held[key] == l {
		delete(h.held, key)
	}
	if l.contended || h.others(key, l.run) {
		h.markContended(key)
		return true
	}
	if h.left == nil || len(h.left) >= maxLockMarks {
		h.left = make(map[string]leftLock)
	}
	h.left[key] = leftLock{holder: l.as, rev: l.rev, wrote: l.wrote}
	return false
}

// markContended records that the lock key may name a run here that ended
// while others wait for it.
func (h *heldLocks) markContended(key string) {
	if h.contended == nil || len(h.contended) >= maxLockMarks {
		h.contended = make(map[string]time.Time)
	}
	h.contended[key] = h.now()
}

// contend records that a run here waits for the lock key: the lock left here
// is not reused, and the one held here is not left for reuse.
func (h *heldLocks) contend(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.left, key)
	if l := h.held[key]; l != nil {
		l.contended = true
	}
}

// takenAway reports whether another worker's run may hold the lock key
// now: one asked about it, or waited for it, less than stream.LockTTL ago
// (the key outlives its last write by that long). The job's next run here
// then reads the key at once rather than first trying to create it.
func (h *heldLocks) takenAway(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if at, ok := h.contended[key]; ok && now.Sub(at) < stream.LockTTL {
		return true
	}
	m, ok := h.askedAt[key]
	return ok && now.Sub(m.at) < stream.LockTTL
}

// running is the run here that holds the lock key under holder's name
// (itself, or a run that reuses the lock holder left), else holder.
func (h *heldLocks) running(key string, holder int64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.held[key]; l != nil && l.as == holder {
		return l.run
	}
	return holder
}

// holds reports whether a run here holds the lock key under holder's name.
func (h *heldLocks) holds(key string, holder int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.held[key]
	return l != nil && l.as == holder
}

// asked answers another worker's question whether holder, named by the
// lock key, is active here, as far as the lock goes: it is if a run here
// holds the lock under its name. Either way the asker waits for the lock
// (or takes it), so it is contended from now on.
func (h *heldLocks) asked(key string, holder int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if key == "" { // an asker that does not say the lock: find it
		for k, l := range h.held {
			if l.as == holder {
				key = k
			}
		}
		for k, lf := range h.left {
			if lf.holder == holder {
				key = k
			}
		}
		if key == "" {
			return false
		}
	}
	if _, ok := h.left[key]; ok {
		delete(h.left, key)
		h.markContended(key)
	}
	l := h.held[key]
	if l != nil {
		l.contended = true
		return l.as == holder
	}
	if h.askedAt == nil || len(h.askedAt) >= maxLockMarks {
		h.askedAt = make(map[string]askedMark)
	}
	h.askedAt[key] = askedMark{run: holder, at: h.now()}
	return false
}

// drain returns the left locks still in the bucket (key → revision), the
// locks runs here may have left contended, and forgets all.
func (h *heldLocks) drain() (left map[string]uint64, contended map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	left = make(map[string]uint64, len(h.left))
	for key, lf := range h.left {
		if now.Sub(lf.wrote) <= stream.LockTTL {
			left[key] = lf.rev
		}
	}
	contended = make(map[string]bool, len(h.contended))
	for key, at := range h.contended {
		if now.Sub(at) <= stream.LockTTL {
			contended[key] = true
		}
	}
	h.left, h.contended = nil, nil
	return left, contended
}
