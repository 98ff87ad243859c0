package worker

import (
	"fmt"
	"time"

	"github.com/jetjob/jetjob/shared/policy"
	"github.com/jetjob/jetjob/shared/wire"
)

// expired decides whether a claimed trigger must not run because it reached
// this worker later than its job's misfire threshold, and if so returns the
// message its EXPIRED result carries. now is when the handler would start;
// lateness is now - ScheduledAt.
//
// How each misfire policy treats a late trigger:
//
//   - skip: the trigger expires, unless its type is manual, retry or parent
//     (a user or a failed run asked for it explicitly, whatever the time).
//   - fire_all, or none given: it runs.
//   - fire_once: it runs, like fire_all. Running only the newest pending
//     trigger of a job needs a view of the whole group's backlog, which a
//     single worker does not have; until the worker gets one, every late
//     fire_once trigger runs.
//
// A threshold of 0 disables the check, and a trigger exactly at its
// threshold is still on time. Policies this build does not know run, so
// that a newer scheduler's policy never silently drops fires.
func expired(trig *wire.Trigger, workerID string, now time.Time) (bool, string) {
	if policy.Misfire(trig.MisfirePolicy) != policy.MisfireSkip || trig.MisfireThresholdMS <= 0 {
		return false, ""
	}
	switch trig.TriggerType {
	case wire.TriggerSchedule, wire.TriggerMisfire:
	default:
		return false, ""
	}
	threshold := time.Duration(trig.MisfireThresholdMS) * time.Millisecond
	late := now.Sub(trig.ScheduledAt)
	if late <= threshold {
		return false, ""
	}
	return true, fmt.Sprintf("trigger reached worker %s %s after its fire time (misfire threshold %s, policy %s): not run",
		workerID, roundLateness(late), threshold, policy.MisfireSkip)
}

// roundLateness keeps a lateness readable: tenths of a second from one
// second on, milliseconds below (a threshold may be that small).
func roundLateness(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
