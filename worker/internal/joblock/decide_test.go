package joblock

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jetjob/jetjob/internal/policy"
)

// The block strategies' decisions, without a server: the tests of
// joblock_test.go run them against a real bucket.

func TestKindOf(t *testing.T) {
	cases := []struct {
		strategy     policy.Block
		max          int
		kind         lockKind
		wantStrategy policy.Block
	}{
		{policy.BlockSerial, 0, holderLock, policy.BlockSerial},
		{"", 0, holderLock, policy.BlockSerial}, // none given: the default
		{"bogus", 0, holderLock, policy.BlockSerial},
		{policy.BlockDiscardLater, 3, holderLock, policy.BlockDiscardLater}, // a cap only caps concurrent
		{policy.BlockCoverEarly, 0, holderLock, policy.BlockCoverEarly},
		{policy.BlockBufferOne, 0, holderLock, policy.BlockBufferOne},
		{policy.BlockConcurrent, 0, noLock, policy.BlockConcurrent},
		{policy.BlockConcurrent, 2, slotLock, policy.BlockConcurrent},
	}
	for _, c := range cases {
		kind, s := kindOf(c.strategy, c.max)
		if kind != c.kind || s != c.wantStrategy {
			t.Errorf("kindOf(%q, %d) = %v, %q; want %v, %q", c.strategy, c.max, kind, s, c.kind, c.wantStrategy)
		}
	}
}

func TestDecideHolder(t *testing.T) {
	me := waiter{Run: 5, At: 500, Worker: "w2"}
	held := value{Holder: 1, Worker: "w1", Beat: 7}
	queued := func(ws ...waiter) value { v := held; v.Queue = ws; return v }
	early := waiter{Run: 3, At: 300, Worker: "w3"}
	late := waiter{Run: 9, At: 900, Worker: "w3"}
	sameFire := waiter{Run: 4, At: 500, Worker: "w3"}
	mine := value{Holder: 5, Worker: "w2", Queue: []waiter{late}}
	beaten := me
	beaten.Beat = 1
	cases := []struct {
		name string
		f    holderFacts
		want holderDecision
	}{
		{"serial: holder running, queue empty: join and wait",
			holderFacts{v: held, me: me, strategy: policy.BlockSerial},
			holderDecision{do: wait, write: ptr(queued(me))}},
		{"serial: queued in fire order, then run id",
			holderFacts{v: queued(late, early, sameFire), me: me, strategy: policy.BlockSerial},
			holderDecision{do: wait, write: ptr(queued(early, sameFire, me, late))}},
		{"serial: already queued: wait, no write",
			holderFacts{v: queued(early, me), me: me, strategy: policy.BlockSerial},
			holderDecision{do: wait}},
		{"serial: holder ended, next in line: take over",
			holderFacts{v: queued(me, late), me: me, strategy: policy.BlockSerial, ended: true},
			holderDecision{do: takeOver, write: &mine}},
		{"serial: holder stale, nobody queued: take over",
			holderFacts{v: held, me: me, strategy: policy.BlockSerial, stale: true},
			holderDecision{do: takeOver, write: &value{Holder: 5, Worker: "w2"}}},
		{"serial: holder ended but an earlier fire is first: wait",
			holderFacts{v: queued(early, me), me: me, strategy: policy.BlockSerial, ended: true},
			holderDecision{do: wait}},
		{"discard_later: holder running: discarded",
			holderFacts{v: held, me: me, strategy: policy.BlockDiscardLater},
			holderDecision{do: discard}},
		{"discard_later: holder ended: take over",
			holderFacts{v: held, me: me, strategy: policy.BlockDiscardLater, ended: true},
			holderDecision{do: takeOver, write: &value{Holder: 5, Worker: "w2"}}},
		{"buffer_one: holder running, queue empty: join and wait",
			holderFacts{v: held, me: me, strategy: policy.BlockBufferOne},
			holderDecision{do: wait, write: ptr(queued(me))}},
		{"buffer_one: another run waits already: discarded, naming it",
			holderFacts{v: queued(late), me: me, strategy: policy.BlockBufferOne},
			holderDecision{do: discard, waiting: late.Run}},
		{"buffer_one: queued already (a second look): wait, no write",
			holderFacts{v: queued(me), me: me, strategy: policy.BlockBufferOne},
			holderDecision{do: wait}},
		{"buffer_one: holder ended, next in line: take over",
			holderFacts{v: queued(me, late), me: me, strategy: policy.BlockBufferOne, ended: true},
			holderDecision{do: takeOver, write: &mine}},
		{"cover_early: ask the holder's kill, join and wait",
			holderFacts{v: held, me: me, strategy: policy.BlockCoverEarly},
			holderDecision{do: wait, kill: true, write: ptr(queued(me))}},
		{"cover_early: kill asked already: wait",
			holderFacts{v: queued(me), me: me, strategy: policy.BlockCoverEarly, askedKill: true},
			holderDecision{do: wait}},
		{"serial: holder ended, next, but an earlier fire here is about to queue: wait unqueued",
			holderFacts{v: held, me: me, strategy: policy.BlockSerial, ended: true, mine: true, yield: true},
			holderDecision{do: wait}},
		{"serial: holder stale, first in line, an earlier fire here is about to queue: wait",
			holderFacts{v: queued(me), me: me, strategy: policy.BlockSerial, stale: true, yield: true},
			holderDecision{do: wait}},
		{"serial: holder of this worker ended, an earlier fire first: hand it on",
			holderFacts{v: queued(early, me), me: me, strategy: policy.BlockSerial, ended: true, mine: true},
			holderDecision{do: handOn, write: &value{Holder: 3, Worker: "w3", Queue: []waiter{me}}}},
		{"serial: holder of this worker ended, not queued yet: join first",
			holderFacts{v: queued(early), me: me, strategy: policy.BlockSerial, ended: true, mine: true},
			holderDecision{do: wait, write: ptr(queued(early, me))}},
		{"serial: holder of this worker ended, an earlier fire here about to queue: no hand-on",
			holderFacts{v: queued(early, me), me: me, strategy: policy.BlockSerial, ended: true, mine: true, yield: true},
			holderDecision{do: wait}},
		{"serial: holder elsewhere ended, an earlier fire first: wait for it",
			holderFacts{v: queued(early, me), me: me, strategy: policy.BlockSerial, ended: true},
			holderDecision{do: wait}},
		{"serial: first in line, place due: beat it",
			holderFacts{v: queued(me, late), me: me, strategy: policy.BlockSerial, placeDue: true},
			holderDecision{do: wait, write: ptr(queued(beaten, late))}},
		{"serial: queued, the stale first waiter dropped: write the queue back",
			holderFacts{v: queued(me), me: me, strategy: policy.BlockSerial, dropped: true},
			holderDecision{do: wait, write: ptr(queued(me))}},
		{"serial: holder stale, a stale head dropped: take over",
			holderFacts{v: queued(me, late), me: me, strategy: policy.BlockSerial, stale: true, dropped: true},
			holderDecision{do: takeOver, write: &mine}},
		{"cover_early: the killed holder ended: take over",
			holderFacts{v: queued(me), me: me, strategy: policy.BlockCoverEarly, askedKill: true, ended: true},
			holderDecision{do: takeOver, write: &value{Holder: 5, Worker: "w2"}}},
	}
	for _, c := range cases {
		before := c.f.v
		before.Queue = append([]waiter(nil), c.f.v.Queue...)
		if got := decideHolder(c.f); !sameDecision(got, c.want) {
			t.Errorf("%s:\n got %+v (write %+v)\nwant %+v (write %+v)", c.name, got, got.write, c.want, c.want.write)
		}
		if !reflect.DeepEqual(c.f.v, before) {
			t.Errorf("%s: the value read changed to %+v", c.name, c.f.v)
		}
	}
}

func TestDecideSlot(t *testing.T) {
	me := waiter{Run: 5, At: 500, Worker: "w2"}
	slot := func(run int64) slotHolder { return slotHolder{Run: run, Worker: "w1"} }
	early := waiter{Run: 3, At: 300, Worker: "w3"}
	late := waiter{Run: 9, At: 900, Worker: "w3"}
	bumped := me
	bumped.Beat = 1
	cases := []struct {
		name      string
		f         slotFacts
		want      slotAction
		wantWrite *value
	}{
		{"a free slot: take it",
			slotFacts{v: value{Slots: []slotHolder{slot(1)}}, me: me, n: 2},
			takeSlot, &value{Slots: []slotHolder{slot(1), {Run: 5, Worker: "w2"}}}},
		{"a free slot, later fires queued: take it, leaving the queue",
			slotFacts{v: value{Slots: []slotHolder{slot(1)}, Queue: []waiter{me, late}}, me: me, n: 2},
			takeSlot, &value{Slots: []slotHolder{slot(1), {Run: 5, Worker: "w2"}}, Queue: []waiter{late}}},
		{"a free slot owed to an earlier fire: queue behind it",
			slotFacts{v: value{Slots: []slotHolder{slot(1)}, Queue: []waiter{early}}, me: me, n: 2},
			queueForSlot, &value{Slots: []slotHolder{slot(1)}, Queue: []waiter{early, me}}},
		{"all slots held: queue in fire order",
			slotFacts{v: value{Slots: []slotHolder{slot(1), slot(2)}, Queue: []waiter{late, early}}, me: me, n: 2},
			queueForSlot, &value{Slots: []slotHolder{slot(1), slot(2)}, Queue: []waiter{early, me, late}}},
		{"queued, place fresh: wait",
			slotFacts{v: value{Slots: []slotHolder{slot(1)}, Queue: []waiter{me}}, me: me, n: 1, fresh: true},
			waitForSlot, nil},
		{"queued, place old: bump its beat",
			slotFacts{v: value{Slots: []slotHolder{slot(1)}, Queue: []waiter{me}}, me: me, n: 1},
			queueForSlot, &value{Slots: []slotHolder{slot(1)}, Queue: []waiter{bumped}}},
		{"queued, stale runs dropped: write it back",
			slotFacts{v: value{Slots: []slotHolder{slot(1)}, Queue: []waiter{me}}, me: me, n: 1, fresh: true, dropped: true},
			queueForSlot, &value{Slots: []slotHolder{slot(1)}, Queue: []waiter{bumped}}},
		{"named in a slot already (a lost answer): hold it",
			slotFacts{v: value{Slots: []slotHolder{slot(1), {Run: 5, Worker: "w2"}}}, me: me, n: 2},
			holdSlot, nil},
	}
	for _, c := range cases {
		do, write := decideSlot(c.f)
		if do != c.want || !reflect.DeepEqual(write, c.wantWrite) {
			t.Errorf("%s: got %v %+v, want %v %+v", c.name, do, write, c.want, c.wantWrite)
		}
	}
}

func ptr(v value) *value { return &v }

// sameDecision compares decisions by the JSON of the values they write:
// an empty queue is no queue.
func sameDecision(a, b holderDecision) bool {
	ja, _ := json.Marshal(a.write)
	jb, _ := json.Marshal(b.write)
	return a.do == b.do && a.kill == b.kill && (a.write == nil) == (b.write == nil) && string(ja) == string(jb)
}
