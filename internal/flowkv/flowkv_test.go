package flowkv

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

// The flow controls' arithmetic: the keys, the waiters' order at a cap and
// the rate limits' turns.

// Slot waiters go by priority, higher first, then fire time, then run id.
func TestByTurn(t *testing.T) {
	ws := []Waiter{
		{Run: 1, At: 100},
		{Run: 2, At: 300, P: 10},
		{Run: 3, At: 100, P: -5},
		{Run: 4, At: 200, P: 10},
		{Run: 5, At: 50},
		{Run: 6, At: 50},
	}
	slices.SortFunc(ws, ByTurn)
	var got []int64
	for _, w := range ws {
		got = append(got, w.Run)
	}
	if want := []int64{4, 2, 5, 6, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// The priority is part of a waiter's record only when it is not 0: a
// job's slots without flow controls look exactly as before.
func TestWaiterPriorityJSON(t *testing.T) {
	if b := string(mustJSON(t, Waiter{Run: 1, At: 2})); b != `{"run":1,"at":2}` {
		t.Errorf("waiter without priority: %s", b)
	}
	if b := string(mustJSON(t, Waiter{Run: 1, At: 2, P: -3})); b != `{"run":1,"at":2,"p":-3}` {
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
}

// rateTurns gives the turns of runs asking at the times asks (Unix ms,
// ascending) under r, from an idle state.
func rateTurns(r wire.Rate, asks []int64) []int64 {
	var s RateState
	turns := make([]int64, len(asks))
	for i, at := range asks {
		turns[i], s = Turn(s, at, r)
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

func TestTurnBurstThenBlocks(t *testing.T) {
	r := wire.Rate{Scope: wire.RateGroup, Count: 3, PeriodMS: 1000}
	// Ten runs at once: a burst of three, then three a period later, ...
	got := rateTurns(r, make([]int64, 10))
	want := []int64{0, 0, 0, 1000, 1000, 1000, 2000, 2000, 2000, 3000}
	if !slices.Equal(got, want) {
		t.Errorf("turns %v, want %v", got, want)
	}
	// Idle again (a period after the last turn): a new burst at once.
	var s RateState
	for range 3 {
		_, s = Turn(s, 0, r)
	}
	if turn, _ := Turn(s, 1000, r); turn != 1000 {
		t.Errorf("after a period: turn %d, want 1000 (now)", turn)
	}
	// Joining a block whose last turn lies ahead waits for that turn.
	s = RateState{TAT: 2500, N: 1} // last turn 1500
	if turn, next := Turn(s, 1200, r); turn != 1500 || next.N != 2 || next.TAT != 2500 {
		t.Errorf("join: turn %d state %+v, want 1500 {2500 2}", turn, next)
	}
	// A plain GCRA would give the fourth run a turn within the first
	// period; here a full block pushes it to a period after the last.
	s = RateState{TAT: 1400, N: 3}
	if turn, next := Turn(s, 500, r); turn != 1400 || next.N != 1 || next.TAT != 2400 {
		t.Errorf("full block: turn %d state %+v, want 1400 {2400 1}", turn, next)
	}
}

// Whatever the arrivals, no window of a period holds more than Count
// turns; under overload the turns keep up with the rate; every turn is at
// or after its ask.
func TestTurnWindows(t *testing.T) {
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

// The queue view's figures are Turn's: how many could start now, and the
// turn the next would get.
func TestUseAt(t *testing.T) {
	now := time.UnixMilli(1_000_000).UTC()
	ms := func(v int64) time.Time { return time.UnixMilli(v).UTC() }
	r := wire.Rate{Count: 10, PeriodMS: 1000}
	for _, c := range []struct {
		name  string
		rate  wire.Rate
		s     RateState
		avail int
		next  time.Time
	}{
		{"no limit", wire.Rate{}, RateState{}, 0, now},
		{"never used", r, RateState{}, 10, now},
		{"idle (tat passed)", r, RateState{TAT: 900_000, N: 10}, 10, now},
		{"three of the block taken", r, RateState{TAT: 1_000_900, N: 3}, 7, now},
		{"block full", r, RateState{TAT: 1_000_900, N: 10}, 0, ms(1_000_900)},
		{"block's last turn ahead", r, RateState{TAT: 1_001_550, N: 4}, 0, ms(1_000_550)},
		{"one per minute, just taken", wire.Rate{Count: 1, PeriodMS: 60_000}, RateState{TAT: 1_060_000, N: 1}, 0, ms(1_060_000)},
	} {
		got := UseAt(c.rate, c.s, now)
		if got.Available != c.avail || !got.NextFreeAt.Equal(c.next) {
			t.Errorf("%s: %+v, want available %d next %v", c.name, got, c.avail, c.next)
		}
	}
}
