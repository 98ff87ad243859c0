package worker

import "github.com/jetjob/jetjob/internal/testsignal"

// testSignals are the worker's key moments, for tests to wait on instead
// of polling (internal/testsignal): inert unless a test calls Init on one
// before the worker runs.
type testSignals struct {
	// lockWaiting: a run (its id) found its job's lock held and waits for
	// it (block strategy serial, or a capped concurrent job's slots).
	lockWaiting testsignal.Signal[int64]
	// stopBegun: Run's context ended (or a loop failed for good), and the
	// stages are about to stop.
	stopBegun testsignal.Signal[struct{}]
}
