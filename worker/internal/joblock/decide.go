package joblock

import (
	"slices"

	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/internal/policy"
)

// The block strategies' decisions, apart from the reads and writes of the
// bucket that carry them out (holder.go, slots.go): what a run does with
// the lock value it has just read. Pure, so that every strategy is tested
// without a server (decide_test.go).

// lockKind is what a run of a job takes: no lock, one of the job's slots,
// or the job's lock (one holder).
type lockKind int

const (
	noLock lockKind = iota
	slotLock
	holderLock
)

// kindOf says which lock a run of block strategy s (with max_concurrency
// maxConcurrency) takes, and under which strategy: one this build does not
// know is taken for the default (serial), the safe one.
func kindOf(s policy.Block, maxConcurrency int) (lockKind, policy.Block) {
	strategy, err := policy.ParseBlock(string(s))
	if err != nil {
		strategy = policy.DefaultBlock // a newer scheduler's strategy
	}
	switch {
	case strategy != policy.BlockConcurrent:
		return holderLock, strategy
	case maxConcurrency == 0:
		return noLock, strategy // unbounded: nothing to hold
	}
	return slotLock, strategy
}

// holderFacts is what a run waiting for a single-holder lock knows once it
// has read the lock value v (held by another run; the first waiter
// dropped from it if its place went stale).
type holderFacts struct {
	v        value
	me       waiter
	strategy policy.Block // serial, discard_later or cover_early
	// stale: the holder's beat has not moved for Config.TTL (its worker
	// died or stalled).
	stale bool
	// ended: the holder has ended, its worker says (this worker's own
	// runs are looked up here; another worker is asked only when this run
	// is next in line and the holder is not stale).
	ended bool
	// mine: the holder is a run of this worker.
	mine bool
	// yield: a run of this worker of an earlier fire asks for the lock and
	// has not written its place in the queue yet: this run neither takes
	// the lock nor hands it on ahead of it.
	yield bool
	// dropped: the first waiter's place went stale and was dropped from
	// v, which must then be written back.
	dropped bool
	// placeDue: this run is first in line and wrote its place TTL/3 ago or
	// more: its beat is due (a key some run waits for must not expire).
	placeDue bool
	// askedKill: this run has asked for the holder's kill already
	// (cover_early asks once).
	askedKill bool
}

// next says whether the run is next in line: nobody queued, or it first.
func (f holderFacts) next() bool { return len(f.v.Queue) == 0 || f.v.Queue[0].Run == f.me.Run }

// holderAction is what a run does with a held lock.
type holderAction int

const (
	// takeOver: write write (the run as holder, out of the queue) over
	// the revision read; the run holds the lock if the write sticks.
	takeOver holderAction = iota
	// handOn: write write (the first in line as holder) over the revision
	// read, then look again: the holder, a run of this worker, has ended,
	// and an earlier fire waits ahead of this run.
	handOn
	// discard: the run ends DISCARDED (discard_later).
	discard
	// wait: the run waits (after asking for the holder's kill if kill,
	// and writing write if set: its place in the queue, or its beat).
	wait
)

// holderDecision is decideHolder's answer.
type holderDecision struct {
	do    holderAction
	write *value // the value to write, nil for none
	kill  bool   // ask for the holder's kill first (cover_early)
	// waiting is, for a discard under buffer_one, the run already queued.
	waiting int64
}

// decideHolder applies the run's block strategy to a lock another run
// holds (see the package doc): the run next in line takes a lock whose
// holder has ended or gone stale, unless an earlier fire of this worker is
// about to queue; a run of the holder's worker that finds it ended hands
// it to the first in line; otherwise discard_later discards the run,
// buffer_one discards it when another run waits already, cover_early asks
// once for the holder's kill, and serial, buffer_one and cover_early queue
// in fire order (then run id) and wait, the first in line beating its
// place every TTL/3.
func decideHolder(f holderFacts) holderDecision {
	v := f.v
	v.Queue = slices.Clone(v.Queue)
	isMe := func(w waiter) bool { return w.Run == f.me.Run }
	if f.next() && !f.yield && (f.stale || f.ended) {
		v.Holder, v.Worker, v.Beat = f.me.Run, f.me.Worker, 0
		v.Queue = slices.DeleteFunc(v.Queue, isMe)
		return holderDecision{do: takeOver, write: &v}
	}
	if f.strategy == policy.BlockDiscardLater {
		return holderDecision{do: discard}
	}
	i := slices.IndexFunc(v.Queue, isMe)
	if f.strategy == policy.BlockBufferOne && i < 0 && len(v.Queue) > 0 {
		return holderDecision{do: discard, waiting: v.Queue[0].Run}
	}
	if f.mine && f.ended && i > 0 && !f.yield {
		handOver(&v)
		return holderDecision{do: handOn, write: &v}
	}
	d := holderDecision{do: wait, kill: f.strategy == policy.BlockCoverEarly && !f.askedKill}
	switch {
	case i >= 0 && f.placeDue:
		v.Queue[i].Beat++
		d.write = &v
	case i < 0 && !f.yield:
		v.Queue = append(v.Queue, f.me)
		slices.SortFunc(v.Queue, flowkv.ByFire)
		d.write = &v
	case f.dropped:
		d.write = &v
	}
	return d
}

// handOver passes the lock to the first queued run; with no queue it
// clears the holder (update then deletes the key).
func handOver(v *value) bool {
	if len(v.Queue) == 0 {
		v.Holder, v.Worker, v.Beat = 0, "", 0
		return true
	}
	v.Holder, v.Worker, v.Beat, v.Queue = v.Queue[0].Run, v.Queue[0].Worker, 0, v.Queue[1:]
	return true
}

// slotAction is what a run does with a capped concurrent job's slots.
type slotAction int

const (
	// holdSlot: the value names the run in a slot already (a write whose
	// answer was lost): it holds it.
	holdSlot slotAction = iota
	// takeSlot: write write (the run in a slot, out of the queue).
	takeSlot
	// queueForSlot: write write (the run's place in the queue, added or
	// its beat bumped) and wait.
	queueForSlot
	// waitForSlot: wait; the run's place is in the queue and fresh.
	waitForSlot
)

// slotFacts is what a run waiting for one of n slots knows once it has
// read their value v (stale holders and waiters dropped from it).
type slotFacts struct {
	v  value
	me waiter
	n  int
	// dropped: stale holders or waiters were dropped from v (so v must
	// be written even if the run's place is fresh).
	dropped bool
	// fresh: the run wrote its place less than TTL/3 ago.
	fresh bool
}

// decideSlot applies a cap of n slots (a job's max_concurrency, a group's
// cap, a concurrency key's): a run takes a slot when fewer than n are held
// by runs and runs ahead of it waiting (flowkv.ByTurn); otherwise it joins the
// queue in that order, or refreshes its place there, and waits.
func decideSlot(f slotFacts) (slotAction, *value) {
	isMe := func(w waiter) bool { return w.Run == f.me.Run }
	if slices.ContainsFunc(f.v.Slots, func(s slotHolder) bool { return s.Run == f.me.Run }) {
		return holdSlot, nil
	}
	v := f.v
	v.Slots, v.Queue = slices.Clone(v.Slots), slices.Clone(v.Queue)
	ahead := 0 // runs of earlier fires queued
	for _, w := range v.Queue {
		if !isMe(w) && flowkv.ByTurn(w, f.me) < 0 {
			ahead++
		}
	}
	if len(v.Slots)+ahead < f.n {
		v.Slots = append(v.Slots, slotHolder{Run: f.me.Run, Worker: f.me.Worker})
		v.Queue = slices.DeleteFunc(v.Queue, isMe)
		return takeSlot, &v
	}
	i := slices.IndexFunc(v.Queue, isMe)
	switch {
	case i >= 0 && !f.dropped && f.fresh:
		return waitForSlot, nil
	case i >= 0:
		v.Queue[i].Beat++
	default:
		v.Queue = append(v.Queue, f.me)
		slices.SortFunc(v.Queue, flowkv.ByTurn)
	}
	return queueForSlot, &v
}
