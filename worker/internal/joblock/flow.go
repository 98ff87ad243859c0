package joblock

import (
	"context"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/flowkv"
)

// The flow controls of issue #33 (docs/flow-control.md, "Caps, keys, rates
// and priority: one mechanism"): a trigger's wire.Flow asks, after the
// job's own lock, for one of its concurrency key's slots, then one of its
// group's, then its turn under its rate limits. The slots are the slots of
// a capped concurrent job (slots.go) under other keys and caps, their
// waiters ordered by priority first (flowkv.ByTurn); the rates are rate.go. A
// trigger without Flow takes none of this: not a branch more than the
// nil check in Acquire.

// Flow controls a run may wait at, as FlowWaited and the metrics name them.
const (
	WaitKeyCap   = "key_cap"
	WaitGroupCap = "group_cap"
	WaitRate     = "rate"
)

// priority is the run's priority among slot waiters (0 without Flow).
func (req *Request) priority() int {
	if req.Flow == nil {
		return 0
	}
	return req.Flow.Priority
}

// flowWaited reports that the run waited at control.
func (req *Request) flowWaited(control string, key string) {
	req.Log.Debug("run waited at a flow control", zap.String("control", control), zap.String("lock", key))
	if req.FlowWaited != nil {
		req.FlowWaited(control)
	}
}

// acquireFlow takes, in order, the job's own lock, the concurrency key's
// slot, the group's slot and the run's turn under its rate limits. The
// lock returned holds all of them (Lock.next) and gives them back when
// released; if a step fails (interrupted, skipped by a rate limit, an
// unreachable bucket) the steps taken are given back and its error is
// returned. waited is the job lock's (the lock-wait metric's); the flow
// controls' waits go to FlowWaited.
func (ls *Locks) acquireFlow(ctx context.Context, req Request) (*Lock, bool, error) {
	job, waited, err := ls.acquireJob(ctx, req)
	if err != nil {
		return nil, waited, err
	}
	held := []*Lock{job}
	giveBack := func() {
		for _, l := range held {
			l.Release()
		}
	}
	f := req.Flow
	slot := func(control, key string, n int) error {
		// A fresh copy: Waiting is signalled once per key.
		r := req
		r.waited = false
		l, w, err := ls.acquireSlot(ctx, r, key, n)
		if w {
			req.flowWaited(control, key)
		}
		if err != nil {
			return err
		}
		held = append(held, l)
		return nil
	}
	if f.HasKey && f.KeyCap > 0 {
		if err := slot(WaitKeyCap, flowkv.KeySlotsKey(req.Job, f.Key), f.KeyCap); err != nil {
			giveBack()
			return nil, waited, err
		}
	}
	if f.GroupCap > 0 && req.Group != "" {
		if err := slot(WaitGroupCap, flowkv.GroupSlotsKey(req.Group), f.GroupCap); err != nil {
			giveBack()
			return nil, waited, err
		}
	}
	if len(f.Rates) > 0 {
		if err := ls.takeTurn(ctx, &req); err != nil {
			giveBack()
			return nil, waited, err
		}
	}
	// One lock for the caller: the first held, the others chained to it.
	var head, last *Lock
	for _, l := range held {
		if l == nil {
			continue // the job's lock, for a job without one
		}
		if head == nil {
			head = l
		} else {
			last.next = l
		}
		last = l
	}
	return head, waited, nil
}
