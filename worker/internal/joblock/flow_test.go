package joblock

import "testing"

// The slots' decisions by priority, without a server (the order itself
// and the rate arithmetic are package flowkv's, tested there).

// A run of a higher priority takes a free slot ahead of an earlier fire of
// a lower one, and queues ahead of it; a lower one waits behind a higher
// one queued, whatever their fire times.
func TestDecideSlotPriority(t *testing.T) {
	low := waiter{Run: 1, At: 100, Worker: "w1", Beat: 2}
	high := waiter{Run: 2, At: 900, P: 10, Worker: "w2"}
	held := []slotHolder{{Run: 9, Worker: "w3"}}

	// One slot, free, the low-priority earlier fire queued: high takes it.
	do, v := decideSlot(slotFacts{v: value{Queue: []waiter{low}}, me: high, n: 1})
	if do != takeSlot || len(v.Slots) != 1 || v.Slots[0].Run != 2 || len(v.Queue) != 1 {
		t.Errorf("high with a free slot: %v %+v, want it taken, low still queued", do, v)
	}
	// The slot held: high queues ahead of low.
	do, v = decideSlot(slotFacts{v: value{Slots: held, Queue: []waiter{low}}, me: high, n: 1})
	if do != queueForSlot || len(v.Queue) != 2 || v.Queue[0].Run != 2 || v.Queue[1].Run != 1 {
		t.Errorf("high with the slot held: %v %+v, want it queued first", do, v)
	}
	// A free slot, high queued: low (the earlier fire) waits behind it.
	do, v = decideSlot(slotFacts{v: value{Queue: []waiter{high}}, me: low, n: 1})
	if do != queueForSlot || len(v.Queue) != 2 || v.Queue[0].Run != 2 {
		t.Errorf("low behind a queued high: %v %+v, want it queued second", do, v)
	}
	// Equal priorities keep fire order, as a job's max_concurrency does.
	late := waiter{Run: 3, At: 950, Worker: "w2"}
	do, _ = decideSlot(slotFacts{v: value{Queue: []waiter{low}}, me: late, n: 1})
	if do != queueForSlot {
		t.Errorf("a later fire of the same priority: %v, want it queued", do)
	}
}
