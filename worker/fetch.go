package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/testsignal"
)

// How triggers are fetched.
//
// The group's consumer is shared by every worker of the group, and a trigger
// delivered to one worker is invisible to the others until it is acked or
// redelivered. So a worker must not hold a trigger it cannot start yet
// (but for the two bounded exceptions below): that trigger would wait in
// its buffer while another worker idles. Consume and Messages keep a
// client-side buffer of PullMaxMessages and refill it when half of it has
// been handed to the application, whether or not the application can run
// anything: they are built for throughput, not for fairness between
// competing consumers.
//
// Instead a worker announces exactly its free capacity: it takes every free
// run slot (at least one) and sends one pull request (Fetch) for that many
// triggers; each trigger that arrives already owns a slot and starts at once;
// slots the request did not fill are released when it expires. As slots free
// up, new requests are sent at once, in parallel with the open ones (at most
// maxFetches), so the capacity announced to the server is always the
// capacity free here. Under a backlog every request fills immediately.
//
// Trigger batches (batch.go) are the exception a worker cannot avoid: it
// learns how many runs a message carries only once it holds it. Its batch
// lane asks for free slots / batchRunsGuess messages, and a run of a batch
// that finds no slot waits here for one, ahead of any new request.
//
// A late trigger is the other (judge.go): a first delivery that may end
// EXPIRED gives its slot back while its misfire policy is judged (a
// question to the schedulers, then its EXPIRED event and ack: round trips
// during which a slot would run nothing), as long as the worker's pool of
// judgements has room, and is judged on its slot otherwise. One judged to
// run waits here for the next slot, ahead of any new request, like a run
// of a batch. The pool bounds how many triggers a worker holds beyond its
// slots; most of them end EXPIRED, and fire_once lets few of them run.
//
// When the worker stops, open requests are not abandoned (a trigger the
// server sent to a vanished inbox would be stuck until AckWait): they are
// drained until they expire. A trigger handed back meanwhile (one that
// arrives on them, or one that waited for its job's lock) is delayed until
// this worker's open requests have expired, and no longer, so that it goes
// to another worker at the earliest moment it cannot come back here (see
// handBackDelay); with none open it is handed back at once.
const (
	// defaultFetchWait is how long one pull request stays open. It bounds
	// how long an idle worker takes to stop, and how long a stopping
	// worker's hand-backs wait before another worker gets them; an idle
	// worker sends one request per fetchWait and lane.
	defaultFetchWait = time.Second
	// defaultMaxFetches bounds the open pull requests of one worker, so a
	// large group stays well below the server's MaxWaiting (512).
	defaultMaxFetches = 4
)

// A lane is one consumer a worker fetches from, with its own run slots and
// pull-request tokens: the group's shared queue, this worker's directed
// consumer (triggers a routing strategy sent to it by name), and the
// group's trigger batches (batch.go: one message carries several runs).
// The lanes do not share slots: a lane announces its free slots in open
// pull requests for up to fetchWait, and a directed trigger must not wait
// that long behind the shared queue's requests on an idle worker. So a
// worker runs at most Concurrency runs from each lane; on the batch lane a
// slot is one run, not one message.
type lane struct {
	name string
	cons jetstream.Consumer
	size int
	// runsPerMsg is how many runs one message is expected to carry: a
	// request for n free slots asks for n/runsPerMsg messages (at least
	// one). 1, or batchRunsGuess on the batch lane.
	runsPerMsg int
	// lastRuns is how many runs the lane's last message carried. The
	// directed lane gets lone triggers and, from schedulers that batch
	// consistent_hash jobs, trigger batches (batch.go): its requests
	// follow what came last, so that a worker asks for about as many runs
	// as it has free slots either way, and does not pull a backlog it
	// cannot start before the runs turn late.
	lastRuns atomic.Int32
	slots    chan struct{} // semaphore of size run slots
	tokens   chan struct{} // semaphore of outstanding fetch requests
	// openUntil is when the last pull request sent expires (Unix ns).
	openUntil atomic.Int64

	// Triggers that hold no slot and need one wait here, in arrival
	// order: batch members that arrived beyond the slots their request
	// held (batch.go), lone triggers that arrived behind such a batch on
	// the directed lane, and late triggers judged off their slot to run
	// (judge.go). A released slot goes to the first of them before
	// anything else, so while one waits every slot is taken and the lane
	// sends no new pull request.
	mu      sync.Mutex
	waiting []waiter
	closed  bool // the worker stops: nothing may wait any more

	// waitingSignal: a trigger waits for a slot (testSignals.slotWaiting).
	waitingSignal testsignal.Signal[laneRun]
}

// A waiter is a trigger waiting in a lane's queue for a run slot.
type waiter struct {
	// start is called with a slot handed to the waiter: it owns the slot
	// from then on.
	start func()
	// drop is called, holding no slot, when the lane closes while the
	// waiter waits: its trigger must go back to the group.
	drop func()
}

// openFor is how long this lane's pull requests may still be open at the
// server: none while no request is outstanding, else until the latest
// expires.
func (l *lane) openFor(now time.Time) time.Duration {
	if len(l.tokens) == 0 {
		return 0
	}
	return max(0, time.Unix(0, l.openUntil.Load()).Sub(now))
}

func newLane(name string, cons jetstream.Consumer, size, maxFetches int) *lane {
	return &lane{name: name, cons: cons, size: size, runsPerMsg: 1,
		slots: make(chan struct{}, size), tokens: make(chan struct{}, maxFetches)}
}

// messagesFor is how many messages a pull request holding n slots asks for.
func (l *lane) messagesFor(n int) int {
	return max(1, n/max(l.runsPerMsg, int(l.lastRuns.Load())))
}

// errNATSClosed is a fetch's error once the NATS connection is closed for
// good: no retry can mend it.
var errNATSClosed = errors.New("worker: NATS connection closed")

// fetchLoop sends pull requests on l until ctx, the fetching stage's
// context, ends (it returns nil then), and hands what arrives to drain. It
// stops the worker and returns an error when fetching can never succeed
// again. The runs it starts get ctx too: it says when the worker stops
// taking triggers, and a run that has not started by then is handed back.
func (w *Worker) fetchLoop(ctx context.Context, l *lane) error {
	// A failed pull request is retried after a delay; each one that
	// succeeds starts the delays again.
	retry := backoff.Policy{
		Backoff: backoff.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2},
		OnRetry: func(_ int, _ time.Duration, err error) {
			w.log.Warn("fetching triggers failed", zap.String("lane", l.name), zap.Error(err))
		},
	}
	// Triggers still waiting for a slot when fetching ends will not get
	// one in time: another worker runs them.
	defer func() {
		for _, wt := range l.close() {
			wt.drop()
		}
	}()
	for {
		var (
			batch jetstream.MessageBatch
			n     int
		)
		err := backoff.Retry(ctx, retry, func(ctx context.Context) (err error) {
			batch, n, err = w.fetch(ctx, l)
			return err
		})
		if err != nil {
			if !errors.Is(err, errNATSClosed) {
				return nil // the worker stops
			}
			w.log.Error("cannot fetch triggers any more", zap.String("lane", l.name), zap.Error(err))
			w.failed(err)
			return err
		}
		w.fetchers.Add(1)
		go w.drain(ctx, l, batch, n)
	}
}

// fetch takes l's free slots (waiting for one) and a fetch token, and
// sends one pull request for them. It returns the batch and the slots it
// holds, or an error with the slots and token given back: ctx's when ctx
// ended first.
func (w *Worker) fetch(ctx context.Context, l *lane) (jetstream.MessageBatch, int, error) {
	n, ok := l.acquire(ctx)
	if !ok {
		return nil, 0, ctx.Err()
	}
	select {
	case l.tokens <- struct{}{}:
	case <-ctx.Done():
		l.release(n)
		return nil, 0, ctx.Err()
	}
	if ctx.Err() != nil { // select picks at random among ready cases
		l.release(n)
		<-l.tokens
		return nil, 0, ctx.Err()
	}
	n += l.tryAcquire(l.size - n) // freed while we waited for a token
	l.openUntil.Store(time.Now().Add(w.fetchWait).UnixNano())
	batch, err := l.cons.Fetch(l.messagesFor(n), jetstream.FetchMaxWait(w.fetchWait))
	if err != nil {
		l.release(n)
		<-l.tokens
		if w.cfg.NATS.IsClosed() {
			return nil, 0, backoff.Permanent(fmt.Errorf("%w: %w", errNATSClosed, err))
		}
		return nil, 0, err
	}
	return batch, n, nil
}

// drain starts a run for each trigger of batch, each on one of the n slots
// acquired for it, and releases the rest when the request ends. A trigger
// batch's runs take a slot each; those beyond the n wait for one (batch.go).
// ctx is fetchLoop's.
func (w *Worker) drain(ctx context.Context, l *lane, batch jetstream.MessageBatch, n int) {
	defer w.fetchers.Done()
	used := 0
	for msg := range batch.Messages() {
		if ctx.Err() != nil {
			w.handBack(msg, w.log, "worker stopping before the run started")
			continue
		}
		batch := l.runsPerMsg > 1 || directedBatch(msg)
		if !w.trusted(msg, batch) {
			continue // terminated: it holds no slot
		}
		if batch {
			used += w.splitBatch(ctx, l, msg, n-used)
			continue
		}
		if l.lastRuns.Load() != 1 {
			l.lastRuns.Store(1)
		}
		if used < n {
			used++
			w.startRun(ctx, l, msg)
			continue
		}
		// Only on the directed lane, after batches took the request's
		// slots: the lone trigger waits for one like a batch member.
		if !l.enqueue(w.slotWaiter(ctx, l, msg, w.log)) {
			w.handBack(msg, w.log, "worker stopping before the run started")
		}
	}
	if err := batch.Error(); err != nil {
		// e.g. missing heartbeats or a deleted consumer: slow the next
		// request down instead of spinning.
		w.log.Warn("pull request failed", zap.String("lane", l.name), zap.Error(err))
		_ = backoff.Sleep(ctx, time.Second)
	}
	l.release(n - used)
	<-l.tokens
}

// acquire waits for one free slot, then takes every other free one. It
// returns false when ctx ends first.
func (l *lane) acquire(ctx context.Context) (int, bool) {
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, false
	}
	return 1 + l.tryAcquire(l.size-1), true
}

// tryAcquire takes up to max free slots without waiting.
func (l *lane) tryAcquire(max int) int {
	n := 0
	for n < max {
		select {
		case l.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// release gives up n slots: each goes to the trigger waiting longest, if
// one waits, else it is freed.
func (l *lane) release(n int) {
	for range n {
		l.mu.Lock()
		if len(l.waiting) == 0 {
			<-l.slots
			l.mu.Unlock()
			continue
		}
		wt := l.waiting[0]
		l.waiting[0] = waiter{}
		l.waiting = l.waiting[1:]
		l.mu.Unlock()
		wt.start()
	}
}

// enqueue starts wt on a free slot, or makes it wait for the next slot
// released. It returns false, doing neither, once the lane is closed.
func (l *lane) enqueue(wt waiter) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	select {
	case l.slots <- struct{}{}:
		l.mu.Unlock()
		wt.start()
		return true
	default:
	}
	l.waiting = append(l.waiting, wt)
	l.mu.Unlock()
	l.waitingSignal.Signal(laneRun{lane: l.name})
	return true
}

// close ends waiting on l and returns the triggers that were waiting.
func (l *lane) close() []waiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	waiting := l.waiting
	l.waiting = nil
	return waiting
}

// startRun runs msg, which owns one slot of l, in a goroutine of its own;
// ctx is that of the fetch loop that took it.
func (w *Worker) startRun(ctx context.Context, l *lane, msg jetstream.Msg) {
	w.procs.Add(1)
	go w.process(ctx, l, msg)
}
