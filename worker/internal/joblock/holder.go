package joblock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/policy"
)

// acquireHolder takes a single-holder lock (serial, discard_later,
// cover_early): see the package doc.
func (ls *Locks) acquireHolder(ctx context.Context, req Request, key string, strategy policy.Block) (lock *Lock, waited bool, err error) {
	me := waiter{Run: req.Run, At: req.FireAt.UnixMilli(), Worker: ls.cfg.WorkerID}
	// From now until it holds the lock or gives up, the run asks for it
	// here: no other run here takes the lock ahead of it (heldLocks).
	ls.held.arrive(key, me)
	defer func() {
		ls.held.depart(key, me.Run)
		if lock == nil {
			// Gave up, maybe without a write (an ended holder's lock
			// left to it, runs here of later fires yielding to it).
			ls.wake.all(key)
		} else {
			ls.wake.yielders(key)
		}
	}()
	// The common cases first, while no other run here asks for the lock:
	// the job's last run ended here and left the lock (see heldLocks): no
	// write while it is young, else one; or nobody holds it: one write.
	// Not under cover_early: a run elsewhere that covers this one would
	// ask for the kill of the run the key names, the ended one.
	if strategy != policy.BlockCoverEarly {
		l := ls.newLock(req, key)
		if ls.held.reuse(key, l) {
			return l.start(), false, nil
		}
	}
	body := ls.freshValue(me.Run)
	if rev, ok := ls.held.take(key, me.Run); ok {
		at := time.Now()
		if rev, err := ls.write(ctx, key, body, rev); err == nil {
			return ls.hold(req, key, rev, at, false), false, nil
		}
	}
	// A create is the one write a free lock costs; a lock that another
	// worker took from this one lately (it asked) most likely still names
	// that worker's run, so it is read at once instead of after a create
	// bound to fail; so is one another run here asks for.
	readFirst := ls.held.takenAway(key) || !ls.held.alone(key, me.Run)
	if !readFirst {
		at := time.Now()
		if rev, err := ls.write(ctx, key, body, 0); err == nil {
			return ls.hold(req, key, rev, at, false), false, nil
		}
	}
	// Taken: whoever holds it, a run of this worker does not leave it for
	// reuse but for the queue this run joins.
	ls.held.contend(key)
	woken := ls.wake.join(key, me.Run)
	defer ls.wake.leave(key, me.Run)
	w := &holderWait{key: key, me: me, strategy: strategy}
	stay := func() bool { return req.interrupted(ctx, key) == nil }
	for first := true; ; first = false {
		if err := req.interrupted(ctx, key); err != nil {
			ls.leaveQueue(ctx, key, me.Run)
			return nil, true, err
		}
		drain(woken) // before the read: no wake-up after it is lost
		l, again, err := ls.lookHolder(ctx, &req, w)
		switch {
		case l != nil:
			// A free lock this run created at its first look did not wait.
			return l, !(first && readFirst && w.created), nil
		case err != nil:
			return nil, true, err
		case again:
			continue // changed meanwhile: look again at once
		}
		if w.queued {
			ls.waiting(&req)
		}
		// A holder here changes only by this process, which wakes the
		// run when it has something to do; one yielded to is polled.
		local := w.seen != 0 && !w.yielded && ls.held.holds(key, w.seen)
		ls.await(ctx, woken, local, stay)
	}
}

// holderWait is a run's wait for a single-holder lock, across its looks.
type holderWait struct {
	key       string
	me        waiter
	strategy  policy.Block
	askedKill bool
	holder    holderSeen // the holder's beat
	head      holderSeen // the first waiter's place beat
	placeAt   time.Time  // when this run last wrote its place
	created   bool       // the lock held was absent, and created
	queued    bool       // this run's place is in the queue, as last seen
	seen      int64      // the holder the last look read, 0 if none
	yielded   bool       // the last look yielded to an earlier fire here
}

// yield records whether the run's look yields to an earlier fire here
// (its wake-up then comes when that run queues, holds or gives up), and
// returns it.
func (w *holderWait) yield(ls *Locks, yielding bool) bool {
	if yielding != w.yielded {
		w.yielded = yielding
		ls.wake.yield(w.key, w.me.Run, yielding)
	}
	return yielding
}

// lookHolder reads the lock once and acts on it (decideHolder): it returns
// the lock held, or a DiscardedError, or reports whether to look again at
// once (a write lost a race); none of them: wait a poll.
func (ls *Locks) lookHolder(ctx context.Context, req *Request, w *holderWait) (*Lock, bool, error) {
	key, me := w.key, w.me
	w.seen = 0
	val, rev, err := ls.read(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// Absent, or deleted (rev is then the delete marker's): create it,
		// unless a run here of an earlier fire is about to.
		if w.yield(ls, ls.held.yield(key, me, nil)) {
			return nil, false, nil
		}
		at := time.Now()
		if rev, err := ls.write(ctx, key, ls.freshValue(me.Run), rev); err == nil {
			w.created = true
			return ls.hold(*req, key, rev, at, false), false, nil
		}
		return nil, true, nil // someone took it first: look again
	case err != nil && ctx.Err() != nil:
		// The worker stops or the run was given up: nothing to retry,
		// the caller sees ctx ended.
		return nil, false, nil
	case err != nil:
		req.Log.Warn("job lock unreadable; retrying", zap.Error(err))
		return nil, false, nil
	}
	var v value
	if err := json.Unmarshal(val, &v); err != nil {
		req.Log.Warn("job lock holds garbage; waiting for it to expire", zap.Error(err))
		return nil, false, nil
	}
	if v.Holder == me.Run { // handed over to us
		return ls.hold(*req, key, rev, time.Now(), len(v.Queue) > 0), false, nil
	}
	w.seen = v.Holder
	now := time.Now()
	f := holderFacts{me: me, strategy: w.strategy, askedKill: w.askedKill, mine: v.Worker == ls.cfg.WorkerID,
		stale:   w.holder.stale(v.Holder, v.Beat, now, ls.cfg.TTL),
		dropped: w.head.dropStaleHead(&v, me.Run, now, ls.cfg.TTL, req.Log),
	}
	f.v = v
	f.yield = w.yield(ls, ls.held.yield(key, me, v.Queue))
	f.placeDue = f.v.place(me.Run) == 0 && now.Sub(w.placeAt) >= ls.cfg.TTL/3
	// The holder's worker is asked only when the answer matters; this
	// worker's own runs are looked up here.
	if f.mine || (f.next() && !f.stale && !f.yield) {
		f.ended = ls.holderEnded(ctx, req.Job, key, &v)
	}
	d := decideHolder(f)
	switch d.do {
	case takeOver:
		// The holder ended and left the lock, or stopped beating (its
		// worker died or stalled), and this run is next.
		if f.stale {
			req.Log.Warn("job lock holder stopped refreshing; taking the lock over",
				zap.Int64("holder_run", v.Holder), zap.String("holder_worker", v.Worker))
		}
		at := time.Now()
		if rev, err := ls.put(ctx, key, d.write, rev); err == nil {
			return ls.hold(*req, key, rev, at, len(d.write.Queue) > 0), false, nil
		}
		return nil, true, nil
	case handOn:
		if _, err := ls.put(ctx, key, d.write, rev); err == nil {
			ls.wake.handedTo(key, d.write.Holder)
		}
		return nil, true, nil // look again: at the lock handed on, or at what changed
	case discard:
		holder := v.Holder
		if f.mine {
			// A run here may hold the lock under the name of the ended
			// run the key names (heldLocks.reuse): name it.
			holder = ls.held.running(key, holder)
		}
		return nil, false, &DiscardedError{Holder: holder, Waiting: d.waiting}
	}
	if d.kill {
		w.askedKill = true
		req.Log.Info("covering the active run (block strategy cover_early)", zap.Int64("active_run", v.Holder))
		if err := ls.cfg.Kill(ctx, v.Holder, fmt.Sprintf("covered by run %d (block strategy cover_early)", me.Run)); err != nil {
			req.Log.Warn("kill request for the covered run not stored; waiting for it to end", zap.Error(err))
		}
	}
	wasQueued := f.v.queued(me.Run)
	w.queued = wasQueued
	if d.write != nil {
		if _, err := ls.put(ctx, key, d.write, rev); err != nil {
			return nil, true, nil
		}
		i := d.write.place(me.Run)
		if i >= 0 && !wasQueued {
			ls.wake.yielders(key) // joined: a run yielding to it may go on
		}
		w.queued = i >= 0
		switch {
		case i >= 0 && f.placeDue:
			ls.cfg.TestSignals.Beat.Signal(Beat{Run: me.Run, Beat: d.write.Queue[i].Beat, Place: true})
			w.placeAt = now
		case i >= 0 && !wasQueued:
			w.placeAt = now // joined
		}
	}
	return nil, false, nil
}
