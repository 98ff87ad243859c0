package worker

import (
	"cmp"
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
// one key of JETJOB_LOCKS, job.<jobID>_slots (a broadcast part's lock key
// with _slots after it: the cap then holds per part index, as every block
// strategy does), apart from the job's own lock so that a job switching
// strategies never reads the other shape:
//
//	{"slots": [{"run": 17, "worker": "w1", "beat": 3}, …], "queue": [{"run": 19, "at": …, "worker": "w2", "beat": 1}, …]}
//
// A run takes a slot with one compare-and-set when fewer than N are held
// and no earlier fire waits; otherwise it joins the queue, in fire order
// (then run id), and waits as a serial run does: never lost, never ahead
// of an earlier fire. Unlike the single-holder lock, a run gives its slot
// back when it ends (one write): waiters then see a free slot by reading
// the key, without asking anyone whether a holder ended. Holders bump
// their slot's beat every LockTTL/3 and waiters their place's; a slot or
// place whose beat a waiter sees unchanged for Config.LockTTL (its worker
// died or stalled) is dropped. The key expires stream.LockTTL (the
// bucket's TTL) after its last write.
//
// Without max_concurrency a concurrent job's runs take no lock at all.

// slotsSuffix ends the key of a job's slots lock.
const slotsSuffix = "_slots"

// slotHolder is a run holding one of a job's slots.
type slotHolder struct {
	Run    int64  `json:"run"`
	Worker string `json:"worker"`
	Beat   int64  `json:"beat,omitempty"`
}

// blockSlots waits for one of the n slots of the lock key and returns it
// held, or an outcome that ends the run without running it (killed while
// waiting, or handed back by a stopping worker).
func (r *run) blockSlots(ctx context.Context, key string, n int) (*jobLock, *outcome) {
	q := slotQueue{key: key, n: n, me: waiter{Run: r.trig.RunID, At: r.trig.ScheduledAt.UnixMilli(), Worker: r.w.cfg.ID},
		seen: map[int64]*holderSeen{}}
	for {
		if out := r.interrupted(); out != nil {
			r.leaveSlots(ctx, key)
			return nil, out
		}
		l, again := r.trySlot(ctx, &q)
		if l != nil {
			return l, nil
		}
		if again {
			continue
		}
		r.waitedLock = true // metrics.go: lock waits
		select {
		case <-r.w.stopCtx.Done():
		case <-time.After(pollLock):
		}
	}
}

// slotQueue is a waiting run's view of a slots lock.
type slotQueue struct {
	key string
	n   int
	me  waiter
	// seen: the beats of the slot holders and waiters, by run, as this
	// run last saw them (holderSeen).
	seen map[int64]*holderSeen
	// beatAt: when this run last wrote its place in the queue.
	beatAt time.Time
}

// trySlot reads the lock once: it takes a slot if this run's turn has
// come, else joins the queue or refreshes its place. It reports the lock
// taken, or whether to look again at once (a write lost a race).
func (r *run) trySlot(ctx context.Context, q *slotQueue) (*jobLock, bool) {
	val, rev, err := r.w.readLock(ctx, q.key)
	var v lockValue
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		rev = 0
	case err != nil:
		r.log.Warn("job slots unreadable; retrying", zap.Error(err))
		return nil, false
	default:
		if err := json.Unmarshal(val, &v); err != nil {
			r.log.Warn("job slots hold garbage; waiting for them to expire", zap.Error(err))
			return nil, false
		}
	}
	now := time.Now()
	isMe := func(w waiter) bool { return w.Run == q.me.Run }
	if slices.ContainsFunc(v.Slots, func(s slotHolder) bool { return s.Run == q.me.Run }) {
		return r.holdSlot(q.key, rev, now), false // taken by a write whose answer was lost
	}
	dropped := q.dropStale(&v, now, r.w.cfg.LockTTL, r.log)
	// Runs ahead of this one: the queued ones of earlier fires.
	ahead := 0
	for _, w := range v.Queue {
		if !isMe(w) && cmp.Or(cmp.Compare(w.At, q.me.At), cmp.Compare(w.Run, q.me.Run)) < 0 {
			ahead++
		}
	}
	if len(v.Slots)+ahead < q.n {
		v.Slots = append(v.Slots, slotHolder{Run: q.me.Run, Worker: q.me.Worker})
		v.Queue = slices.DeleteFunc(v.Queue, isMe)
		if rev, err := r.w.putLock(ctx, q.key, &v, rev); err == nil {
			return r.holdSlot(q.key, rev, now), false
		}
		return nil, true
	}
	i := slices.IndexFunc(v.Queue, isMe)
	if i >= 0 && !dropped && now.Sub(q.beatAt) < r.w.cfg.LockTTL/3 {
		return nil, false // in line, and the place is fresh
	}
	if i >= 0 {
		v.Queue[i].Beat++
	} else {
		v.Queue = append(v.Queue, q.me)
		slices.SortFunc(v.Queue, func(a, b waiter) int {
			return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Run, b.Run))
		})
	}
	if _, err := r.w.putLock(ctx, q.key, &v, rev); err != nil {
		return nil, true
	}
	q.beatAt = now
	return nil, false
}

// dropStale removes from v the slot holders and waiters (but this run)
// whose beat has not moved for ttl (Config.LockTTL), and reports whether it
// removed any. It forgets the runs no longer in v.
func (q *slotQueue) dropStale(v *lockValue, now time.Time, ttl time.Duration, log *zap.Logger) bool {
	present := make(map[int64]bool, len(v.Slots)+len(v.Queue))
	stale := func(run, beat int64) bool {
		present[run] = true
		h := q.seen[run]
		if h == nil {
			h = &holderSeen{}
			q.seen[run] = h
		}
		if !h.stale(run, beat, now, ttl) {
			return false
		}
		log.Warn("a run holding or waiting for a job slot stopped refreshing; dropping it", zap.Int64("stale_run", run))
		return true
	}
	n := len(v.Slots) + len(v.Queue)
	v.Slots = slices.DeleteFunc(v.Slots, func(s slotHolder) bool { return stale(s.Run, s.Beat) })
	v.Queue = slices.DeleteFunc(v.Queue, func(w waiter) bool { return w.Run != q.me.Run && stale(w.Run, w.Beat) })
	for run := range q.seen {
		if !present[run] {
			delete(q.seen, run)
		}
	}
	return len(v.Slots)+len(v.Queue) != n
}

// putLock writes v to the lock key over revision rev (0: the key is
// absent, create it) and returns the new revision.
func (w *Worker) putLock(ctx context.Context, key string, v *lockValue, rev uint64) (uint64, error) {
	body, _ := json.Marshal(v)
	if rev == 0 {
		return w.locks.Create(ctx, key, body)
	}
	return w.locks.Update(ctx, key, body, rev)
}

// holdSlot is the slot r has just taken (revision rev, written at wrote),
// kept refreshed until released.
func (r *run) holdSlot(key string, rev uint64, wrote time.Time) *jobLock {
	l := r.newLock(key)
	l.slots, l.rev, l.wrote = true, rev, wrote
	return l.start()
}

// leaveSlots gives r's slot, or its place in the queue, back.
func (r *run) leaveSlots(ctx context.Context, key string) {
	_ = r.w.updateLock(context.WithoutCancel(ctx), key, func(v *lockValue) bool {
		n := len(v.Slots) + len(v.Queue)
		v.Slots = slices.DeleteFunc(v.Slots, func(s slotHolder) bool { return s.Run == r.trig.RunID })
		v.Queue = slices.DeleteFunc(v.Queue, func(w waiter) bool { return w.Run == r.trig.RunID })
		return len(v.Slots)+len(v.Queue) != n
	})
}

// beatIn bumps the beat of l's holder in v, and reports false if v no
// longer names l's run (the lock expired or was taken over).
func (l *jobLock) beatIn(v *lockValue) bool {
	if !l.slots {
		if v.Holder != l.as {
			return false
		}
		v.Beat++
		return true
	}
	i := slices.IndexFunc(v.Slots, func(s slotHolder) bool { return s.Run == l.as })
	if i < 0 {
		return false
	}
	v.Slots[i].Beat++
	return true
}
