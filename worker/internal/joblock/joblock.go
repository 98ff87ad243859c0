// Package joblock is the distributed job lock behind the block strategies
// (docs/protocol.md, "Job locks"): it makes a strategy hold across the
// whole group, not per process, since with a shared queue the next trigger
// of a job may reach any worker. A worker makes one Locks, asks it for the
// lock of each run before the run's handler starts (Acquire), releases it
// when the run's result is published (Lock.Release), answers other
// workers' questions about it (Asked), and frees what its runs left when
// it stops (Stop). Everything else — the key's shape, compare-and-set
// writes, queueing in fire order, the holder's beat, taking over a dead
// holder's lock, handing the lock on — happens in here, under this
// package's own mutex; the worker is reached only through Config.Active
// (is a run of mine still here?) and Config.Kill (cover_early).
//
// While a run of a job executes, the key job.<jobID> in the KV bucket
// JETJOB_LOCKS names it and its worker as the holder, with the queue of
// runs waiting behind it:
//
//	{"holder": 17, "worker": "w1", "queue": [{"run": 18, "at": 1764000001000, "worker": "w2", "beat": 2}, …]}
//
// Every change is a compare-and-set on the key's revision. When a holder
// that nobody waits for ends it writes nothing: the key keeps naming it,
// and the job's next run takes the lock over — on the same worker without
// writing while the lock is young (heldLocks; serial and discard_later),
// or with one conditional write from the revision it remembers; elsewhere
// with one conditional write after asking the holder's worker whether that
// run has ended (control op run_active). So runs that do not overlap cost
// at most one lock write each, and none while a job's runs keep landing on
// the same worker. Waiting runs queue in fire order (then run id) and the
// first of the queue takes over. A holder that others wait for — runs
// queued behind it when it took the lock or when it beat, a question from
// another worker, another run of its own worker asking — is contended: it
// is not left for reuse, and when it ends its worker hands the lock to the
// first in line (one write, handOn), so the queue moves on without the
// waiters reaching that worker; a run of the holder's worker that finds
// its ended run holding the lock hands it on too. The holder bumps the
// value's beat every TTL/3 while it executes, and the first in line its
// place's: a key some run waits for never expires, and a first in line
// whose place stands still for Config.TTL (its worker died or stalled) is
// dropped by the others (a live one joins again at its fire's place); a
// waiter that sees
// the same holder and beat for Config.TTL (on its own clock) takes the
// lock over: that is how the lock of a dead worker, which cannot answer,
// frees itself, however often waiters write the key. A key nobody writes
// expires after stream.LockTTL, the bucket's TTL. A waiter reads the key
// every pollLock while its holder is elsewhere; one whose holder is a run
// here reads it only when this worker wakes it (the lock handed to it, or
// let go otherwise) and every TTL/3 (wake.go).
//
//   - serial: a run that finds the job held joins the queue and waits, so
//     runs go one at a time in fire order wherever they wait: no run takes
//     the lock while one of an earlier fire waits for it, nor ahead of
//     one of its own worker about to queue. Exceptions, each bounded: a
//     worker that has not heard of a waiter elsewhere (whose questions are
//     slow or lost, and which joined after that worker's last write of
//     the key) may let its next runs reuse the lock for up to TTL/2 after
//     that write (heldLocks); two runs on different workers deciding at
//     the same moment go in the order their writes land; a waiter whose
//     worker cannot reach NATS for Config.TTL loses its place, and joins
//     again, at its fire's place, when it can; a holder that stalls
//     beyond Config.TTL is taken over.
//   - discard_later: Acquire returns a *DiscardedError.
//   - buffer_one: as serial while nobody waits; a run that finds another
//     run queued (and is not queued itself) gets a *DiscardedError naming
//     it. Two runs arriving together both try to join an empty queue; the
//     compare-and-set lets one in, and the other, looking again, finds it
//     queued.
//   - cover_early: it asks for the holder to be killed (Config.Kill),
//     joins the queue, and runs next.
//   - concurrent: no lock, or with max_concurrency one of N slots
//     (slots.go).
//
// The strategy applies between fires, not between the parts of one
// sharding-broadcast fire, which are that fire split across workers and
// must run side by side: part i takes the key job.<jobID>_part<i> (Key)
// instead of job.<jobID>, with all of the above, so part i of the next
// fire waits for, is discarded by or covers part i of this one, as each
// xxl-job executor applies its strategy locally. A per-fire lock with a
// count of holders was the alternative; it would make a fire's parts wait
// for the slowest part of the previous fire, but needs a second holder
// shape in the lock, its own beats and hand-over, and every part of a fire
// racing on one key. Per part keeps one holder per key and the parts of a
// fire, directed to different workers, on different keys: no contention
// between them at all.
//
// After the job's lock, a run whose trigger carries flow controls
// (Request.Flow, issue #33) takes its concurrency key's slot, its group's
// slot — the slots of a capped concurrent job under other keys, waiters
// ordered by priority first — and its turn under its rate limits, whose
// state lives in the bucket JETJOB_RATES (flow.go, rate.go). A run without
// them takes exactly the job's lock.
package joblock

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/shared/wire"
)

// Config is what Locks needs from its worker. Every field is required but
// Logger.
type Config struct {
	// NATS reads contended locks from the bucket's leader and asks other
	// workers whether the runs their locks name have ended.
	NATS *nats.Conn
	// KV is the JETJOB_LOCKS bucket (stream.Locks).
	KV jetstream.KeyValue
	// WorkerID names this worker in the locks it writes.
	WorkerID string
	// TTL is how long a holder or waiter may go without a beat before the
	// others take it for dead (the worker's Config.LockTTL); beats go out
	// every TTL/3. At most stream.LockTTL, the bucket's key TTL.
	TTL time.Duration
	// Active reports whether run executes, or waits for its lock, in this
	// process: a lock naming a run of this worker is free once it is not.
	Active func(run int64) bool
	// Kill asks for run to be killed with reason (block strategy
	// cover_early); a failure only means the holder runs to its end.
	Kill func(ctx context.Context, run int64, reason string) error
	// Logger receives what goes wrong with locks no run is asking for
	// (Stop); default none.
	Logger *zap.Logger
	// TestSignals: see TestSignals (nothing in production).
	TestSignals TestSignals
}

// TestSignals are the locks' key moments (package internal/testsignal),
// for tests to wait on instead of polling the bucket; inert unless a test
// calls Init on one before New.
type TestSignals struct {
	// Waiting: a run (its id) found its lock held and waits for it
	// (serial, cover_early, or a capped job's slots, or a flow control's:
	// once per key), its place in the queue written.
	Waiting testsignal.Signal[int64]
	// Held: a run holds its lock, or a slot of its job's.
	Held testsignal.Signal[int64]
	// Beat: a holder's beat was written, or a waiting run's beat of its
	// place in the queue (not of a slot's queue).
	Beat testsignal.Signal[Beat]
	// Released: a run released its lock (a slot: the write that gives it
	// back is done).
	Released testsignal.Signal[int64]
	// Turn: a run reserved its turn under a rate limit (the
	// compare-and-set that gives it succeeded): the contract's windows
	// hold for these, which a test can check exactly where the handlers'
	// starts come a moment later.
	Turn testsignal.Signal[Turn]
}

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testsignal.TB) {
	ts.Waiting.Init(tb)
	ts.Held.Init(tb)
	ts.Beat.Init(tb)
	ts.Released.Init(tb)
	ts.Turn.Init(tb)
}

// Beat is a beat written: the run holding (or waiting), and its beat now.
type Beat struct {
	Run  int64
	Beat int64
	// Place: the beat of a waiting run's place in the queue.
	Place bool
}

// Turn is a run's turn under a rate limit: the run, the limit's key
// (RateKey) and the turn, Unix ms as the limit's state holds it (from
// time.Now, so that a start the same clock measured compares exactly).
type Turn struct {
	Run int64
	Key string
	At  int64
}

// Locks is one worker's side of the job lock protocol.
type Locks struct {
	cfg  Config
	held heldLocks
	// workerJSON is Config.WorkerID as a JSON string, for freshValue.
	workerJSON []byte
	// wake wakes this process's waiters on a key when they have something
	// to do (wake.go).
	wake wakes
	// poll is how often a waiter reads a lock held elsewhere (pollLock),
	// pollLocal one held here (TTL/3, else when woken); tests set them.
	poll, pollLocal time.Duration
	// reads counts the reads of lock keys (read), for tests to count.
	reads atomic.Int64
	// turns orders this process's steps on the shared flow keys (turns.go).
	turns keyTurns
}

// New returns the locks of one worker.
func New(cfg Config) *Locks {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	id, _ := json.Marshal(cfg.WorkerID) // a string always encodes
	return &Locks{cfg: cfg, held: heldLocks{reuseFor: cfg.TTL / 2, now: time.Now}, workerJSON: id,
		poll: pollLock, pollLocal: max(cfg.TTL/3, pollLock)}
}

// pollLock is how often a waiting run looks at a lock held by another
// worker. (A watch on the key would not help: a holder that ends writes
// nothing, see Release.) One held here is looked at when this process
// wakes the waiter, and every TTL/3 (wake.go).
const pollLock = 100 * time.Millisecond

// Request is a run asking for its job's lock.
type Request struct {
	Run int64
	Job int64
	// FireAt orders the waiting runs: earlier fires go first.
	FireAt time.Time
	// ShardIndex and ShardTotal name a sharding-broadcast part (Key).
	ShardIndex, ShardTotal int
	// Strategy is the trigger's block strategy; one this build does not
	// know is taken for the default (serial), the safe one.
	Strategy policy.Block
	// MaxConcurrency caps a concurrent job's runs (0: no cap, no lock).
	MaxConcurrency int
	// Log is the run's logger; default the Locks' own.
	Log *zap.Logger
	// Interrupt is asked before every look at a held lock: a non-nil
	// error (the run was killed, the worker stops) ends the wait, the run
	// gives its place up, and Acquire returns the error wrapped.
	Interrupt func() error
	// Flow is the trigger's flow controls (nil: none, and Acquire takes
	// exactly the job's lock): its concurrency key's and its group's
	// slots and its rate limits are taken after the job's lock (flow.go).
	Flow *wire.Flow
	// Group is the run's group, whose cap and rate Flow may name.
	Group string
	// Late says, for a run that would start at turn under a rate limit,
	// why it must not run if its misfire policy ends it when that late
	// ("" if it runs): Acquire then returns a *SkippedError and takes no
	// turn. Nil: never.
	Late func(turn time.Time) string
	// FlowWaited is told each flow control a run waited at: "key_cap",
	// "group_cap" or "rate" (for the metrics). Nil: nobody.
	FlowWaited func(control string)

	waited bool // TestSignals.Waiting was signalled
}

// DiscardedError is Acquire's answer under block strategy discard_later
// when another run holds the lock.
type DiscardedError struct {
	Holder int64 // the run holding the lock
	// Waiting is the run waiting behind it under buffer_one (0 under
	// discard_later).
	Waiting int64
}

func (e *DiscardedError) Error() string {
	if e.Waiting != 0 {
		return fmt.Sprintf("discarded: run %d of this job is active and run %d waits behind it (block strategy buffer_one)", e.Holder, e.Waiting)
	}
	return fmt.Sprintf("discarded: run %d of this job is still active (block strategy discard_later)", e.Holder)
}

// Acquire applies req's block strategy before its handler starts: it
// returns the lock to hold while the run executes (nil for a concurrent
// job without a cap, which takes none), or an error that ends the run
// without running it — a *DiscardedError, or Interrupt's error. waited says
// whether the run found the lock held (a lock wait, for the metrics). ctx
// bounds the lock's writes and the waiting: a done ctx wakes a waiting run
// at once.
func (ls *Locks) Acquire(ctx context.Context, req Request) (lock *Lock, waited bool, err error) {
	if req.Log == nil {
		req.Log = ls.cfg.Logger
	}
	defer func() {
		if lock != nil {
			ls.cfg.TestSignals.Held.Signal(req.Run)
		}
	}()
	if req.Flow != nil {
		return ls.acquireFlow(ctx, req)
	}
	return ls.acquireJob(ctx, req)
}

// acquireJob takes the job's own lock as its block strategy says.
func (ls *Locks) acquireJob(ctx context.Context, req Request) (*Lock, bool, error) {
	switch kind, strategy := kindOf(req.Strategy, req.MaxConcurrency); kind {
	case noLock:
		return nil, false, nil
	case slotLock:
		return ls.acquireSlot(ctx, req, SlotsKey(req.Job, req.ShardIndex, req.ShardTotal), req.MaxConcurrency)
	default:
		return ls.acquireHolder(ctx, req, Key(req.Job, req.ShardIndex, req.ShardTotal), strategy)
	}
}

// interrupted is why a waiting run must stop waiting, nil if it need not.
func (req *Request) interrupted(ctx context.Context, key string) error {
	err := ctx.Err()
	if req.Interrupt != nil {
		// Asked first: it knows why the wait ends better than ctx does.
		if ierr := req.Interrupt(); ierr != nil {
			err = ierr
		}
	}
	if err != nil {
		return fmt.Errorf("waiting for job lock %s: %w", key, err)
	}
	return nil
}

// waiting reports, once, that the run waits for the lock.
func (ls *Locks) waiting(req *Request) {
	if !req.waited {
		req.waited = true
		ls.cfg.TestSignals.Waiting.Signal(req.Run)
	}
}

// Key is the lock a run takes: its job's, job.<job>, or for a part of a
// sharding broadcast (shardTotal > 0) the lock of its part index,
// job.<job>_part<i>, so that the parts of one fire run side by side while
// part i of the next fire meets part i of this one. One key token (no
// dots): a worker's permissions allow $KV.JETJOB_LOCKS.job.* (internal/stream).
func Key(job int64, shardIndex, shardTotal int) string {
	if shardTotal > 0 {
		return fmt.Sprintf("job.%d_part%d", job, shardIndex)
	}
	return jobKey(job)
}

// SlotsKey is the key of the slots of a capped concurrent job (slots.go):
// Key's, with _slots after it, so that a job switching strategies never
// reads the other shape.
func SlotsKey(job int64, shardIndex, shardTotal int) string {
	return Key(job, shardIndex, shardTotal) + flowkv.SlotsSuffix
}

func jobKey(job int64) string { return fmt.Sprintf("job.%d", job) }

// Lock is a held lock; Release it when the run's result is published.
type Lock struct {
	ls  *Locks
	log *zap.Logger
	key string // in JETJOB_LOCKS
	run int64  // the run holding it
	// slots: a slot of a capped concurrent job's lock (slots.go), given
	// back when released; otherwise the key names one holder.
	slots bool
	// as is the run the key names: the holder's own id, or that of an
	// ended run of this worker whose lock it holds without a write
	// (heldLocks.reuse).
	as int64
	// beat guards rev (the revision last written), wrote (when), stopped
	// and timer. A beat holds it while it writes, so Release waits for a
	// beat in flight.
	beat    sync.Mutex
	rev     uint64
	wrote   time.Time
	stopped bool
	timer   *time.Timer
	// contended: someone waits for the lock, so it is not left for reuse.
	// Guarded by heldLocks.mu.
	contended bool
	// next is the flow control's slot taken after this lock (flow.go),
	// released with it.
	next *Lock
}

// newLock is lock key for req's run, not yet held.
func (ls *Locks) newLock(req Request, key string) *Lock {
	return &Lock{ls: ls, log: req.Log, key: key, run: req.Run, as: req.Run}
}

// hold registers the lock key req's run has just written (revision rev,
// the write sent at wrote), or found handed to it, and keeps it refreshed
// until released; contended: runs are queued behind it.
func (ls *Locks) hold(req Request, key string, rev uint64, wrote time.Time, contended bool) *Lock {
	l := ls.newLock(req, key)
	l.rev, l.wrote = rev, wrote
	ls.held.hold(key, l, contended)
	return l.start()
}

// start keeps the lock refreshed until released: it bumps the beat (queue
// kept) every TTL/3 after the key's last write, so waiters see the holder
// alive and the key's age is reset. A lock held without a write
// (heldLocks.reuse) is at most reuseFor old; its first beat is then due at
// once, but not before a short grace, so that the short runs that make up
// most of a busy job's runs end before it and write nothing.
func (l *Lock) start() *Lock {
	l.beat.Lock()
	defer l.beat.Unlock()
	// A timer, not a goroutine: most runs end before their first beat.
	ttl := l.ls.cfg.TTL
	l.timer = time.AfterFunc(max(time.Until(l.wrote.Add(ttl/3)), ttl/12), l.bump)
	return l
}

// bump is one beat, then schedules the next.
func (l *Lock) bump() {
	l.beat.Lock()
	defer l.beat.Unlock()
	if l.stopped {
		return
	}
	at := time.Now()
	var beat int64
	if rev := l.ls.update(context.Background(), l.key, func(v *value) bool {
		var ok bool
		if beat, ok = l.beatIn(v); !ok {
			l.log.Warn("job lock lost while the run executes (it expired: the worker stalled)")
			return false
		}
		if !l.slots && len(v.Queue) > 0 {
			// Runs wait for it, maybe without this worker having heard:
			// it is handed on when this run ends, not left for reuse.
			l.ls.held.contendHeld(l)
		}
		return true
	}); rev != 0 {
		l.rev, l.wrote = rev, at
		l.ls.cfg.TestSignals.Beat.Signal(Beat{Run: l.run, Beat: beat})
	}
	l.timer.Reset(l.ls.cfg.TTL / 3)
}

// beatIn bumps the beat of l's holder in v and returns it, or reports
// false if v no longer names l's run (the lock expired or was taken over).
func (l *Lock) beatIn(v *value) (int64, bool) {
	if !l.slots {
		if v.Holder != l.as {
			return 0, false
		}
		v.Beat++
		return v.Beat, true
	}
	for i := range v.Slots {
		if v.Slots[i].Run == l.as {
			v.Slots[i].Beat++
			return v.Slots[i].Beat, true
		}
	}
	return 0, false
}

// Release stops refreshing and, unless someone waits for the lock, leaves
// it as it is, naming this run (or the one it holds it for), which has
// ended (the caller has published its result, and the run leaves the
// worker's table right after): no write. The job's next run takes it over
// (see Acquire), and the lock is remembered for the job's next run here
// (heldLocks). A contended lock — runs queued behind it, another worker
// asked about it, or another run here asks for it — is handed to the first
// in line instead (one write, handOn), so that the queue moves on without
// the waiters having to reach this worker.
//
// (Releasing by a delete cost a second write per run; purging the run's own
// revision instead, tried before, stalled one job's waiters for about a
// minute after a NATS node loss in the end-to-end suite.)
//
// A slot of a capped concurrent job is given back at once instead (one
// write): the slots' waiters need to see a free slot, not ask around.
// Releasing a nil Lock (a run that took none) does nothing.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	defer l.next.Release()
	l.beat.Lock()
	l.stopped = true
	l.timer.Stop()
	l.beat.Unlock()
	if l.slots {
		l.ls.leaveSlots(context.Background(), l.key, l.as)
	} else if l.ls.held.release(l.key, l) {
		if to := l.ls.handOn(l.key, l.as); to != 0 {
			l.ls.wake.handedTo(l.key, to)
		} else {
			// Not handed on: the first in line here takes it over.
			l.ls.wake.all(l.key)
		}
	}
	l.ls.cfg.TestSignals.Released.Signal(l.run)
}

// Asked answers another worker's question (control op run_active) whether
// run, named by a lock, is active here as far as the locks go: it is if a
// run here holds that lock under its name. lock is the key the asker
// names, or "" for job's own. Either way the asker waits for the lock (or
// takes it), so it is contended from now on: ask this before looking at
// the run table, so that a run here that reuses the lock afterwards writes
// the key (heldLocks).
func (ls *Locks) Asked(job int64, lock string, run int64) bool {
	key := lock
	if key == "" && job > 0 {
		key = jobKey(job)
	}
	return ls.held.asked(key, run)
}

// Stop frees the job locks that runs of this worker left when they ended
// (see Release), so that a stopping worker does not keep its jobs' next
// runs elsewhere waiting for the locks to go stale: a lock nobody waited
// for is deleted, and one with a queue is handed to the first waiter, who
// then holds it without asking this worker (which is about to go). Call it
// once every run has ended. Best effort, bounded by ctx: a lock taken over
// since is left alone (the writes are conditional).
func (ls *Locks) Stop(ctx context.Context) {
	left, contended := ls.held.drain()
	for key, rev := range left {
		if err := ls.del(ctx, key, rev); err != nil {
			if ctx.Err() != nil {
				return
			}
			// Written since: taken over, or someone queued whose
			// question never came here.
			ls.cfg.Logger.Debug("left job lock not deleted (written since); handing it on", zap.String("lock", key), zap.Error(err))
			contended[key] = true
		}
	}
	for key := range contended {
		ls.update(ctx, key, func(v *value) bool {
			return v.Worker == ls.cfg.WorkerID && !ls.cfg.Active(v.Holder) && handOver(v)
		})
		if ctx.Err() != nil {
			return
		}
	}
}
