package joblock

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/control"
)

// How a single-holder lock passes from run to run, and how a waiting run
// tells the live from the dead: the holder's worker answers whether it
// ended (holderEnded), a contended lock is handed on when its holder ends
// (handOn), and beats that stand still for Config.TTL mark a holder or the
// first waiter dead (holderSeen).

// handOn passes the lock key, which this worker's run holder (the name a
// run here held it under) has just ended, to the first in line: the lock
// was contended, so a run waits for it, or will. Best effort, bounded by a
// beat interval: if it fails, the first in line still takes the lock over
// after asking this worker, or once the holder is stale. Nothing is
// written when nobody is queued yet (an asker about to queue takes the
// lock over), when the key names another run (taken over), or when a run
// here of an earlier fire than the first in line is about to queue (it
// takes the lock over itself). It returns the run it handed the lock to,
// 0 if none.
func (ls *Locks) handOn(key string, holder int64) (to int64) {
	ctx, cancel := context.WithTimeout(context.Background(), ls.cfg.TTL/3)
	defer cancel()
	if ls.update(ctx, key, func(v *value) bool {
		if v.Holder == holder && v.Worker == ls.cfg.WorkerID && len(v.Queue) > 0 &&
			!ls.held.yield(key, v.Queue[0], v.Queue) && handOver(v) {
			to = v.Holder
			return true
		}
		return false
	}) == 0 {
		return 0
	}
	return to
}

// leaveQueue takes a run that gives up waiting out of the queue (and hands
// the lock on if it was handed to it meanwhile).
func (ls *Locks) leaveQueue(ctx context.Context, key string, run int64) {
	var to int64
	defer func() {
		if to != 0 {
			ls.wake.handedTo(key, to)
		}
	}()
	_ = ls.update(context.WithoutCancel(ctx), key, func(v *value) bool {
		to = 0
		if v.Holder == run {
			handOver(v)
			to = v.Holder
			return true
		}
		i := v.place(run)
		if i < 0 {
			return false
		}
		v.Queue = slices.Delete(v.Queue, i, i+1)
		return true
	})
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

// dropStaleHead removes from v's queue its first waiter, unless that is
// me, if its place's beat has not moved for ttl since h first saw it
// first (only the first in line beats its place: the others will once they
// are first) — its worker died or stalled; a live one that was only slow
// joins again at its next look, at its fire's place —, and reports whether
// it did.
func (h *holderSeen) dropStaleHead(v *value, me int64, now time.Time, ttl time.Duration, log *zap.Logger) bool {
	if len(v.Queue) == 0 || v.Queue[0].Run == me || !h.stale(v.Queue[0].Run, v.Queue[0].Beat, now, ttl) {
		return false
	}
	log.Warn("the first run waiting for the job lock stopped refreshing its place; dropping it",
		zap.Int64("stale_run", v.Queue[0].Run))
	v.Queue = v.Queue[1:]
	return true
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
