package joblock

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
)

// The raw conditional writes behave as KeyValue's Create and Update: a
// create sticks on an absent key and fails on a present or deleted one
// (over which it sticks at the delete marker's revision, which read
// returns), an update sticks at the key's revision only, and what they
// write reads back through KeyValue.
func TestConditionalWrites(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", stream.LockTTL)
	ls, ctx, key := w.locks, e.ctx(), Key(job, 0, 0)

	rev, err := ls.write(ctx, key, []byte(`{"holder":1}`), 0)
	if err != nil || rev == 0 {
		t.Fatalf("create on an absent key: revision %d, %v", rev, err)
	}
	if entry, err := e.kv.Get(ctx, key); err != nil || string(entry.Value()) != `{"holder":1}` || entry.Revision() != rev {
		t.Fatalf("created key reads %v, %v; want revision %d", entry, err, rev)
	}
	if _, err := ls.write(ctx, key, []byte(`{"holder":2}`), 0); !errors.Is(err, errChanged) {
		t.Errorf("create on a present key: %v, want errChanged", err)
	}
	if _, err := ls.write(ctx, key, []byte(`{"holder":2}`), rev+7); !errors.Is(err, errChanged) {
		t.Errorf("update with a wrong revision: %v, want errChanged", err)
	}
	rev2, err := ls.write(ctx, key, []byte(`{"holder":2}`), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("update at the key's revision: %d, %v", rev2, err)
	}
	if _, err := ls.write(ctx, key, []byte(`{"holder":3}`), rev); !errors.Is(err, errChanged) {
		t.Errorf("update with a stale revision: %v, want errChanged", err)
	}
	if v := e.value(key); v.Holder != 2 {
		t.Errorf("lock %+v after the failed writes, want run 2 holding", v)
	}

	// Deleted: a delete marker is the key's last message.
	if err := ls.del(ctx, key, rev); !errors.Is(err, errChanged) {
		t.Errorf("delete at a stale revision: %v, want errChanged", err)
	}
	if err := ls.del(ctx, key, rev2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("deleted key reads %v, want not found", err)
	}
	if _, err := ls.write(ctx, key, []byte(`{"holder":4}`), 0); !errors.Is(err, errChanged) {
		t.Errorf("create over a delete marker at revision 0: %v, want errChanged", err)
	}
	_, marker, err := ls.read(ctx, key)
	if !errors.Is(err, jetstream.ErrKeyNotFound) || marker <= rev2 {
		t.Fatalf("read of a deleted key: marker revision %d, %v; want not found after revision %d", marker, err, rev2)
	}
	if _, err := ls.write(ctx, key, []byte(`{"holder":4}`), marker); err != nil {
		t.Fatalf("create over the delete marker: %v", err)
	}
	if v := e.value(key); v.Holder != 4 {
		t.Errorf("lock %+v, want run 4 holding", v)
	}

	// A purge marker (KeyValue.Purge) is absent too.
	if err := e.kv.Purge(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, marker, err = ls.read(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) || marker == 0 {
		t.Fatalf("read of a purged key: marker revision %d, %v; want not found at a marker", marker, err)
	}

	// Acquire creates over a delete marker (the path kv.Create's follow-up
	// get served): the first create fails, the read finds the marker.
	other := Key(job+1, 0, 0)
	if _, err := e.kv.Create(ctx, other, []byte(`{"holder":9,"worker":"gone"}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.kv.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	rq := req(5, time.Now(), policy.BlockSerial)
	rq.Job = job + 1
	r := recv(t, "run 5's lock over a deleted key", w.acquire(rq))
	if v := e.value(other); v.Holder != 5 || v.Worker != "w1" || r.lock.as != 5 {
		t.Errorf("lock %+v, want run 5 of w1 holding", v)
	}
	w.end(5)
}

// discard_later reuses the lock its job's last run here left, without a
// write, as serial does; a second run of the job here is discarded naming
// the run that executes, not the ended one the key names, and one
// elsewhere is discarded too (the worker answers that the key's run holds
// the lock).
func TestDiscardLaterReusesLock(t *testing.T) {
	e := newEnv(t)
	w1, w2 := e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	key := Key(job, 0, 0)
	recv(t, "run 1's lock", w1.acquire(req(1, time.Now(), policy.BlockDiscardLater)))
	w1.end(1)
	r := recv(t, "run 2's lock", w1.acquire(req(2, time.Now(), policy.BlockDiscardLater)))
	if r.lock.as != 1 || r.waited {
		t.Errorf("run 2 holds the lock as run %d (waited %v), want as run 1 (reused without a write)", r.lock.as, r.waited)
	}
	if v := e.value(key); v.Holder != 1 {
		t.Errorf("lock %+v, want it still naming run 1", v)
	}
	discarded := func(w *worker, run int64) *DiscardedError {
		t.Helper()
		select {
		case r := <-w.acquire(req(run, time.Now(), policy.BlockDiscardLater)):
			var d *DiscardedError
			if !errors.As(r.err, &d) || r.lock != nil {
				t.Fatalf("run %d: %+v, want it discarded", run, r)
			}
			return d
		case <-time.After(waitLimit):
			t.Fatalf("run %d still waiting", run)
			panic("unreachable")
		}
	}
	if d := discarded(w1, 3); d.Holder != 2 {
		t.Errorf("run 3 discarded naming run %d, want run 2 (the one executing)", d.Holder)
	}
	discarded(w2, 4)
	w1.end(2)
	// Contended: run 2 did not leave the lock for reuse, so the next run
	// here writes (the question's answer and the reuse stay consistent).
	r = recv(t, "run 5's lock", w1.acquire(req(5, time.Now(), policy.BlockDiscardLater)))
	if v := e.value(key); r.lock.as != 5 || v.Holder != 5 {
		t.Errorf("run 5 holds the lock as run %d, key %+v; want run 5 written", r.lock.as, v)
	}
	w1.end(5)
}

// TestLockMessages counts the messages the job lock costs per run, with a
// subscription to everything on the server, while a job's runs go one
// after another through one worker and through two (each run on a worker
// picked at random: consecutive runs land on different workers half the
// time). It logs the counts (docs/performance.md) and checks bounds.
func TestLockMessages(t *testing.T) {
	const runs = 24
	const every = 250 * time.Millisecond
	for _, c := range []struct {
		strategy policy.Block
		workers  int
		max      float64 // messages per run
	}{
		{policy.BlockSerial, 1, 1},
		{policy.BlockDiscardLater, 1, 1},
		{policy.BlockSerial, 2, 6},
		{policy.BlockDiscardLater, 2, 6},
	} {
		t.Run(fmt.Sprintf("%s_%d_workers", c.strategy, c.workers), func(t *testing.T) {
			e := newEnv(t)
			var ws []*worker
			for i := range c.workers {
				ws = append(ws, e.worker(fmt.Sprintf("w%d", i+1), stream.LockTTL))
			}
			var mu sync.Mutex
			count := map[string]int{}
			spy := e.Connect()
			sub, err := spy.Subscribe(">", func(m *nats.Msg) {
				kind := "reply"
				for _, p := range []string{"$JS.API.DIRECT.GET", "$JS.API.STREAM.MSG.GET", "$JS.API", "$KV." + stream.LocksBucket, "jetjob.ctl"} {
					if strings.HasPrefix(m.Subject, p) {
						kind = p
						break
					}
				}
				mu.Lock()
				count[kind]++
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := spy.Flush(); err != nil {
				t.Fatal(err)
			}
			rnd := rand.New(rand.NewPCG(16, 16))
			at := time.Now()
			for run := int64(1); run <= runs; run++ {
				w := ws[rnd.IntN(len(ws))]
				recv(t, fmt.Sprintf("run %d's lock", run), w.acquire(req(run, at, c.strategy)))
				w.end(run)
				at = at.Add(every)
				time.Sleep(time.Until(at))
			}
			time.Sleep(100 * time.Millisecond)
			_ = sub.Unsubscribe()
			mu.Lock()
			defer mu.Unlock()
			total := 0
			var parts []string
			for _, k := range []string{"$KV." + stream.LocksBucket, "$JS.API.DIRECT.GET", "$JS.API.STREAM.MSG.GET", "$JS.API", "jetjob.ctl", "reply"} {
				total += count[k]
				parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(count[k])/runs))
			}
			perRun := float64(total) / runs
			t.Logf("%s, %d worker(s), %d runs %s apart: %.2f messages per run (%s)",
				c.strategy, c.workers, runs, every, perRun, strings.Join(parts, ", "))
			if perRun > c.max {
				t.Errorf("%.2f messages per run, want at most %.1f", perRun, c.max)
			}
		})
	}
}
