package wheel

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/fakeclock"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// plannedRun is what the wheel holds (the only mention of its type in
// these tests).
type plannedRun = runs.Planned

func planned(id, job int64, at time.Time) plannedRun {
	return plannedRun{RunID: id, JobID: job, ScheduledAt: at}
}

func ids(runs []plannedRun) []int64 {
	out := make([]int64, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.RunID)
	}
	return out
}

// newWheel returns a wheel on a fake clock standing at t0 whose batches
// arrive on the returned channel; each fire waits for a receive from
// proceed when proceed is not nil (a dispatcher that is slow to publish).
func newWheel(ready func(context.Context) bool, proceed chan struct{}) (*Wheel, *fakeclock.Clock, chan []int64) {
	clk := fakeclock.New(t0)
	batches := make(chan []int64, 16)
	w := New(func(ctx context.Context, runs []plannedRun) {
		batches <- ids(runs)
		if proceed != nil {
			select {
			case <-proceed:
			case <-ctx.Done():
			}
		}
	}, ready)
	w.now = clk.Now
	return w, clk, batches
}

func run(t *testing.T, w *Wheel) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
}

func next(t *testing.T, batches chan []int64, what string) []int64 {
	t.Helper()
	select {
	case b := <-batches:
		return b
	case <-time.After(10 * time.Second):
		t.Fatalf("no batch within 10s: want %s", what)
		return nil
	}
}

// Runs planted in any order come out in fire order, each at its own
// millisecond: a run is due at its time (not a tick later), one a
// millisecond later waits that millisecond, and everything due comes out
// at once, however late the wheel looks.
func TestDueInFireOrderToTheMillisecond(t *testing.T) {
	w, clk, _ := newWheel(nil, nil)
	w.Add(planned(3, 1, t0.Add(3*time.Second)), planned(1, 1, t0.Add(time.Second)),
		planned(5, 2, t0.Add(3*time.Second+time.Millisecond)), planned(2, 2, t0.Add(2*time.Second)))
	w.Add(planned(4, 3, t0.Add(10*time.Second)))

	if due, wait := w.due(); len(due) != 0 || wait != time.Second {
		t.Fatalf("at t0: due %v, wait %s; want nothing due and a wait of 1s", ids(due), wait)
	}
	clk.Advance(3 * time.Second)
	due, wait := w.due()
	if got := ids(due); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("at t0+3s: due %v, want [1 2 3] (in fire order, the run at exactly t0+3s included)", got)
	}
	if wait != time.Hour {
		t.Errorf("wait after a batch = %s, want the idle hour (the loop comes back at once)", wait)
	}
	if due, wait := w.due(); len(due) != 0 || wait != time.Millisecond {
		t.Errorf("at t0+3s, after the batch: due %v, wait %s; want run 5 a millisecond later", ids(due), wait)
	}
	clk.Advance(time.Hour)
	if got, _ := w.due(); !slices.Equal(ids(got), []int64{5, 4}) {
		t.Errorf("an hour late: due %v, want [5 4]: nothing skipped", ids(got))
	}
	if w.Len() != 0 {
		t.Errorf("Len = %d after everything fired, want 0", w.Len())
	}
}

// A batch holds at most limit runs; the rest come out in the next one, in
// order.
func TestDueBatchesAtMostLimit(t *testing.T) {
	w, _, _ := newWheel(nil, nil)
	w.limit = 2
	for id := int64(5); id >= 1; id-- {
		w.Add(planned(id, id, t0.Add(-time.Duration(6-id)*time.Second)))
	}
	var got [][]int64
	for w.Len() > 0 {
		due, _ := w.due()
		got = append(got, ids(due))
	}
	want := [][]int64{{1, 2}, {3, 4}, {5}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// The runs of a trigger batch come out one after the other, after the
// lone runs due at the same instant, and a batch is never split between two
// calls of fire: the call that reaches the limit inside a batch takes the
// rest of it (dispatch publishes a batch as one message when it gets it).
func TestDueKeepsBatchesWhole(t *testing.T) {
	w, clk, _ := newWheel(nil, nil)
	w.limit = 2
	inBatch := func(id, batch int64, at time.Time) plannedRun {
		r := planned(id, id, at)
		r.Batch = batch
		return r
	}
	early, late := t0.Add(-time.Second), t0
	w.Add(inBatch(23, 20, early), inBatch(41, 40, late), planned(30, 30, early), inBatch(21, 20, early),
		inBatch(40, 40, late), planned(50, 50, late), inBatch(20, 20, early), planned(10, 10, early), inBatch(22, 20, early))
	w.Add(inBatch(60, 60, t0.Add(time.Second)), inBatch(61, 60, t0.Add(time.Second))) // not yet due
	var got [][]int64
	for {
		due, _ := w.due()
		if len(due) == 0 {
			break
		}
		got = append(got, ids(due))
	}
	want := [][]int64{{10, 30}, {20, 21, 22, 23}, {50, 40, 41}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("calls of fire %v, want %v", got, want)
	}
	clk.Advance(time.Second)
	if due, _ := w.due(); !slices.Equal(ids(due), []int64{60, 61}) {
		t.Errorf("a second later: due %v, want the batch [60 61] whole", ids(due))
	}
}

// A run planted again while it is held (a recovery after a lease change,
// or a planner re-reading its window) stays one run: it fires once. So
// does one planted again while its batch is being handed over.
func TestAddDeduplicatesByRunID(t *testing.T) {
	w, clk, _ := newWheel(nil, nil)
	w.Add(planned(1, 1, t0), planned(2, 1, t0.Add(time.Second)))
	w.Add(planned(1, 1, t0), planned(2, 1, t0.Add(time.Second)), planned(1, 1, t0))
	if w.Len() != 2 {
		t.Fatalf("Len = %d after planting runs 1 and 2 twice, want 2", w.Len())
	}
	clk.Advance(time.Second)
	due, _ := w.due()
	// Handed over but not yet released: the fire callback is running.
	w.Add(due...)
	if w.Len() != 0 {
		t.Errorf("Len = %d: a run planted again while it fires was taken, want it ignored", w.Len())
	}
	w.release(due)
	if got := ids(due); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("fired %v, want [1 2] once each", got)
	}
}

// Remove drops the runs of a job (edited, disabled or deleted) or of a
// shard (its lease lost), says how many, and the rest still fire in order.
func TestRemoveDropsMatchingRunsOnly(t *testing.T) {
	w, clk, _ := newWheel(nil, nil)
	for id := int64(1); id <= 8; id++ {
		w.Add(planned(id, 10+id%2, t0.Add(time.Duration(9-id)*time.Second)))
	}
	if n := w.Remove(func(r *plannedRun) bool { return r.JobID == 11 }); n != 4 {
		t.Errorf("Remove(job 11) = %d, want 4", n)
	}
	if n := w.Remove(func(r *plannedRun) bool { return r.JobID == 99 }); n != 0 {
		t.Errorf("Remove(job 99) = %d, want 0", n)
	}
	held := w.IDs()
	slices.Sort(held)
	if !slices.Equal(held, []int64{2, 4, 6, 8}) {
		t.Errorf("held %v after removing job 11, want [2 4 6 8]", held)
	}
	clk.Advance(time.Minute)
	if due, _ := w.due(); !slices.Equal(ids(due), []int64{8, 6, 4, 2}) {
		t.Errorf("due %v, want job 10's runs in fire order [8 6 4 2]", ids(due))
	}
	// A removed run is forgotten: planted again (re-planned), it is held.
	w.Add(planned(1, 11, t0))
	if w.Len() != 1 {
		t.Errorf("Len = %d after planting a removed run again, want 1", w.Len())
	}
}

// A run planted earlier than everything held wakes the loop at once,
// though its timer is set for the later run an hour away; runs still
// held when Run stops stay held (they are SCHEDULED in PostgreSQL).
func TestRunWakesForAnEarlierRun(t *testing.T) {
	w, clk, batches := newWheel(nil, nil)
	w.Add(planned(1, 1, t0.Add(time.Hour)))
	// The loop reads the clock while it holds the wheel, to find what is
	// due; run 2 can be planted only after that look found nothing due
	// and set the timer an hour out.
	looked := make(chan struct{}, 1)
	w.now = func() time.Time {
		select {
		case looked <- struct{}{}:
		default:
		}
		return clk.Now()
	}
	stop := run(t, w)
	select {
	case <-looked:
	case <-time.After(10 * time.Second):
		t.Fatal("Run never looked for due runs")
	}
	w.Add(planned(2, 1, t0))
	if got := next(t, batches, "run 2, due now"); !slices.Equal(got, []int64{2}) {
		t.Errorf("fired %v, want [2]", got)
	}
	stop()
	if got := w.IDs(); !slices.Equal(got, []int64{1}) {
		t.Errorf("held after stop %v, want [1]", got)
	}
}

// While dispatch is busy with a batch the wheel waits (backpressure, not a
// queue); what falls due meanwhile comes out in the next batch, together
// and in fire order, and the run being fired is not taken again. Once
// handed over, a run is forgotten: planted again (recovered after its
// shard's lease came back), it fires again, and the trigger's Msg-Id
// de-duplicates the publish.
func TestRunWaitsForABusyDispatcher(t *testing.T) {
	proceed := make(chan struct{})
	w, _, batches := newWheel(nil, proceed)
	stop := run(t, w)
	defer stop()
	w.Add(planned(1, 1, t0))
	if got := next(t, batches, "run 1"); !slices.Equal(got, []int64{1}) {
		t.Fatalf("fired %v, want [1]", got)
	}
	w.Add(planned(3, 1, t0.Add(-time.Second)), planned(1, 1, t0), planned(2, 2, t0.Add(-2*time.Second)))
	proceed <- struct{}{}
	if got := next(t, batches, "runs 2 and 3"); !slices.Equal(got, []int64{2, 3}) {
		t.Errorf("next batch %v, want [2 3]: both, in fire order, and run 1 not again", got)
	}
	w.Add(planned(1, 1, t0))
	proceed <- struct{}{}
	if got := next(t, batches, "run 1, planted again after it fired"); !slices.Equal(got, []int64{1}) {
		t.Errorf("next batch %v, want [1]", got)
	}
	proceed <- struct{}{}
}

// While ready blocks (NATS disconnected) nothing fires; the runs that fell
// due meanwhile then come out in one batch, so that dispatch's misfire
// policy sees every missed fire of a job at once. When ready gives up (the
// connection is closed) Run returns without firing.
func TestRunHoldsRunsUntilReady(t *testing.T) {
	connected := make(chan bool)
	w, _, batches := newWheel(func(ctx context.Context) bool {
		select {
		case ok := <-connected:
			return ok
		case <-ctx.Done():
			return false
		}
	}, nil)
	w.Add(planned(1, 1, t0.Add(-3*time.Second)), planned(2, 1, t0.Add(-2*time.Second)), planned(3, 1, t0))
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	connected <- true
	if got := next(t, batches, "the runs held while disconnected"); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("first batch %v, want [1 2 3] together", got)
	}
	w.Add(planned(4, 1, t0))
	connected <- false
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when ready gave up")
	}
	select {
	case b := <-batches:
		t.Errorf("fired %v after ready gave up", b)
	default:
	}
	if w.Len() != 1 {
		t.Errorf("Len = %d, want run 4 still held", w.Len())
	}
}

// Lag is how long the oldest due run has waited to be published: held in
// the heap, or handed to a dispatcher that has not returned yet. Runs not
// yet due count for nothing, and once everything due is handed over and
// the dispatcher returned, the lag is 0 again.
func TestLagIsTheOldestWaitingRun(t *testing.T) {
	proceed := make(chan struct{})
	w, clk, batches := newWheel(nil, proceed)
	w.Add(planned(1, 1, t0.Add(time.Second)), planned(9, 9, t0.Add(time.Hour)))
	if lag := w.Lag(); lag != 0 {
		t.Errorf("Lag with nothing due = %s, want 0", lag)
	}
	clk.Advance(3 * time.Second) // run 1 is due 2 s ago; nothing fires yet
	if lag := w.Lag(); lag != 2*time.Second {
		t.Errorf("Lag with run 1 due and held = %s, want 2s", lag)
	}
	stop := run(t, w)
	defer stop()
	if got := next(t, batches, "run 1"); !slices.Equal(got, []int64{1}) {
		t.Fatalf("fired %v, want [1]", got)
	}
	// The dispatcher holds run 1 (it has not returned): it still waits.
	w.Add(planned(2, 2, t0.Add(2*time.Second)))
	if lag := w.Lag(); lag != 2*time.Second {
		t.Errorf("Lag with run 1 handed over, not returned = %s, want 2s", lag)
	}
	proceed <- struct{}{}
	if got := next(t, batches, "run 2"); !slices.Equal(got, []int64{2}) {
		t.Fatalf("fired %v, want [2]", got)
	}
	if lag := w.Lag(); lag != time.Second {
		t.Errorf("Lag with run 2 handed over = %s, want 1s", lag)
	}
	proceed <- struct{}{}
	testwait.Eventually(t, 10*time.Second, "the lag back to 0 once the dispatcher returned", func() bool { return w.Lag() == 0 })
}
