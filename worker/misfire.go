package worker

import (
	"time"

	"github.com/jetjob/jetjob/internal/policy"
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
//     schedulers (superseded, below; package questions asks), who see every
//     run in PostgreSQL.
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

// mayExpire says whether trig, late at now, may end EXPIRED: its policy
// skips late fires, or asks whether a newer fire supersedes it.
func mayExpire(trig *wire.Trigger, now time.Time, workerID string) bool {
	f, ok := lateness(trig, now, workerID)
	if !ok {
		return false
	}
	o := policy.Decide(f).Outcome
	return o == policy.Skip || o == policy.Ask
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
	f := policy.Facts{Stage: policy.AtPickUp, Policy: trig.MisfirePolicy,
		Late: now.Sub(trig.ScheduledAt), Threshold: threshold, Worker: workerID}
	if trig.TriggerType == wire.TriggerMisfire {
		// A catch-up: the missed fire its job's fire_once policy chose to
		// run (the planner made it so, or the schedulers' answer to an
		// earlier question). No newer fire supersedes it, and asking
		// would only be told that it runs (package supersede: a chosen
		// run runs) — a question to PostgreSQL per catch-up, when
		// overload makes the most of them.
		f.Newer = policy.NoNewer
	}
	return f, true
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
	// Without an answer (no scheduler up, PostgreSQL down) the trigger
	// runs: fire_once errs towards running a fire, never towards losing
	// the newest.
	by, answered := w.ask.Superseded(wire.SupersedeQuery{
		RunID: trig.RunID, JobID: trig.JobID, ScheduledAt: trig.ScheduledAt, Cutoff: policy.LateBefore(now, f.Threshold).UTC()})
	if !answered || by <= 0 {
		return false, ""
	}
	f.Newer, f.NewerRun = policy.HasNewer, by
	d := policy.Decide(f)
	return d.Outcome == policy.Superseded, d.Message
}
