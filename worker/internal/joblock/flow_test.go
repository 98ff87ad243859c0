package joblock

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jetjob/jetjob/shared/wire"
)

// The flow controls' arithmetic, without a server: the waiters' order at a
// cap and the rate limits' turns.

// Slot waiters go by priority, higher first, then fire time, then run id.
func TestByTurn(t *testing.T) {
	ws := []waiter{
		{Run: 1, At: 100},
		{Run: 2, At: 300, P: 10},
		{Run: 3, At: 100, P: -5},
		{Run: 4, At: 200, P: 10},
		{Run: 5, At: 50},
		{Run: 6, At: 50},
	}
	slices.SortFunc(ws, byTurn)
	var got []int64
	for _, w := range ws {
		got = append(got, w.Run)
	}
	if want := []int64{4, 2, 5, 6, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

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

// The priority is part of a waiter's record only when it is not 0: a
// job's slots without flow controls look exactly as before.
func TestWaiterPriorityJSON(t *testing.T) {
	if b := string(mustJSON(t, waiter{Run: 1, At: 2})); b != `{"run":1,"at":2}` {
		t.Errorf("waiter without priority: %s", b)
	}
	if b := string(mustJSON(t, waiter{Run: 1, At: 2, P: -3})); b != `{"run":1,"at":2,"p":-3}` {
		t.Errorf("waiter with priority: %s", b)
	}
}

func TestFlowKeys(t *testing.T) {
	for got, want := range map[string]string{
		GroupSlotsKey("billing"):                   "group.billing_slots",
		KeySlotsKey(7, "tenant-1"):                 "key.7." + KeyHash("tenant-1") + "_slots",
		RateKey(wire.RateJob, 7, "billing", "x"):   "rate.job.7",
		RateKey(wire.RateGroup, 7, "billing", "x"): "rate.group.billing",
		RateKey(wire.RateKey, 7, "billing", "x"):   "rate.key.7." + KeyHash("x"),
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
	// sha256("") begins e3b0c44298fc1c14.
	if h := KeyHash(""); h != "e3b0c44298fc1c14" {
		t.Errorf("KeyHash(\"\") = %s", h)
	}
	if bucketOf("rate.job.7") != "JETJOB_RATES" || bucketOf("group.g_slots") != "JETJOB_LOCKS" {
		t.Error("rate keys belong in JETJOB_RATES, the others in JETJOB_LOCKS")
	}
}

// rateTurns gives the turns of runs asking at the times asks (Unix ms,
// ascending) under r, from an idle state.
func rateTurns(r wire.Rate, asks []int64) []int64 {
	var s rateState
	turns := make([]int64, len(asks))
	for i, at := range asks {
		turns[i], s = rateTurn(s, at, r)
	}
	return turns
}

// maxInWindow is the most turns in any half-open window [t, t+period).
func maxInWindow(turns []int64, period int64) int {
	sorted := slices.Clone(turns)
	slices.Sort(sorted)
	most, j := 0, 0
	for i := range sorted {
		for sorted[i]-sorted[j] >= period {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

func TestRateTurnBurstThenBlocks(t *testing.T) {
	r := wire.Rate{Scope: wire.RateGroup, Count: 3, PeriodMS: 1000}
	// Ten runs at once: a burst of three, then three a period later, ...
	got := rateTurns(r, make([]int64, 10))
	want := []int64{0, 0, 0, 1000, 1000, 1000, 2000, 2000, 2000, 3000}
	if !slices.Equal(got, want) {
		t.Errorf("turns %v, want %v", got, want)
	}
	// Idle again (a period after the last turn): a new burst at once.
	var s rateState
	for range 3 {
		_, s = rateTurn(s, 0, r)
	}
	if turn, _ := rateTurn(s, 1000, r); turn != 1000 {
		t.Errorf("after a period: turn %d, want 1000 (now)", turn)
	}
	// Joining a block whose last turn lies ahead waits for that turn.
	s = rateState{TAT: 2500, N: 1} // last turn 1500
	if turn, next := rateTurn(s, 1200, r); turn != 1500 || next.N != 2 || next.TAT != 2500 {
		t.Errorf("join: turn %d state %+v, want 1500 {2500 2}", turn, next)
	}
	// A plain GCRA would give the fourth run a turn within the first
	// period; here a full block pushes it to a period after the last.
	s = rateState{TAT: 1400, N: 3}
	if turn, next := rateTurn(s, 500, r); turn != 1400 || next.N != 1 || next.TAT != 2400 {
		t.Errorf("full block: turn %d state %+v, want 1400 {2400 1}", turn, next)
	}
}

// Whatever the arrivals, no window of a period holds more than Count
// turns; under overload the turns keep up with the rate; every turn is at
// or after its ask.
func TestRateTurnWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range []wire.Rate{
		{Count: 1, PeriodMS: 100}, {Count: 5, PeriodMS: 1000}, {Count: 10, PeriodMS: 1000}, {Count: 100, PeriodMS: 60000},
	} {
		for range 50 {
			n := 1 + rng.IntN(500)
			asks := make([]int64, n)
			at := int64(0)
			spread := 1 + rng.Int64N(3*r.PeriodMS/int64(r.Count)+1)
			for i := range asks {
				at += rng.Int64N(spread)
				asks[i] = at
			}
			turns := rateTurns(r, asks)
			if most := maxInWindow(turns, r.PeriodMS); most > r.Count {
				t.Fatalf("rate %s: %d turns in one period (asks %v → turns %v)", r, most, asks, turns)
			}
			for i := range turns {
				if turns[i] < asks[i] {
					t.Fatalf("rate %s: turn %d before its ask %d", r, turns[i], asks[i])
				}
			}
		}
		// Overload: everyone asks at 0; k periods give (k+1)·Count turns.
		turns := rateTurns(r, make([]int64, 5*r.Count))
		if last := turns[len(turns)-1]; last != 4*r.PeriodMS {
			t.Errorf("rate %s overloaded: last of %d turns at %d, want %d", r, len(turns), last, 4*r.PeriodMS)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
