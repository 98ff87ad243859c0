package joblock

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// Block strategy concurrent with a max_concurrency of N: the runs of a job
// may overlap, at most N at once anywhere in the group. The N slots live in
// one key of JETJOB_LOCKS, job.<jobID>_slots (SlotsKey: a broadcast part's
// lock key with _slots after it, so the cap holds per part index, as every
// block strategy does), apart from the job's own lock so that a job
// switching strategies never reads the other shape:
//
//	{"slots": [{"run": 17, "worker": "w1", "beat": 3}, …], "queue": [{"run": 19, "at": …, "worker": "w2", "beat": 1}, …]}
//
// A run takes a slot with one compare-and-set when fewer than N are held
// and no earlier fire waits; otherwise it joins the queue, in fire order
// (then run id), and waits as a serial run does: never lost, never ahead
// of an earlier fire. Unlike the single-holder lock, a run gives its slot
// back when it ends (one write): waiters then see a free slot by reading
// the key, without asking anyone whether a holder ended. Holders bump
// their slot's beat every TTL/3 and waiters their place's; a slot or
// place whose beat a waiter sees unchanged for Config.TTL (its worker
// died or stalled) is dropped. The key expires stream.LockTTL (the
// bucket's TTL) after its last write.
//
// Without max_concurrency a concurrent job's runs take no lock at all.

// acquireSlot waits for one of the n slots of the lock key and returns it
// held, or Interrupt's error (killed while waiting, or a stopping worker).
func (ls *Locks) acquireSlot(ctx context.Context, req Request, key string, n int) (*Lock, bool, error) {
	q := slotQueue{key: key, n: n, me: waiter{Run: req.Run, At: req.FireAt.UnixMilli(), P: req.priority(), Worker: ls.cfg.WorkerID},
		seen: beatsSeen{}}
	waited := false
	woken := ls.wake.join(key, req.Run)
	defer ls.wake.leave(key, req.Run)
	for {
		if err := req.interrupted(ctx, key); err != nil {
			ls.leaveSlots(ctx, key, req.Run)
			return nil, waited, err
		}
		drain(woken) // a slot given back here wakes it at once
		l, again := ls.trySlot(ctx, req, &q)
		if l != nil {
			return l, waited, nil
		}
		if again {
			continue
		}
		waited = true
		ls.waiting(&req)
		ls.await(ctx, woken, false, nil)
	}
}

// slotQueue is a waiting run's view of a slots lock.
type slotQueue struct {
	key string
	n   int
	me  waiter
	// seen: the beats of the slot holders and waiters, by run, as this
	// run last saw them.
	seen beatsSeen
	// beatAt: when this run last wrote its place in the queue.
	beatAt time.Time
}

// trySlot reads the lock once: it takes a slot if this run's turn has
// come, else joins the queue or refreshes its place. It reports the lock
// taken, or whether to look again at once (a write lost a race).
func (ls *Locks) trySlot(ctx context.Context, req Request, q *slotQueue) (*Lock, bool) {
	defer ls.turns.take(q.key)()
	val, rev, err := ls.read(ctx, q.key)
	var v value
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// rev: 0, or the delete marker's, over which put creates the key.
	case err != nil && ctx.Err() != nil:
		return nil, false // stopping: the caller sees ctx ended
	case err != nil:
		req.Log.Warn("job slots unreadable; retrying", zap.Error(err))
		return nil, false
	default:
		if err := json.Unmarshal(val, &v); err != nil {
			req.Log.Warn("job slots hold garbage; waiting for them to expire", zap.Error(err))
			return nil, false
		}
	}
	now := time.Now()
	f := slotFacts{me: q.me, n: q.n, fresh: now.Sub(q.beatAt) < ls.cfg.TTL/3}
	if !slices.ContainsFunc(v.Slots, func(s slotHolder) bool { return s.Run == q.me.Run }) {
		f.dropped = q.dropStale(&v, now, ls.cfg.TTL, req.Log)
	}
	f.v = v
	switch do, write := decideSlot(f); do {
	case holdSlot:
		return ls.holdSlot(req, q.key, rev, now), false // taken by a write whose answer was lost
	case takeSlot:
		if rev, err := ls.put(ctx, q.key, write, rev); err == nil {
			return ls.holdSlot(req, q.key, rev, now), false
		}
		return nil, true
	case queueForSlot:
		if _, err := ls.put(ctx, q.key, write, rev); err != nil {
			return nil, true
		}
		q.beatAt = now
	}
	return nil, false // waitForSlot: in line, and the place is fresh
}

// dropStale removes from v the slot holders and waiters (but this run)
// whose beat has not moved for ttl (Config.TTL), and reports whether it
// removed any. It forgets the runs no longer in v.
func (q *slotQueue) dropStale(v *value, now time.Time, ttl time.Duration, log *zap.Logger) bool {
	stale := func(run, beat int64) bool {
		if !q.seen.stale(run, beat, now, ttl) {
			return false
		}
		log.Warn("a run holding or waiting for a job slot stopped refreshing; dropping it", zap.Int64("stale_run", run))
		return true
	}
	n := len(v.Slots) + len(v.Queue)
	v.Slots = slices.DeleteFunc(v.Slots, func(s slotHolder) bool { return stale(s.Run, s.Beat) })
	v.Queue = slices.DeleteFunc(v.Queue, func(w waiter) bool { return w.Run != q.me.Run && stale(w.Run, w.Beat) })
	q.seen.forget(func(run int64) bool {
		return v.queued(run) || slices.ContainsFunc(v.Slots, func(s slotHolder) bool { return s.Run == run })
	})
	return len(v.Slots)+len(v.Queue) != n
}

// holdSlot is the slot req's run has just taken (revision rev, written at
// wrote), kept refreshed until released.
func (ls *Locks) holdSlot(req Request, key string, rev uint64, wrote time.Time) *Lock {
	l := ls.newLock(req, key)
	l.slots, l.rev, l.wrote = true, rev, wrote
	return l.start()
}

// leaveSlots gives run's slot, or its place in the queue, back.
func (ls *Locks) leaveSlots(ctx context.Context, key string, run int64) {
	defer ls.wake.all(key) // a slot or a place ahead of them is free
	defer ls.turns.take(key)()
	_ = ls.update(context.WithoutCancel(ctx), key, func(v *value) bool {
		n := len(v.Slots) + len(v.Queue)
		v.Slots = slices.DeleteFunc(v.Slots, func(s slotHolder) bool { return s.Run == run })
		v.Queue = slices.DeleteFunc(v.Queue, func(w waiter) bool { return w.Run == run })
		return len(v.Slots)+len(v.Queue) != n
	})
}

// beatsSeen is a waiting run's view of the beats of the other runs a slots
// value names (holders, waiters), by run.
type beatsSeen map[int64]*holderSeen

// stale records run's beat, seen at now, and reports whether it has not
// moved for ttl.
func (b beatsSeen) stale(run, beat int64, now time.Time, ttl time.Duration) bool {
	h := b[run]
	if h == nil {
		h = &holderSeen{}
		b[run] = h
	}
	return h.stale(run, beat, now, ttl)
}

// forget drops the runs that present says the value no longer names.
func (b beatsSeen) forget(present func(run int64) bool) {
	for run := range b {
		if !present(run) {
			delete(b, run)
		}
	}
}
