package results

import (
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

func heldEvent(run int64, kind wire.EventKind, c *carrier) sourcedEvent {
	st := wire.StatusRunning
	if kind == wire.EventFinished {
		st = wire.StatusSucceeded
	}
	return sourcedEvent{Event: wire.Event{Kind: kind, RunID: run, Status: st}, from: source{group: "g"}, carrier: c}
}

func runsOf(evs []sourcedEvent) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.RunID)
	}
	slices.Sort(out)
	return out
}

// A run's lone start waits for its end and goes out with it; a start whose
// run ends in the same batch, and every end, go out at once; a start whose
// run does not end goes out alone when its hold is up.
func TestHeldStartsWaitForTheirEnd(t *testing.T) {
	var h held
	now := time.Unix(1000, 0)
	const hold = 500 * time.Millisecond
	m1, m2, m3 := &carrier{}, &carrier{}, &carrier{}

	out := h.sort([]sourcedEvent{
		heldEvent(1, wire.EventStarted, m1),
		heldEvent(2, wire.EventStarted, m1),
		heldEvent(2, wire.EventFinished, m1),
		heldEvent(3, wire.EventFinished, m1),
	}, now, hold)
	if got := runsOf(out); !slices.Equal(got, []int64{2, 2, 3}) {
		t.Fatalf("first batch applies runs %v, want [2 2 3] (run 1's start held)", got)
	}
	if !m1.fromHeld {
		t.Error("the message of a held start is not marked: it would be acknowledged before the start is applied")
	}
	if d := h.next(now); d != hold {
		t.Errorf("next release in %s, want %s", d, hold)
	}

	out = h.sort([]sourcedEvent{heldEvent(1, wire.EventFinished, m2), heldEvent(4, wire.EventStarted, m2)}, now.Add(100*time.Millisecond), hold)
	if got := runsOf(out); !slices.Equal(got, []int64{1, 1}) {
		t.Fatalf("second batch applies runs %v, want run 1's start and end together", got)
	}

	out = h.sort(nil, now.Add(100*time.Millisecond+hold), hold)
	if got := runsOf(out); !slices.Equal(got, []int64{4}) {
		t.Fatalf("after the hold, applies %v, want run 4's start alone", got)
	}
	if d := h.next(now); d != time.Hour {
		t.Errorf("nothing held, yet next release in %s", d)
	}

	// With holding off, nothing waits.
	out = h.sort([]sourcedEvent{heldEvent(5, wire.EventStarted, m3)}, now, 0)
	if got := runsOf(out); !slices.Equal(got, []int64{5}) {
		t.Fatalf("hold off: applies %v, want [5]", got)
	}
}

// At the stop the messages of held starts are handed back, each once.
func TestHeldMessagesAtStop(t *testing.T) {
	var h held
	now := time.Unix(1000, 0)
	m1, m2 := &carrier{}, &carrier{}
	h.sort([]sourcedEvent{heldEvent(1, wire.EventStarted, m1), heldEvent(2, wire.EventStarted, m1),
		heldEvent(3, wire.EventStarted, m2)}, now, time.Second)
	m2.acked = true // say another batch settled it already
	if got := h.msgs(); len(got) != 1 || !m1.acked {
		t.Fatalf("%d messages handed back, want m1 alone, once", len(got))
	}
	if len(h.byRun) != 0 {
		t.Errorf("%d runs still held after the stop", len(h.byRun))
	}
}
