package joblock

// The tests' harness: workers' Locks over one embedded NATS server, each
// with the run table and control server a real worker would have.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/worker/internal/control"
	"github.com/jetjob/jetjob/worker/internal/testnats"
)

const waitLimit = testnats.WaitLimit

// testTTL is the TTL of the tests that wait for a holder to go stale: 2s,
// not the default 6s, yet beats (every 2/3 s) keep a live holder's lock
// through the stalls of a loaded -race run.
const testTTL = 2 * time.Second

const job = 7

// env is one embedded NATS server with the locks bucket.
type env struct {
	*testnats.Env
	t  *testing.T
	kv jetstream.KeyValue
	// signals are every worker's of the test, shared.
	signals TestSignals

	mu sync.Mutex
	// asking: the runs of every worker whose Acquire has not returned, by
	// fire time (Unix ms).
	asking map[int64]int64
	fires  map[int64]int64 // every run's fire time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Env: testnats.New(t), t: t, asking: map[int64]int64{}, fires: map[int64]int64{}}
	e.signals.Init(t)
	var err error
	if e.kv, err = stream.Locks(e.Ctx(), e.JS, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) ctx() context.Context { return e.Ctx() }

// worker is one worker's Locks, with the parts of a worker they ask: its
// run table (active) and its control server, which answers run_active
// from the locks and the table as the real worker does.
type worker struct {
	t     *testing.T
	e     *env
	id    string
	locks *Locks
	ctl   *control.Server

	mu     sync.Mutex
	active map[int64]bool
	held   map[int64]*Lock
	kills  map[int64]string // kill requests made (cover_early)
}

func (e *env) worker(id string, ttl time.Duration) *worker {
	e.t.Helper()
	nc := e.Connect()
	w := &worker{t: e.t, e: e, id: id, active: map[int64]bool{}, held: map[int64]*Lock{}, kills: map[int64]string{}}
	w.locks = New(Config{
		NATS: nc, KV: e.kv, WorkerID: id, TTL: ttl, Logger: zaptest.NewLogger(e.t),
		Active: w.isActive, TestSignals: e.signals,
		Kill: func(_ context.Context, run int64, reason string) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.kills[run] = reason
			return nil
		},
	})
	ctl, err := control.Serve(nc, id, w, zaptest.NewLogger(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	w.ctl = ctl
	e.t.Cleanup(func() {
		ctl.Stop()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, l := range w.held {
			l.Release() // no beat may log after the test
		}
	})
	return w
}

func (w *worker) isActive(run int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active[run]
}

func (w *worker) RunsJob(int64) bool { return false }

func (w *worker) RunActive(job int64, lock string, run int64) bool {
	holds := w.locks.Asked(job, lock, run)
	return holds || w.isActive(run)
}

type result struct {
	lock   *Lock
	waited bool
	err    error
}

// acquire asks for run's lock in a goroutine, the run counting as active
// here from now on, as it is in a worker's run table while it waits.
func (w *worker) acquire(req Request) <-chan result {
	w.mu.Lock()
	w.active[req.Run] = true
	w.mu.Unlock()
	w.e.mu.Lock()
	w.e.asking[req.Run], w.e.fires[req.Run] = req.FireAt.UnixMilli(), req.FireAt.UnixMilli()
	w.e.mu.Unlock()
	out := make(chan result, 1)
	go func() {
		l, waited, err := w.locks.Acquire(context.Background(), req)
		w.e.mu.Lock()
		delete(w.e.asking, req.Run)
		w.e.mu.Unlock()
		if l != nil {
			w.mu.Lock()
			w.held[req.Run] = l
			w.mu.Unlock()
		}
		out <- result{l, waited, err}
	}()
	return out
}

// end ends run as a worker does: the lock is released, then the run leaves
// the table.
func (w *worker) end(run int64) {
	w.mu.Lock()
	l := w.held[run]
	delete(w.held, run)
	w.mu.Unlock()
	l.Release()
	w.mu.Lock()
	delete(w.active, run)
	w.mu.Unlock()
}

func req(run int64, at time.Time, strategy policy.Block) Request {
	return Request{Run: run, Job: job, FireAt: at, Strategy: strategy}
}

// run1Holding starts workers w1 and w2 (TTL stream.LockTTL) and gives
// run 1, on w1, the job's lock at t0.
func (e *env) run1Holding() (w1, w2 *worker, t0 time.Time) {
	e.t.Helper()
	w1, w2 = e.worker("w1", stream.LockTTL), e.worker("w2", stream.LockTTL)
	t0 = time.Now()
	recv(e.t, "run 1's lock", w1.acquire(req(1, t0, "")))
	return w1, w2, t0
}

func recv(t *testing.T, what string, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r
	case <-time.After(waitLimit):
		t.Fatalf("timed out after %s waiting for %s", waitLimit, what)
		panic("unreachable")
	}
}

func pending(t *testing.T, what string, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: returned %+v, want it still waiting", what, r)
	default:
	}
}

// value reads key, the zero value when it is absent.
func (e *env) value(key string) value {
	e.t.Helper()
	var v value
	entry, err := e.kv.Get(e.ctx(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return v
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(entry.Value(), &v); err != nil {
		e.t.Fatalf("lock %s holds %s: %v", key, entry.Value(), err)
	}
	return v
}

func (v value) queue() []int64 {
	var q []int64
	for _, w := range v.Queue {
		q = append(q, w.Run)
	}
	return q
}

// waitQueue waits until key queues exactly runs, in order, looking again
// each time a run starts to wait (its place written).
func (e *env) waitQueue(key string, runs ...int64) {
	e.t.Helper()
	e.signals.Waiting.WaitUntil(e.t, waitLimit, "the queue of "+key+" to be "+fmtRuns(runs), func() bool {
		return slices.Equal(e.value(key).queue(), runs)
	})
}

func fmtRuns(runs []int64) string {
	b, _ := json.Marshal(runs)
	return string(b)
}

// nextHold takes the next lock a run of the test's workers took (the Held
// signal, in the order they were taken) and fails unless run took it, or
// if a run of an earlier fire still asks for it (waits, or is about to).
func (e *env) nextHold(run int64) {
	e.t.Helper()
	got := e.signals.Held.WaitOrTimeout(e.t, waitLimit)
	if got != run {
		e.t.Fatalf("run %d took the lock next, want run %d", got, run)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for other, at := range e.asking {
		if other != run && at < e.fires[run] {
			e.t.Fatalf("run %d took the lock while run %d, of an earlier fire, asked for it", run, other)
		}
	}
}

// script drives runs of a serial job on the test's workers, run n firing
// n seconds after the script began, and checks the order in which they
// take the lock.
type script struct {
	t     *testing.T
	e     *env
	t0    time.Time
	on    map[int64]*worker
	asked map[int64]<-chan result
}

func (e *env) script() *script {
	return &script{t: e.t, e: e, t0: time.Now(), on: map[int64]*worker{}, asked: map[int64]<-chan result{}}
}

// arrive asks for run's lock on w.
func (s *script) arrive(w *worker, run int64) {
	s.on[run] = w
	s.asked[run] = w.acquire(req(run, s.t0.Add(time.Duration(run)*time.Second), policy.BlockSerial))
}

// hold waits for run to take the lock, the next run to (nextHold).
func (s *script) hold(run int64) {
	s.t.Helper()
	s.e.nextHold(run)
	recv(s.t, fmt.Sprintf("run %d's lock", run), s.asked[run])
}

// queue waits until the job's lock queues runs, in order.
func (s *script) queue(runs ...int64) {
	s.t.Helper()
	s.e.waitQueue(Key(job, 0, 0), runs...)
}

// waits checks that run still waits.
func (s *script) waits(run int64) {
	s.t.Helper()
	pending(s.t, fmt.Sprintf("run %d", run), s.asked[run])
}

// end ends run on its worker.
func (s *script) end(run int64) { s.on[run].end(run) }
