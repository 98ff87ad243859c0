package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/policy"
	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Block strategies hold across the whole group, not per process: with a
// shared queue, the next trigger of a job may reach any worker. A run holds
// the key job.<jobID> in the KV bucket JETJOB_LOCKS while it executes,
// created with Create (which fails if the key exists) and refreshed every
// LockTTL/3; a worker that dies stops refreshing and its lock expires
// within stream.LockTTL (6 s).
//
//   - serial: a trigger that finds the job locked waits, holding its
//     delivery in progress, and takes the lock when it is free and it is
//     the earliest waiter: waiters register wait.<jobID>.<scheduledMs>.<runID>
//     keys, and only the smallest may take the lock, so runs go in fire
//     order wherever they wait.
//   - discard_later: a trigger that finds the job locked ends DISCARDED
//     without running.
//   - cover_early: a trigger that finds the job locked asks for the active
//     run to be killed (it ends CANCELLED) and takes the lock once freed.

// pollLock is how often a waiting trigger looks at the lock again.
const pollLock = 100 * time.Millisecond

// jobLock is a held lock; release it when the run ended.
type jobLock struct {
	kv   jetstream.KeyValue
	key  string
	stop chan struct{}
	done chan struct{}
}

// release stops refreshing and deletes the lock if it is still ours.
func (l *jobLock) release() {
	close(l.stop)
	<-l.done
}

func lockKey(jobID int64) string { return "job." + strconv.FormatInt(jobID, 10) }

// block applies the run's block strategy before its handler starts. It
// returns the lock to hold while the handler runs, or an outcome that ends
// the run without running it (DISCARDED, CANCELLED, or a hand-back).
func (r *run) block(ctx context.Context) (*jobLock, *outcome) {
	kv := r.w.locks
	key := lockKey(r.trig.JobID)
	strategy, err := policy.ParseBlock(r.trig.BlockStrategy)
	if err != nil {
		strategy = policy.DefaultBlock // a newer scheduler's strategy: the safe default
	}
	var waitKey string
	if strategy == policy.BlockSerial {
		waitKey = fmt.Sprintf("wait.%d.%d.%d", r.trig.JobID, r.trig.ScheduledAt.UnixMilli(), r.trig.RunID)
		defer func() { _ = kv.Delete(context.WithoutCancel(ctx), waitKey) }()
	}
	askedKill := false
	lastRefresh := time.Time{}
	for {
		if out := r.interrupted(); out != nil {
			return nil, out
		}
		if waitKey != "" && time.Since(lastRefresh) > stream.LockTTL/3 {
			if _, err := kv.Put(ctx, waitKey, nil); err == nil {
				lastRefresh = time.Now()
			}
		}
		first := true
		if waitKey != "" {
			first = r.earliestWaiter(ctx, waitKey)
		}
		if first {
			rev, err := kv.Create(ctx, key, []byte(strconv.FormatInt(r.trig.RunID, 10)))
			if err == nil {
				return r.hold(key, rev), nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) {
				r.log.Warn("job lock unavailable; retrying", zap.Error(err))
			} else {
				holder := r.holder(ctx, key)
				switch strategy {
				case policy.BlockDiscardLater:
					return nil, &outcome{status: wire.StatusDiscarded, message: fmt.Sprintf(
						"discarded: run %s of this job is still active (block strategy discard_later)", holder)}
				case policy.BlockCoverEarly:
					if !askedKill && holder != "" {
						askedKill = true
						r.log.Info("covering the active run (block strategy cover_early)", zap.String("active_run", holder))
						if kills, err := stream.Kills(ctx, r.w.js, r.w.cfg.Streams); err == nil {
							_, _ = kills.Put(ctx, holder, []byte(fmt.Sprintf("covered by run %d (block strategy cover_early)", r.trig.RunID)))
						}
					}
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
		return &outcome{status: wire.StatusCancelled, message: pending.Error() + " (while waiting for the job's previous run)"}
	}
	if r.w.killed(r.trig.RunID) {
		return &outcome{status: wire.StatusCancelled, message: "killed while waiting for the job's previous run"}
	}
	if r.w.stopCtx.Err() != nil {
		return &outcome{handBack: "worker stopping while the run waited for the job's previous run"}
	}
	return nil
}

// earliestWaiter reports whether waitKey sorts first among the job's
// waiters (by fire time, then run id).
func (r *run) earliestWaiter(ctx context.Context, waitKey string) bool {
	prefix := fmt.Sprintf("wait.%d.", r.trig.JobID)
	lister, err := r.w.locks.ListKeysFiltered(ctx, prefix+">")
	if err != nil {
		return false
	}
	type waiter struct{ at, run int64 }
	var ws []waiter
	for k := range lister.Keys() {
		parts := strings.Split(strings.TrimPrefix(k, prefix), ".")
		if len(parts) != 2 {
			continue
		}
		at, err1 := strconv.ParseInt(parts[0], 10, 64)
		run, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 == nil && err2 == nil {
			ws = append(ws, waiter{at, run})
		}
	}
	if len(ws) == 0 {
		return true // our own key not visible yet: let Create decide
	}
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].at != ws[j].at {
			return ws[i].at < ws[j].at
		}
		return ws[i].run < ws[j].run
	})
	return ws[0].run == r.trig.RunID
}

// holder is the run id holding the job's lock, "" if unknown.
func (r *run) holder(ctx context.Context, key string) string {
	e, err := r.w.locks.Get(ctx, key)
	if err != nil {
		return ""
	}
	return string(e.Value())
}

// hold keeps the lock refreshed until released, then deletes it if it is
// still ours (same revision).
func (r *run) hold(key string, rev uint64) *jobLock {
	l := &jobLock{kv: r.w.locks, key: key, stop: make(chan struct{}), done: make(chan struct{})}
	value := []byte(strconv.FormatInt(r.trig.RunID, 10))
	go func() {
		defer close(l.done)
		t := time.NewTicker(stream.LockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = l.kv.Delete(ctx, key, jetstream.LastRevision(rev))
				cancel()
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), stream.LockTTL/3)
				next, err := l.kv.Update(ctx, key, value, rev)
				cancel()
				if err != nil {
					r.log.Warn("job lock refresh failed", zap.Error(err))
					continue
				}
				rev = next
			}
		}
	}()
	return l
}
