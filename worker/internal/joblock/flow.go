package joblock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"go.uber.org/zap"
)

// The flow controls of issue #33 (docs/flow-control.md, "Caps, keys, rates
// and priority: one mechanism"): a trigger's wire.Flow asks, after the
// job's own lock, for one of its concurrency key's slots, then one of its
// group's, then its turn under its rate limits. The slots are the slots of
// a capped concurrent job (slots.go) under other keys and caps, their
// waiters ordered by priority first (byTurn); the rates are rate.go. A
// trigger without Flow takes none of this: not a branch more than the
// nil check in Acquire.

// Flow controls a run may wait at, as FlowWaited and the metrics name them.
const (
	WaitKeyCap   = "key_cap"
	WaitGroupCap = "group_cap"
	WaitRate     = "rate"
)

// GroupSlotsKey is the key of a group's cap, group.<group>_slots. A group
// name is one key token ([A-Za-z0-9_-], wire.CheckName).
func GroupSlotsKey(group string) string { return "group." + group + slotsSuffix }

// KeySlotsKey is the key of the slots of one concurrency key of a job,
// key.<jobID>.<h>_slots, h the key's hash (KeyHash).
func KeySlotsKey(job int64, key string) string {
	return fmt.Sprintf("key.%d.%s%s", job, KeyHash(key), slotsSuffix)
}

// KeyHash is a concurrency key as KV keys name it: the first 16 hex digits
// of its SHA-256, so that any value (up to wire.MaxKeyBytes of anything)
// makes one valid key token.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

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
		if err := slot(WaitKeyCap, KeySlotsKey(req.Job, f.Key), f.KeyCap); err != nil {
			giveBack()
			return nil, waited, err
		}
	}
	if f.GroupCap > 0 && req.Group != "" {
		if err := slot(WaitGroupCap, GroupSlotsKey(req.Group), f.GroupCap); err != nil {
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
