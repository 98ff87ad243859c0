package scheduler

import (
	"testing"

	"github.com/jetjob/jetjob/internal/supervise"
)

// Crash stops the scheduler as if its process had died: its leases are not
// released (they expire after the TTL), in-flight publishes are not
// drained. Run returns once everything stopped.
func (s *Scheduler) Crash() {
	s.mu.Lock()
	lm, cancel := s.leases, s.cancel
	s.mu.Unlock()
	s.crashed.Store(true)
	if lm != nil {
		lm.Abandon()
	}
	if cancel != nil {
		cancel()
	}
}

// OwnedShards is the number of shards this scheduler holds a valid lease on.
func (s *Scheduler) OwnedShards() int {
	s.mu.Lock()
	lm := s.leases
	s.mu.Unlock()
	if lm == nil {
		return 0
	}
	return len(lm.Held())
}

// TestSignals are a scheduler's components' test signals (package
// internal/testsignal): leases changed, a shard planned, a dispatch batch
// written, a results batch applied.
type TestSignals = testSignals

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testing.TB) {
	ts.Lease.Init(tb)
	ts.Planner.Init(tb)
	ts.Dispatch.Init(tb)
	ts.Results.Init(tb)
	ts.Supervise.Init(tb)
}

// SetTestSignals makes s's components signal into ts (initialised with
// Init). Call it before Run. Several schedulers may share one TestSignals:
// a test then watches the cluster as one (lease.Change names its owner).
func (s *Scheduler) SetTestSignals(ts *TestSignals) {
	s.testSignals = *ts
	if err := s.supervise(s.superviseCfg); err != nil {
		panic(err)
	}
}

// SetSupervision makes s restart its failed components with cfg's
// backoffs (tests: milliseconds). Call it before Run.
func (s *Scheduler) SetSupervision(cfg supervise.Config) error {
	s.superviseCfg = cfg
	return s.supervise(cfg)
}

// SetTestFault makes every start of a component (the first and each
// restart) fail with fault(component) when that is not nil, before the
// component runs. Call it before Run.
func (s *Scheduler) SetTestFault(fault func(component string) error) { s.testFault = fault }

// KnowsPaused says whether the scheduler's copy of the groups that are not
// active (read on their changes' notifications) has group: a pause made
// through the API reaches dispatch once it does.
func (s *Scheduler) KnowsPaused(group string) bool {
	_, ok := s.pausedGroups()[group]
	return ok
}
