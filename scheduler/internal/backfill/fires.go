// Package backfill runs the past fires of a job's schedule as one
// operation: POST /jobs/{id}/backfill {from, to} records the operation,
// and every scheduler's Runner writes its runs a few at a time, so that a
// year of minutely fires neither floods the broker nor starves the
// scheduled fires of other jobs.
//
// Decisions:
//   - A backfill run's scheduled_at is the fire's actual time (nominal plus
//     the job's jitter, package timing): the handler sees the time it
//     stands for. Its trigger type is backfill, which misfire checks
//     (dispatch, worker) never judge late.
//   - A fire that already has a run (a scheduled one, a SKIPPED one, or an
//     earlier backfill's) is not run again: the runs' unique key holds it,
//     and the operation counts it as existing. To backfill a paused
//     period, resume the job with catch_up none (nothing is recorded for
//     the gap), then backfill it.
//   - Runs are written while the operation runs, at most PerSecond per
//     second and InFlight unfinished at a time; cancelling stops that, ends
//     the written but unpublished runs CANCELLED, and lets published ones
//     finish: the fires not yet written are never created.
//   - The runs take the normal dispatch path, so the worker applies the
//     job's block strategy to overlapping ones.
package backfill

import (
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
)

// DefaultMax is the default and highest number of fires one backfill may
// hold.
const DefaultMax = 10_000

// Fires returns up to n nominal fires of tp in [from, to) after the
// nominal fire cursor (the zero time: from the start of the range), and
// whether the range holds no more after them.
func Fires(tp timing.Plan, from, to, cursor time.Time, n int) (out []time.Time, exhausted bool) {
	t, ok := first(tp, from, cursor)
	for ok && t.Before(to) {
		if len(out) == n {
			return out, false
		}
		out = append(out, t)
		t, ok = tp.Next(t)
	}
	return out, true
}

// Count counts the fires of tp in [from, to), stopping past limit (then
// more is true).
func Count(tp timing.Plan, from, to time.Time, limit int) (n int, more bool) {
	fires, exhausted := Fires(tp, from, to, time.Time{}, limit)
	return len(fires), !exhausted
}

func first(tp timing.Plan, from, cursor time.Time) (time.Time, bool) {
	if !cursor.IsZero() {
		return tp.Next(cursor)
	}
	if tp.Sched.Type() == schedule.FixRate && (tp.Start.IsZero() || !from.Before(tp.Start)) {
		// An interval schedule has no phase of its own: it starts at from.
		if !tp.End.IsZero() && from.After(tp.End) {
			return time.Time{}, false
		}
		return from, true
	}
	return tp.Next(from.Add(-time.Nanosecond))
}
