package worker

import (
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/worker/internal/joblock"
)

// runTable is the worker's table of runs: those executing in this process
// (or waiting for their job's lock), and those that finished here lately.
// It is the one place that says whether a run is here; kills, control
// answers, the job locks and the heartbeat ask it through its methods,
// under its own mutex.
type runTable struct {
	mu      sync.Mutex
	active  map[int64]*run      // by run id
	recent  map[int64]time.Time // finished here lately, by run id
	recentQ []recentRun         // recent in finishing order, for expiry
}

type recentRun struct {
	id int64
	at time.Time
}

func newRunTable() *runTable {
	return &runTable{active: make(map[int64]*run), recent: make(map[int64]time.Time)}
}

// claimed is how claim found a run.
type claimed int

const (
	claimedNew      claimed = iota // registered: execute it
	claimedJoined                  // msg joined the execution here
	claimedSettling                // the execution here is settling its deliveries
	claimedFinished                // it finished here lately
)

// claim registers the execution mk makes for run id, unless the table has
// the run already: a delivery msg of a run executing here joins it
// (unless it is settling its deliveries right now), and one of a run
// finished here lately is only reported.
func (t *runTable) claim(id int64, msg jetstream.Msg, mk func() *run) (*run, claimed) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.active[id]; ok {
		if !r.join(msg) {
			return nil, claimedSettling
		}
		return nil, claimedJoined
	}
	if _, ok := t.recent[id]; ok {
		return nil, claimedFinished
	}
	r := mk()
	t.active[id] = r
	return r, claimedNew
}

// remove ends run id's execution; reported says its result was published,
// so a later delivery is acknowledged without running (for ttl).
func (t *runTable) remove(id int64, reported bool, ttl time.Duration) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.active, id)
	if reported {
		t.recent[id] = now
		t.recentQ = append(t.recentQ, recentRun{id, now})
	}
	for len(t.recentQ) > 0 && now.Sub(t.recentQ[0].at) > ttl {
		delete(t.recent, t.recentQ[0].id)
		t.recentQ = t.recentQ[1:]
	}
}

// get returns run id's execution here, nil if none.
func (t *runTable) get(id int64) *run {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active[id]
}

// has reports whether run id executes, or waits for its job's lock, here.
func (t *runTable) has(id int64) bool { return t.get(id) != nil }

// runsJob reports whether a run of job executes, or waits for its job's
// lock, here.
func (t *runTable) runsJob(job int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.active {
		if r.trig.JobID == job {
			return true
		}
	}
	return false
}

// count is how many runs execute here.
func (t *runTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.active)
}

// ids returns the ids of the runs executing here, sorted.
func (t *runTable) ids() []int64 {
	t.mu.Lock()
	ids := make([]int64, 0, len(t.active))
	for id := range t.active {
		ids = append(ids, id)
	}
	t.mu.Unlock()
	slices.Sort(ids)
	return ids
}

// answers are the worker's answers to control requests (package control).
type answers struct {
	runs  *runTable
	locks *joblock.Locks
}

func (a answers) RunsJob(job int64) bool { return a.runs.runsJob(job) }

func (a answers) RunActive(job int64, lock string, run int64) bool {
	// The locks are asked first: a run here that reuses the lock
	// afterwards writes the key (joblock.Locks.Asked).
	holds := a.locks.Asked(job, lock, run)
	return holds || a.runs.has(run)
}
