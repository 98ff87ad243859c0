package worker

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"

	"github.com/jetjob/jetjob/shared/policy"
	"github.com/jetjob/jetjob/shared/wire"
)

// expired decides whether a claimed trigger must not run because it reached
// this worker later than its job's misfire threshold, and if so returns the
// message its EXPIRED result carries. now is when the handler would start;
// lateness is now - ScheduledAt.
//
// How each misfire policy treats a late trigger (policy.Decide, stage
// policy.AtPickUp):
//
//   - skip: the trigger expires, unless its type is manual, retry or parent
//     (a user or a failed run asked for it explicitly, whatever the time).
//   - fire_all, or none given: it runs.
//   - fire_once: it runs unless a newer fire of the same job was already
//     published; a worker cannot see the group's backlog, so it asks the
//     schedulers (superseded, below), who see every run in PostgreSQL.
//
// A threshold of 0 disables the check, and a trigger exactly at its
// threshold is still on time (policy.Late). Policies this build does not
// know run, so that a newer scheduler's policy never silently drops fires.
func expired(trig *wire.Trigger, workerID string, now time.Time) (bool, string) {
	f, ok := lateness(trig, now, workerID)
	if !ok {
		return false, ""
	}
	d := policy.Decide(f)
	return d.Outcome == policy.Skip, d.Message
}

// lateness returns the facts of a trigger late at now, and whether it is
// late. Manual, retry and parent triggers are never late: someone asked for
// them, whatever the time.
func lateness(trig *wire.Trigger, now time.Time, workerID string) (policy.Facts, bool) {
	switch trig.TriggerType {
	case wire.TriggerSchedule, wire.TriggerMisfire:
	default:
		return policy.Facts{}, false
	}
	threshold := time.Duration(trig.MisfireThresholdMS) * time.Millisecond
	if !policy.Late(trig.ScheduledAt, now, threshold) {
		return policy.Facts{}, false
	}
	return policy.Facts{Stage: policy.AtPickUp, Policy: trig.MisfirePolicy,
		Late: now.Sub(trig.ScheduledAt), Threshold: threshold, Worker: workerID}, true
}

// supersedeTimeout bounds the question to the schedulers. Without an
// answer (no scheduler up, PostgreSQL down) the trigger runs: fire_once
// errs towards running a fire, never towards losing the newest.
const supersedeTimeout = 2 * time.Second

// maxSupersedeAsks bounds the requests on their way at once.
const maxSupersedeAsks = 4

// supersedeAsk is one query waiting for its answer: the newer run, 0 for
// none, -1 for no answer.
type supersedeAsk struct {
	q   wire.SupersedeQuery
	res chan int64
}

// newSuperseder returns the group commit of w's supersede queries: a
// replayed backlog of late fire_once triggers is asked about in a few
// requests, not one per trigger.
func (w *Worker) newSuperseder() *groupCommit[*supersedeAsk] {
	return newGroupCommit(wire.MaxSupersedeQueries, maxSupersedeAsks, func(batch []*supersedeAsk) {
		by := w.askSupersede(batch)
		for i, a := range batch {
			a.res <- by[i]
		}
	}, func(a *supersedeAsk) { a.res <- -1 })
}

// askSupersede sends one request for batch and returns an answer per
// query (-1 where there is none).
func (w *Worker) askSupersede(batch []*supersedeAsk) []int64 {
	out := make([]int64, len(batch))
	for i := range out {
		out[i] = -1
	}
	req := wire.SupersedeRequest{Queries: make([]wire.SupersedeQuery, len(batch))}
	for i, a := range batch {
		req.Queries[i] = a.q
	}
	var reply wire.SupersedeReply
	err := w.askSchedulers(stream.Supersede, &req, &reply, supersedeTimeout)
	if err == nil && len(reply.By) != len(batch) {
		err = fmt.Errorf("%d answers for %d queries", len(reply.By), len(batch))
	}
	if err != nil {
		w.log.Warn("schedulers did not say whether late fire_once triggers are superseded; running them",
			zap.Int("triggers", len(batch)), zap.Error(err))
		return out
	}
	return reply.By
}

// superseded applies fire_once to a late trigger: when a newer missed fire
// of the same job has already been published, only that one runs and this
// one ends EXPIRED with the returned message. This is what makes a backlog
// replayed after a worker outage run once per job, not once per missed fire.
func (w *Worker) superseded(trig *wire.Trigger) (bool, string) {
	now := time.Now()
	f, ok := lateness(trig, now, w.cfg.ID)
	if !ok || policy.Decide(f).Outcome != policy.Ask {
		return false, ""
	}
	// Only a newer fire that is itself missed (late) supersedes this one:
	// the newest missed fire is the catch-up, and on-time fires run.
	a := &supersedeAsk{res: make(chan int64, 1), q: wire.SupersedeQuery{
		RunID: trig.RunID, JobID: trig.JobID, ScheduledAt: trig.ScheduledAt, Cutoff: policy.LateBefore(now, f.Threshold).UTC()}}
	by, answered := await(w.supersede, a, a.res)
	if !answered || by <= 0 {
		return false, ""
	}
	f.Newer, f.NewerRun = policy.HasNewer, by
	d := policy.Decide(f)
	return d.Outcome == policy.Superseded, d.Message
}
