package worker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/policy"
	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Block strategies hold across the whole group, not per process: with a
// shared queue, the next trigger of a job may reach any worker. While a run
// of a job executes, the key job.<jobID> in the KV bucket JETJOB_LOCKS names
// it and its worker as the holder, with the queue of runs waiting behind it:
//
//	{"holder": 17, "worker": "w1", "queue": [{"run": 18, "at": 1764000001000, "worker": "w2"}, …]}
//
// Every change is a compare-and-set on the key's revision. When a holder
// ends it writes nothing: the key keeps naming it, and the job's next run takes the
// lock over — on the same worker without writing while the lock is young
// (heldLocks), or with one conditional write from the revision it
// remembers; elsewhere with one conditional write after asking the holder's
// worker whether that run has ended (control op run_active). So runs that do
// not overlap cost at most one lock write each, and none while a job's
// runs keep landing on the same worker. Waiting runs queue in
// fire order (then run id) and the first of the queue takes over. The
// holder bumps the value's beat every LockTTL/3 while it executes; a
// waiter that sees the same holder and beat for LockTTL (Config.LockTTL,
// default stream.LockTTL = 6 s, on its own clock) takes the lock over:
// that is how the lock of a dead worker, which cannot answer, frees
// itself, however often waiters write the key. A key nobody writes
// expires after stream.LockTTL, the bucket's TTL.
//
//   - serial: a trigger that finds the job held joins the queue and waits,
//     its delivery kept in progress, so runs go one at a time in fire order
//     wherever they wait.
//   - discard_later: it ends DISCARDED without running.
//   - cover_early: it asks for the holder to be killed (it ends CANCELLED),
//     joins the queue, and runs next.
//   - concurrent: no lock, or with max_concurrency one of N slots
//     (slots.go).
//
// The strategy applies between fires, not between the parts of one
// sharding-broadcast fire, which are that fire split across workers and
// must run side by side: part i takes the key job.<jobID>_part<i>
// (lockKeyOf) instead of job.<jobID>, with all of the above, so part i of
// the next fire waits for, is discarded by or covers part i of this one,
// as each xxl-job executor applies its strategy locally. A per-fire lock
// with a count of holders was the alternative; it would make a fire's
// parts wait for the slowest part of the previous fire, but needs a
// second holder shape in the lock, its own beats and hand-over, and every
// part of a fire racing on one key. Per part keeps one holder per key and
// the parts of a fire, directed to different workers, on different keys:
// no contention between them at all.

// pollLock is how often a waiting run looks at the lock. (A watch on the
// key would not help: a holder that ends writes nothing, see release.)
const pollLock = 100 * time.Millisecond

type lockValue struct {
	Holder int64 `json:"holder"`
	// Worker runs Holder; empty when written by an older worker, which
	// releases by deleting the key.
	Worker string `json:"worker,omitempty"`
	// Beat counts the holder's refreshes: only the holder changes it.
	Beat  int64    `json:"beat,omitempty"`
	Queue []waiter `json:"queue,omitempty"`
	// Slots are the runs holding a capped concurrent job's slots lock
	// (slots.go); such a lock has no Holder.
	Slots []slotHolder `json:"slots,omitempty"`
}

type waiter struct {
	Run    int64  `json:"run"`
	At     int64  `json:"at"` // fire time, Unix ms
	Worker string `json:"worker,omitempty"`
	// Beat counts a slots waiter's refreshes (slots.go), so that the
	// place of a waiter whose worker died is given up.
	Beat int64 `json:"beat,omitempty"`
}

func (v *lockValue) queued(run int64) bool {
	return slices.ContainsFunc(v.Queue, func(w waiter) bool { return w.Run == run })
}

func lockKey(jobID int64) string { return fmt.Sprintf("job.%d", jobID) }

// lockKeyOf is the lock a trigger's run takes: its job's, or for a part of
// a sharding broadcast (shard_total > 0) the lock of its part index, so
// that the parts of one fire run side by side while part i of the next
// fire meets part i of this one. One key token (no dots): a worker's
// permissions allow $KV.JETJOB_LOCKS.job.* (shared/stream).
func lockKeyOf(t *wire.Trigger) string {
	if t.ShardTotal > 0 {
		return fmt.Sprintf("job.%d_part%d", t.JobID, t.ShardIndex)
	}
	return lockKey(t.JobID)
}

// jobLock is a held lock; release it when the run's result is published.
type jobLock struct {
	r   *run
	key string // in JETJOB_LOCKS
	// slots: a slot of a capped concurrent job's lock (slots.go), written
	// when released; otherwise the key names one holder.
	slots bool
	// as is the run the key names: r's own id, or that of an ended run of
	// this worker whose lock r holds without a write (heldLocks.reuse).
	as int64
	// beat guards rev (the revision last written), wrote (when), stopped
	// and timer. A beat holds it while it writes, so release waits for a
	// beat in flight.
	beat    sync.Mutex
	rev     uint64
	wrote   time.Time
	stopped bool
	timer   *time.Timer
	// contended: someone waits for the lock, so it is not left for reuse.
	// Guarded by heldLocks.mu.
	contended bool
}

// block applies the run's block strategy before its handler starts. It
// returns the lock to hold while the run executes, or an outcome that ends
// the run without running it (DISCARDED, CANCELLED, or a hand-back).
func (r *run) block(ctx context.Context) (*jobLock, *outcome) {
	kv, key := r.w.locks, lockKeyOf(r.trig)
	strategy, err := policy.ParseBlock(string(r.trig.BlockStrategy))
	if err != nil {
		strategy = policy.DefaultBlock // a newer scheduler's strategy: the safe default
	}
	if strategy == policy.BlockConcurrent {
		if r.trig.MaxConcurrency == 0 {
			return nil, nil // unbounded: nothing to hold
		}
		return r.blockSlots(ctx, key+slotsSuffix, r.trig.MaxConcurrency)
	}
	me := waiter{Run: r.trig.RunID, At: r.trig.ScheduledAt.UnixMilli(), Worker: r.w.cfg.ID}
	askedKill := false
	var seen holderSeen
	// The common cases first: the job's last run ended here and left the
	// lock (see heldLocks): no write while it is young, else one; or nobody
	// holds it: one write.
	if strategy == policy.BlockSerial {
		l := r.newLock(key)
		if r.w.held.reuse(key, l, time.Now()) {
			return l.start(), nil
		}
	}
	body, _ := json.Marshal(lockValue{Holder: me.Run, Worker: me.Worker})
	if rev, ok := r.w.held.take(key, time.Now()); ok {
		at := time.Now()
		if rev, err := kv.Update(ctx, key, body, rev); err == nil {
			return r.hold(key, rev, at), nil
		}
	}
	at := time.Now()
	if rev, err := kv.Create(ctx, key, body); err == nil {
		return r.hold(key, rev, at), nil
	}
	// Taken: whoever holds it, a run of this worker does not leave it for
	// reuse but for the queue this run joins.
	r.w.held.contend(key)
	r.waitedLock = true // metrics.go: lock waits
	for {
		if out := r.interrupted(); out != nil {
			r.leaveQueue(ctx, key)
			return nil, out
		}
		val, rev, err := r.w.readLock(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			at := time.Now()
			if rev, err := kv.Create(ctx, key, body); err == nil {
				return r.hold(key, rev, at), nil
			}
			continue // someone took it first: look again
		case err != nil:
			r.log.Warn("job lock unreadable; retrying", zap.Error(err))
		default:
			var v lockValue
			if err := json.Unmarshal(val, &v); err != nil {
				r.log.Warn("job lock holds garbage; waiting for it to expire", zap.Error(err))
				break
			}
			if v.Holder == me.Run {
				return r.hold(key, rev, time.Now()), nil // handed over to us (by an older worker)
			}
			stale := seen.stale(v.Holder, v.Beat, time.Now(), r.w.cfg.LockTTL)
			if (len(v.Queue) == 0 || v.Queue[0].Run == me.Run) && (stale || r.w.holderEnded(ctx, r.trig.JobID, key, &v)) {
				// The holder ended and left the lock, or stopped beating
				// (its worker died or stalled), and this run is next:
				// take it over.
				if stale {
					r.log.Warn("job lock holder stopped refreshing; taking the lock over",
						zap.Int64("holder_run", v.Holder), zap.String("holder_worker", v.Worker))
				}
				v.Holder, v.Worker, v.Beat = me.Run, me.Worker, 0
				v.Queue = slices.DeleteFunc(v.Queue, func(w waiter) bool { return w.Run == me.Run })
				body, _ := json.Marshal(v)
				at := time.Now()
				if rev, err := kv.Update(ctx, key, body, rev); err == nil {
					return r.hold(key, rev, at), nil
				}
				continue // changed meanwhile: look again at once
			}
			if strategy == policy.BlockDiscardLater {
				return nil, &outcome{status: wire.StatusDiscarded, message: fmt.Sprintf(
					"discarded: run %d of this job is still active (block strategy discard_later)", v.Holder)}
			}
			if strategy == policy.BlockCoverEarly && !askedKill {
				askedKill = true
				r.log.Info("covering the active run (block strategy cover_early)", zap.Int64("active_run", v.Holder))
				if kills, err := stream.Kills(ctx, r.w.js, r.w.cfg.Streams); err == nil {
					_, _ = kills.Put(ctx, stream.KillKey(v.Holder),
						[]byte(fmt.Sprintf("covered by run %d (block strategy cover_early)", me.Run)))
				}
			}
			if !v.queued(me.Run) {
				v.Queue = append(v.Queue, me)
				slices.SortFunc(v.Queue, func(a, b waiter) int {
					return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Run, b.Run))
				})
				body, _ := json.Marshal(v)
				if _, err := kv.Update(ctx, key, body, rev); err != nil {
					continue // changed meanwhile: look again at once
				}
			}
		}
		select {
		case <-r.w.stopCtx.Done():
		case <-time.After(pollLock):
		}
	}
}

// interrupted says whether the waiting run was killed or the worker stops.
func (r *run) interrupted() *outcome {
	r.mu.Lock()
	pending := r.pending
	r.mu.Unlock()
	if pending != nil {
		return &outcome{status: wire.StatusCancelled, message: pending.Error() + " (while waiting for the job's active run)"}
	}
	if r.w.killed(r.trig.RunID) {
		return &outcome{status: wire.StatusCancelled, message: "killed while waiting for the job's active run"}
	}
	if r.w.stopCtx.Err() != nil {
		return &outcome{handBack: "worker stopping while the run waited for the job's active run"}
	}
	return nil
}

// leaveQueue takes a run that gives up waiting out of the queue (and hands
// the lock on if it was handed to it meanwhile).
func (r *run) leaveQueue(ctx context.Context, key string) {
	_ = r.w.updateLock(context.WithoutCancel(ctx), key, func(v *lockValue) bool {
		if v.Holder == r.trig.RunID {
			return handOver(v)
		}
		i := slices.IndexFunc(v.Queue, func(w waiter) bool { return w.Run == r.trig.RunID })
		if i < 0 {
			return false
		}
		v.Queue = slices.Delete(v.Queue, i, i+1)
		return true
	})
}

// handOver passes the lock to the first queued run; with no queue it
// clears the holder (update then deletes the key).
func handOver(v *lockValue) bool {
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
// changed for ttl (Config.LockTTL).
func (h *holderSeen) stale(holder, beat int64, now time.Time, ttl time.Duration) bool {
	if h.since.IsZero() || h.holder != holder || h.beat != beat {
		*h = holderSeen{holder: holder, beat: beat, since: now}
		return false
	}
	return now.Sub(h.since) > ttl
}

// askHolderTimeout bounds asking a lock holder's worker about its run.
const askHolderTimeout = 500 * time.Millisecond

// holderEnded says whether the run holding a job lock has ended (runs leave
// the lock when they end, see release), asking its worker: this process,
// or another over jetjob.ctl. A worker that does not answer, gone or cut
// off, is not taken at its word: its lock goes stale after Config.LockTTL.
func (w *Worker) holderEnded(ctx context.Context, job int64, key string, v *lockValue) bool {
	switch v.Worker {
	case "":
		return false // an older worker's lock: it releases by deleting the key
	case w.cfg.ID:
		return !w.runActive(v.Holder) && !w.held.holds(key, v.Holder)
	}
	ctx, cancel := context.WithTimeout(ctx, askHolderTimeout)
	defer cancel()
	req := wire.ControlRequest{Op: wire.OpRunActive, JobID: job, RunID: v.Holder}
	if key != lockKey(job) {
		req.Lock = key
	}
	reply, err := stream.Ask(ctx, w.cfg.NATS, v.Worker, req)
	return err == nil && !reply.Busy
}

// updateLock applies change to the lock key by compare-and-set until it
// sticks; a lock left with no holder, slot or waiter is deleted. change
// reports whether it changed anything. It returns the revision written, 0
// if none.
func (w *Worker) updateLock(ctx context.Context, key string, change func(*lockValue) bool) uint64 {
	kv := w.locks
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		val, rev, err := w.readLock(ctx, key)
		if err != nil {
			return 0 // gone (expired) or unreachable: nothing to undo
		}
		var v lockValue
		if json.Unmarshal(val, &v) != nil || !change(&v) {
			return 0
		}
		if v.Holder == 0 && len(v.Slots) == 0 && len(v.Queue) == 0 {
			if kv.Delete(ctx, key, jetstream.LastRevision(rev)) == nil {
				return 0
			}
			continue
		}
		body, _ := json.Marshal(v)
		if rev, err := kv.Update(ctx, key, body, rev); err == nil {
			return rev
		}
	}
	return 0
}

// readLock reads a job lock from the bucket's stream leader and returns
// its value and revision, or jetstream.ErrKeyNotFound when it is absent or
// deleted. Not KeyValue.Get: that is a direct get, which any replica may
// answer, including one still catching up after a NATS node's outage,
// while a waiting run must see the revision its compare-and-set is checked
// against, which the leader holds. Only contended locks are read this way,
// so the leader's extra work is small.
func (w *Worker) readLock(ctx context.Context, key string) ([]byte, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + stream.LocksBucket + "." + key})
	msg, err := w.cfg.NATS.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+stream.LocksBucket, req)
	if err != nil {
		return nil, 0, fmt.Errorf("read job lock %s: %w", key, err)
	}
	var resp struct {
		Message *struct {
			Seq  uint64 `json:"seq"`
			Hdrs []byte `json:"hdrs"`
			Data []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, fmt.Errorf("read job lock %s: %w", key, err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404:
		return nil, 0, jetstream.ErrKeyNotFound
	case resp.Error != nil:
		return nil, 0, fmt.Errorf("read job lock %s: %s", key, resp.Error.Description)
	case resp.Message == nil:
		return nil, 0, fmt.Errorf("read job lock %s: empty answer", key)
	}
	// A delete or purge marker: the KV-Operation header says so.
	if bytes.Contains(resp.Message.Hdrs, []byte("KV-Operation")) {
		return nil, 0, jetstream.ErrKeyNotFound
	}
	return resp.Message.Data, resp.Message.Seq, nil
}

// newLock is a lock key for r, not yet held.
func (r *run) newLock(key string) *jobLock {
	return &jobLock{r: r, key: key, as: r.trig.RunID}
}

// hold registers the lock key r has just written (revision rev, the write
// sent at wrote) and keeps it refreshed until released.
func (r *run) hold(key string, rev uint64, wrote time.Time) *jobLock {
	l := r.newLock(key)
	l.rev, l.wrote = rev, wrote
	r.w.held.hold(key, l)
	return l.start()
}

// start keeps the lock refreshed until released: it bumps the beat (queue
// kept) every LockTTL/3 after the key's last write, so waiters see the
// holder alive and the key's age is reset. A lock held without a write
// (heldLocks.reuse) is at most reuseFor old; its first beat is then due at
// once, but not before a short grace, so that the short runs that make up
// most of a busy job's runs end before it and write nothing.
func (l *jobLock) start() *jobLock {
	l.beat.Lock()
	defer l.beat.Unlock()
	// A timer, not a goroutine: most runs end before their first beat.
	ttl := l.r.w.cfg.LockTTL
	l.timer = time.AfterFunc(max(time.Until(l.wrote.Add(ttl/3)), ttl/12), l.bump)
	return l
}

// bump is one beat, then schedules the next.
func (l *jobLock) bump() {
	l.beat.Lock()
	defer l.beat.Unlock()
	if l.stopped {
		return
	}
	r, at := l.r, time.Now()
	if rev := r.w.updateLock(context.Background(), l.key, func(v *lockValue) bool {
		if !l.beatIn(v) {
			r.log.Warn("job lock lost while the run executes (it expired: the worker stalled)")
			return false
		}
		return true
	}); rev != 0 {
		l.rev, l.wrote = rev, at
	}
	l.timer.Reset(r.w.cfg.LockTTL / 3)
}

// release stops refreshing and leaves the lock as it is, naming this run
// (or the one it holds it for), which has ended (the caller has published
// its result, and the run leaves the worker's table right after): no write.
// The job's next run takes it over (see block). Unless someone waits for
// it, the lock is remembered for the job's next run here (heldLocks).
//
// (Releasing by a delete cost a second write per run; purging the run's own
// revision instead, tried before, stalled one job's waiters for about a
// minute after a NATS node loss in the end-to-end suite.)
//
// A slot of a capped concurrent job is given back at once instead (one
// write): the slots' waiters need to see a free slot, not ask around.
// A run of an unbounded concurrent job holds no lock (nil): nothing to do.
func (l *jobLock) release() {
	if l == nil {
		return
	}
	l.beat.Lock()
	l.stopped = true
	l.timer.Stop()
	l.beat.Unlock()
	if l.slots {
		l.r.leaveSlots(context.Background(), l.key)
		return
	}
	l.r.w.held.release(l.key, l)
}

// releaseIdleLocks frees the job locks that runs of this worker left when
// they ended (see release), so that a stopping worker does not keep its
// jobs' next runs elsewhere waiting for the locks to expire: a lock nobody
// waited for is deleted, and one with a queue is handed to the first
// waiter, who then holds it without asking this worker (which is about to
// go). Best effort: a lock taken over since is left alone (the writes are
// conditional).
func (w *Worker) releaseIdleLocks(ctx context.Context) {
	left, contended := w.held.drain(time.Now())
	for key, rev := range left {
		if err := w.locks.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil && ctx.Err() != nil {
			return
		}
	}
	for key := range contended {
		w.updateLock(ctx, key, func(v *lockValue) bool {
			return v.Worker == w.cfg.ID && !w.runActive(v.Holder) && handOver(v)
		})
		if ctx.Err() != nil {
			return
		}
	}
}
