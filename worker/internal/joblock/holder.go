package joblock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/control"
)

// acquireHolder takes a single-holder lock (serial, discard_later,
// cover_early): see the package doc.
func (ls *Locks) acquireHolder(ctx context.Context, req Request, key string, strategy policy.Block) (*Lock, bool, error) {
	me := waiter{Run: req.Run, At: req.FireAt.UnixMilli(), Worker: ls.cfg.WorkerID}
	askedKill := false
	var seen holderSeen
	// The common cases first: the job's last run ended here and left the
	// lock (see heldLocks): no write while it is young, else one; or nobody
	// holds it: one write. Not under cover_early: a run elsewhere that
	// covers this one would ask for the kill of the run the key names, the
	// ended one.
	if strategy != policy.BlockCoverEarly {
		l := ls.newLock(req, key)
		if ls.held.reuse(key, l) {
			return l.start(), false, nil
		}
	}
	body := ls.freshValue(me.Run)
	if rev, ok := ls.held.take(key); ok {
		at := time.Now()
		if rev, err := ls.write(ctx, key, body, rev); err == nil {
			return ls.hold(req, key, rev, at), false, nil
		}
	}
	// A create is the one write a free lock costs; a lock that another
	// worker took from this one lately (it asked) most likely still names
	// that worker's run, so it is read at once instead of after a create
	// bound to fail.
	readFirst := ls.held.takenAway(key)
	if !readFirst {
		at := time.Now()
		if rev, err := ls.write(ctx, key, body, 0); err == nil {
			return ls.hold(req, key, rev, at), false, nil
		}
	}
	// Taken: whoever holds it, a run of this worker does not leave it for
	// reuse but for the queue this run joins.
	ls.held.contend(key)
	for first := true; ; first = false {
		if err := req.interrupted(ctx, key); err != nil {
			ls.leaveQueue(ctx, key, me.Run)
			return nil, true, err
		}
		val, rev, err := ls.read(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			// Absent, or deleted (rev is then the delete marker's).
			at := time.Now()
			if rev, err := ls.write(ctx, key, body, rev); err == nil {
				return ls.hold(req, key, rev, at), !(first && readFirst), nil
			}
			continue // someone took it first: look again
		case err != nil:
			req.Log.Warn("job lock unreadable; retrying", zap.Error(err))
		default:
			var v value
			if err := json.Unmarshal(val, &v); err != nil {
				req.Log.Warn("job lock holds garbage; waiting for it to expire", zap.Error(err))
				break
			}
			if v.Holder == me.Run {
				return ls.hold(req, key, rev, time.Now()), true, nil // handed over to us (by an older worker)
			}
			f := holderFacts{v: v, me: me, strategy: strategy, askedKill: askedKill,
				stale: seen.stale(v.Holder, v.Beat, time.Now(), ls.cfg.TTL)}
			// The holder's worker is asked only when the answer matters.
			f.ended = f.next() && !f.stale && ls.holderEnded(ctx, req.Job, key, &v)
			d := decideHolder(f)
			switch d.do {
			case takeOver:
				// The holder ended and left the lock, or stopped beating
				// (its worker died or stalled), and this run is next.
				if f.stale {
					req.Log.Warn("job lock holder stopped refreshing; taking the lock over",
						zap.Int64("holder_run", v.Holder), zap.String("holder_worker", v.Worker))
				}
				body, _ := json.Marshal(d.write)
				at := time.Now()
				if rev, err := ls.write(ctx, key, body, rev); err == nil {
					return ls.hold(req, key, rev, at), true, nil
				}
				continue // changed meanwhile: look again at once
			case discard:
				holder := v.Holder
				if v.Worker == ls.cfg.WorkerID {
					// A run here may hold the lock under the name of the
					// ended run the key names (heldLocks.reuse): name it.
					holder = ls.held.running(key, holder)
				}
				return nil, true, &DiscardedError{Holder: holder}
			}
			if d.kill {
				askedKill = true
				req.Log.Info("covering the active run (block strategy cover_early)", zap.Int64("active_run", v.Holder))
				if err := ls.cfg.Kill(ctx, v.Holder, fmt.Sprintf("covered by run %d (block strategy cover_early)", me.Run)); err != nil {
					req.Log.Warn("kill request for the covered run not stored; waiting for it to end", zap.Error(err))
				}
			}
			if d.write != nil {
				body, _ := json.Marshal(d.write)
				if _, err := ls.write(ctx, key, body, rev); err != nil {
					continue // changed meanwhile: look again at once
				}
			}
		}
		ls.waiting(&req)
		sleep(ctx)
	}
}

// leaveQueue takes a run that gives up waiting out of the queue (and hands
// the lock on if it was handed to it meanwhile).
func (ls *Locks) leaveQueue(ctx context.Context, key string, run int64) {
	_ = ls.update(context.WithoutCancel(ctx), key, func(v *value) bool {
		if v.Holder == run {
			return handOver(v)
		}
		i := slices.IndexFunc(v.Queue, func(w waiter) bool { return w.Run == run })
		if i < 0 {
			return false
		}
		v.Queue = slices.Delete(v.Queue, i, i+1)
		return true
	})
}

// handOver passes the lock to the first queued run; with no queue it
// clears the holder (update then deletes the key).
func handOver(v *value) bool {
	if len(v.Queue) == 0 {
		v.Holder = 0
		return true
	}
	v.Holder, v.Worker, v.Queue = v.Queue[0].Run, v.Queue[0].Worker, v.Queue[1:]
	return true
}

// holderSeen is a waiting run's view of the lock holder: who, at which
// beat, first seen when (by this process's clock, so clocks of different
// workers never need to agree).
type holderSeen struct {
	holder, beat int64
	since        time.Time
}

// stale records a holder and its beat and reports whether they have not
// changed for ttl (Config.TTL).
func (h *holderSeen) stale(holder, beat int64, now time.Time, ttl time.Duration) bool {
	if h.since.IsZero() || h.holder != holder || h.beat != beat {
		*h = holderSeen{holder: holder, beat: beat, since: now}
		return false
	}
	return now.Sub(h.since) > ttl
}

// holderEnded says whether the run holding a job lock has ended (runs leave
// the lock when they end, see Release), asking its worker: this process,
// or another over jetjob.ctl. A worker that does not answer, gone or cut
// off, is not taken at its word: its lock goes stale after Config.TTL.
func (ls *Locks) holderEnded(ctx context.Context, job int64, key string, v *value) bool {
	switch v.Worker {
	case "":
		return false // an older worker's lock: it releases by deleting the key
	case ls.cfg.WorkerID:
		return !ls.cfg.Active(v.Holder) && !ls.held.holds(key, v.Holder)
	}
	ctx, cancel := context.WithTimeout(ctx, control.AskTimeout)
	defer cancel()
	req := wire.ControlRequest{Op: wire.OpRunActive, JobID: job, RunID: v.Holder}
	if key != jobKey(job) {
		req.Lock = key
	}
	reply, err := stream.Ask(ctx, ls.cfg.NATS, v.Worker, req)
	return err == nil && !reply.Busy
}
