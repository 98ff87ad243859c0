package worker

import (
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// Judging late triggers off their run slots.
//
// Under overload many triggers reach a worker late, and most of them end
// EXPIRED (misfire.go): policy skip, or fire_once superseded by a newer
// fire. Judging one is waiting, not work: a question to the schedulers
// (fire_once), then its EXPIRED event stored and the trigger acked. On its
// run slot that wait is taken from the runs that would run: measured under
// 2× overload with fire_once, a worker ran 86 % of its capacity.
//
// So a trigger late on receipt that may end EXPIRED gives its slot back
// before it is judged, as long as the worker's pool of judges has room,
// and the slot goes on to the next trigger (fetch.go). If it ends EXPIRED
// it is finished without a slot; if it is to run after all, it waits for
// the next slot of its lane ahead of any new pull request (lane.enqueue),
// and its execution goes on from there. When the pool is full, a late
// trigger is judged on its slot as before: that slows fetching down, so a
// worker never takes an unbounded number of late triggers off the group's
// queue.
//
// Only first deliveries are judged off their slot. A redelivery goes
// through the start check first (started.go), which may keep it waiting
// for another worker; it keeps its slot throughout, as before.

// judgesPerSlot and minJudges size a worker's pool of judges (one pool for
// its three lanes): how many late triggers it judges off their slots at
// once. A judgement waits on round trips (the supersede question, the
// EXPIRED event's store, the ack) that are batched with the others under
// way, so the pool is a few times the slots: enough that, under overload,
// late triggers are judged while every slot runs a handler, and small
// enough that a worker holds few triggers beyond its slots (and fewer
// still to run: under fire_once, the schedulers let only a job's newest
// missed fire run). The floor lets a small worker still batch its
// questions.
const (
	judgesPerSlot = 4
	minJudges     = 16
)

// judgePool is the size of the pool of judges of a worker with
// concurrency slots per lane.
func judgePool(concurrency int) int { return max(judgesPerSlot*concurrency, minJudges) }

// A slotHold is an execution's hold on a run slot of the lane its trigger
// arrived on: taken on receipt (fetch.go), given back while a late trigger
// is judged, taken again when it is to run, and released at the end.
type slotHold struct {
	l       *lane
	metrics *metrics
	free    func() // ends the slot's count in the busy gauge; nil while not held
}

// holdSlot is the hold of a trigger that arrived owning a slot of l.
func (w *Worker) holdSlot(l *lane) *slotHold {
	return &slotHold{l: l, metrics: w.metrics, free: w.metrics.slotTaken(l.name)}
}

// give returns the held slot to the lane: to the trigger waiting longest
// for one, if any, else free for the next pull request.
func (s *slotHold) give() {
	s.free()
	s.free = nil
	s.l.release(1)
}

// retake waits for a slot of the lane, ahead of any new pull request. It
// reports false, holding none, when the worker stops first.
func (s *slotHold) retake() bool {
	granted := make(chan bool, 1) // sent to under the lane's release, which must not block
	if !s.l.enqueue(waiter{start: func() { granted <- true }, drop: func() { granted <- false }}) {
		return false
	}
	if !<-granted {
		return false
	}
	s.free = s.metrics.slotTaken(s.l.name)
	return true
}

// end releases the slot, if held, when the execution is over.
func (s *slotHold) end() {
	if s.free != nil {
		s.give()
	}
}

// misfire applies the run's misfire policy (misfire.go), off its slot when
// it may (see the top of this file). It reports whether the run goes on,
// holding a slot; if not, whether its result was reported: EXPIRED, or
// nothing when it was handed back because the worker stopped while it
// waited for a slot.
func (r *run) misfire() (goOn, reported bool) {
	off := r.leaveSlot()
	late, msg := expired(r.trig, r.w.cfg.ID, time.Now())
	if !late {
		late, msg = r.w.superseded(r.trig)
	}
	if late {
		reported = r.finish(outcome{status: wire.StatusExpired, message: msg})
		if reported {
			r.w.counts.expiredTotal.Add(1)
		}
		if off {
			<-r.w.judges
		}
		return false, reported
	}
	if !off {
		return true, false
	}
	// To run: the judge goes back before the wait for a slot. Waiting
	// runs need no bound of their own: while one waits, every slot of
	// the lane is taken and no new pull request is sent (fetch.go), and
	// a late trigger that arrives on an open one hands its slot to the
	// first waiter as it leaves it.
	<-r.w.judges
	if !r.slot.retake() {
		r.handBack("worker stopping while the late run waited for a slot")
		return false, false
	}
	return true, false
}

// leaveSlot gives the run's slot back for its misfire judgement when the
// trigger is a first delivery, late on receipt under a policy that may
// expire it, and the pool of judges has room; it reports whether it did.
func (r *run) leaveSlot() bool {
	if r.mayStart || r.slot == nil || !mayExpire(r.trig, time.Now(), r.w.cfg.ID) {
		return false
	}
	select {
	case r.w.judges <- struct{}{}:
	default:
		return false // judged on its slot: fetching waits for it
	}
	r.slot.give()
	return true
}
