package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

// A capped concurrent job whose slots are all held by runs of a dead
// worker (they never beat) gets them back once their beats have not moved
// for Config.LockTTL (testLockTTL here), although waiting runs keep
// writing the key (so its expiry alone would never free it). Its runs then
// all run, never more than max_concurrency at once, and the slots key is
// gone when the last ends.
func TestSlotsOfDeadWorkerFreed(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	var mu sync.Mutex
	active, peak := 0, 0
	e.start(Config{Concurrency: 16, LockTTL: testLockTTL}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			mu.Lock()
			active++
			peak = max(peak, active)
			mu.Unlock()
			defer func() { mu.Lock(); active--; mu.Unlock() }()
			select {
			case <-time.After(300 * time.Millisecond): // the run's work
			case <-ctx.Done():
			}
			return nil
		})
	})
	key := lockKey(7) + slotsSuffix
	ghost, _ := json.Marshal(lockValue{Slots: []slotHolder{{Run: 998, Worker: "gone", Beat: 1}, {Run: 999, Worker: "gone", Beat: 4}}})
	if _, err := e.lockKV().Create(e.ctx(), key, ghost); err != nil {
		t.Fatal(err)
	}
	ids := []int64{1, 2, 3, 4, 5}
	for _, id := range ids {
		tr := trigger(id, "h", "")
		tr.JobID, tr.BlockStrategy, tr.MaxConcurrency = 7, "concurrent", 2
		e.publish(tr)
	}
	for id, f := range ev.waitFinished(ids...) {
		if f.Status != wire.StatusSucceeded {
			t.Errorf("run %d: %s %q, want SUCCEEDED", id, f.Status, f.Message)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak > 2 {
		t.Errorf("%d runs of a job with max_concurrency 2 ran at once", peak)
	}
	testwait.Eventually(t, waitLimit, "the slots key deleted after the last run", func() bool {
		_, err := e.lockKV().Get(e.ctx(), key)
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
}

// A run of an unbounded concurrent job takes no lock: five runs of one job
// run at once.
func TestConcurrentRunsTakeNoLock(t *testing.T) {
	e := newEnv(t)
	ev := e.events()
	release := make(chan struct{})
	var mu sync.Mutex
	active := 0
	e.start(Config{Concurrency: 16}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			mu.Lock()
			active++
			mu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	})
	ids := []int64{1, 2, 3, 4, 5}
	for _, id := range ids {
		tr := trigger(id, "h", "")
		tr.JobID, tr.BlockStrategy = 7, "concurrent"
		e.publish(tr)
	}
	testwait.Eventually(t, waitLimit, "5 runs of one job executing at once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return active == 5
	})
	close(release)
	ev.waitFinished(ids...)
	for _, k := range []string{lockKey(7), lockKey(7) + slotsSuffix} {
		if _, err := e.lockKV().Get(e.ctx(), k); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("lock key %s written (%v)", k, err)
		}
	}
}
