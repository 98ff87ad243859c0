package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/fakeclock"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

func triggered(id int64, ackedAt time.Time) runs.Mark {
	return runs.Mark{RunID: id, Status: wire.StatusTriggered, Seq: uint64(id), At: ackedAt, ScheduledAt: ackedAt}
}

// A published run's TRIGGERED write waits TriggeredDelay after its ack, so
// that most runs are recorded triggered and ended by their events alone;
// beyond the cap the oldest go at once, and a stopping dispatcher writes
// everything it holds.
func TestReleasableHoldsTriggeredMarksForTheDelay(t *testing.T) {
	held := []runs.Mark{triggered(1, t0), triggered(2, t0.Add(time.Second)), triggered(3, t0.Add(2*time.Second)), triggered(4, t0.Add(3*time.Second))}
	const delay = 2 * time.Second
	for _, c := range []struct {
		now   time.Time
		limit int
		all   bool
		want  int
	}{
		{t0.Add(time.Second), 100, false, 0},
		{t0.Add(2*time.Second - time.Nanosecond), 100, false, 0},
		{t0.Add(2 * time.Second), 100, false, 1}, // held exactly the delay
		{t0.Add(4500 * time.Millisecond), 100, false, 3},
		{t0.Add(time.Hour), 100, false, 4},
		{t0, 3, false, 1},  // one over the cap: the oldest goes now
		{t0, 100, true, 4}, // stopping
	} {
		if got := releasable(held, c.now, delay, c.limit, c.all); got != c.want {
			t.Errorf("at t0+%s (cap %d, all %v): %d released, want %d", c.now.Sub(t0), c.limit, c.all, got, c.want)
		}
	}
	if got := releasable(nil, t0, delay, 100, true); got != 0 {
		t.Errorf("nothing held: %d released", got)
	}
}

// Runs the results applier already recorded triggered (from their
// workers' events) are dropped from the held marks instead of written
// again; a record for a run this dispatcher never held (another scheduler
// published it) is forgotten once older than the forget age, not before.
func TestRecordedRunsAreNotWrittenAgain(t *testing.T) {
	d := newDispatcher(t, Config{})
	clk := fakeclock.New(t0)
	d.now = clk.Now

	d.Recorded([]int64{1, 2})
	clk.Advance(2 * time.Second)
	d.Recorded([]int64{5})
	kept := d.dropRecorded([]runs.Mark{triggered(1, t0), triggered(3, t0)}, 0)
	if got := markIDs(kept); !slices.Equal(got, []int64{3}) {
		t.Errorf("kept %v, want [3]: run 1 was recorded by its events", got)
	}

	const forget = 5 * time.Second
	clk.Advance(3 * time.Second) // run 2 recorded 5s ago, run 5 3s ago
	d.dropRecorded(nil, forget)
	if got := markIDs(d.dropRecorded([]runs.Mark{triggered(2, t0)}, 0)); len(got) != 0 {
		t.Errorf("run 2 written (%v) though recorded exactly the forget age ago", got)
	}
	d.Recorded([]int64{2})
	clk.Advance(2*time.Second + time.Nanosecond) // run 5 recorded 5s+1ns ago
	d.dropRecorded(nil, forget)
	if got := markIDs(d.dropRecorded([]runs.Mark{triggered(5, t0), triggered(2, t0)}, 0)); !slices.Equal(got, []int64{5}) {
		t.Errorf("kept %v, want [5]: its record was forgotten, run 2's (2s old) was not", got)
	}
}

func markIDs(ms []runs.Mark) []int64 {
	out := make([]int64, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.RunID)
	}
	return out
}
