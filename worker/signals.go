package worker

import (
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/worker/internal/joblock"
	"github.com/jetjob/jetjob/worker/internal/runevents"
)

// testSignals are the worker's key moments, for tests to wait on instead
// of polling (internal/testsignal): inert unless a test calls Init on one
// before the worker runs (init does them all).
type testSignals struct {
	// The lanes (fetch.go, receive.go), each with the lane and the run:
	//
	// admitted: a delivered trigger holds a slot of its lane and is
	// processed (its run id once decoded; 0 if it names none);
	admitted testsignal.Signal[laneRun]
	// slotWaiting: a trigger waits in the lane's queue for a slot (a
	// batch's run beyond its request's slots, a lone trigger behind a
	// batch, a late run judged to run); its run is not known yet;
	slotWaiting testsignal.Signal[laneRun]
	// started: a run's handler is called;
	started testsignal.Signal[laneRun]
	// finished: a delivery's processing has ended: it is settled (acked,
	// handed back or terminated), its run has left the run table, and its
	// slot is free.
	finished testsignal.Signal[laneRun]

	// locks are the job locks' moments (joblock.TestSignals: a run
	// waiting, holding, beating, released, taking its turn under a rate
	// limit).
	locks joblock.TestSignals
	// events are the event publisher's (runevents.TestSignals: a batch
	// stored).
	events runevents.TestSignals

	// abandonedReturned: an abandoned handler returned at last (its run).
	abandonedReturned testsignal.Signal[int64]
	// stopBegun: Run's context ended (or a loop failed for good), and the
	// stages are about to stop.
	stopBegun testsignal.Signal[struct{}]
}

// laneRun is a run in a lane, as the lanes' signals report it.
type laneRun struct {
	lane string
	run  int64
}

// init initialises every signal for tb's test.
func (s *testSignals) init(tb testsignal.TB) {
	for _, sig := range []*testsignal.Signal[laneRun]{&s.admitted, &s.slotWaiting, &s.started, &s.finished} {
		sig.Init(tb)
	}
	s.locks.Init(tb)
	s.events.Init(tb)
	s.abandonedReturned.Init(tb)
	s.stopBegun.Init(tb)
}
