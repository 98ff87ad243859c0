package policy

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// This file is the one home of the misfire policy: what "late" means
// (Late), what each policy does with a late fire (Decide) and the message
// texts written into the runs it does not run. Three places find late
// fires, and each asks Decide, naming itself as the Stage:
//
//   - AtPlanning, the planner (scheduler/internal/planner/fires.go), for fires never
//     planned (every scheduler was down, a job re-enabled);
//   - AtPublishing, dispatch (scheduler/internal/dispatch, misfired), for planned
//     runs it publishes late (NATS was down);
//   - AtPickUp, the worker (worker/misfire.go), for triggers that reach it
//     late.
//
// A fourth, the schedulers' supersede service (scheduler/internal/supersede),
// decides nothing here: it answers the worker's question (Outcome Ask)
// whether a newer missed fire of a late fire_once trigger's job runs
// instead, and the worker decides again with the answer.
//
// Which fires each place judges (trigger types, recovered runs) is the
// caller's, as is the status a fire not run ends with (SKIPPED by the
// scheduler, EXPIRED by a worker).

// Late reports whether a fire scheduled at scheduledAt is late at now: more
// than threshold after its time. A fire exactly threshold after its time is
// still on time. A threshold of 0 or less disables the check: no fire is
// late.
func Late(scheduledAt, now time.Time, threshold time.Duration) bool {
	return threshold > 0 && scheduledAt.Before(LateBefore(now, threshold))
}

// LateBefore is the cutoff of Late: with a positive threshold, a fire
// scheduled before LateBefore(now, threshold) is late at now, one at or
// after it is on time.
func LateBefore(now time.Time, threshold time.Duration) time.Time {
	return now.Add(-threshold)
}

// Stage is where a late fire is found; it chooses the message texts, and
// what fire_once can know about newer fires.
type Stage int

const (
	// AtPlanning: the planner finds fires that were never planned; the
	// ones it runs become trigger type misfire.
	AtPlanning Stage = iota
	// AtPublishing: dispatch is about to publish planned runs late.
	AtPublishing
	// AtPickUp: a worker picked up a late trigger.
	AtPickUp
)

// Newer says what is known of a newer missed fire of the same job, which
// under fire_once runs instead of this one.
type Newer int

const (
	// NewerUnknown: not known yet (a worker must ask the schedulers).
	NewerUnknown Newer = iota
	// NoNewer: this is the job's newest missed fire.
	NoNewer
	// HasNewer: a newer missed fire runs instead.
	HasNewer
)

// Outcome is what happens to a late fire.
type Outcome int

const (
	// Run: the fire runs, however late.
	Run Outcome = iota
	// Skip: the fire does not run (policy skip).
	Skip
	// Superseded: the fire does not run; a newer missed fire of the job
	// runs instead (policy fire_once).
	Superseded
	// Ask: fire_once, but whether a newer missed fire runs is not known;
	// ask (scheduler/internal/supersede), then Decide again with the answer.
	Ask
)

// Facts describe one late fire for Decide.
type Facts struct {
	Stage  Stage
	Policy Misfire
	// Late is how late the fire is (now - its time).
	Late time.Duration
	// Threshold is the misfire threshold it was judged by.
	Threshold time.Duration
	Newer     Newer
	// NewerRun is the newer run that runs instead (AtPickUp, HasNewer).
	NewerRun int64
	// Worker is the worker that picked the trigger up (AtPickUp).
	Worker string
}

// Decision is Decide's answer: the outcome and, for a fire that does not
// run (or one the planner runs as a catch-up), the run's message.
type Decision struct {
	Outcome Outcome
	Message string
}

// Decide applies the misfire policy to a late fire (see Late):
//
//   - skip: the fire does not run;
//   - fire_once: only the job's newest missed fire runs; the others are
//     Superseded (Ask while that is not known);
//   - fire_all: it runs.
//
// Policies this build does not know run, so that a newer scheduler's
// policy never silently drops fires.
func Decide(f Facts) Decision {
	switch f.Policy {
	case MisfireSkip:
		return Decision{Outcome: Skip, Message: f.message(Skip)}
	case MisfireFireOnce:
		switch f.Newer {
		case NewerUnknown:
			return Decision{Outcome: Ask}
		case HasNewer:
			return Decision{Outcome: Superseded, Message: f.message(Superseded)}
		}
	}
	return Decision{Outcome: Run, Message: f.message(Run)}
}

// message is the text of outcome o at f's stage ("" where none is written).
func (f Facts) message(o Outcome) string {
	switch f.Stage {
	case AtPlanning, AtPublishing:
		var what string
		switch {
		case o == Run && f.Stage == AtPlanning:
			what = "fired now"
		case o == Skip:
			what = "skipped"
		case o == Superseded:
			what = "skipped: a later missed fire ran instead"
		default:
			return ""
		}
		when := ""
		if f.Stage == AtPublishing {
			when = " when it could be published"
		}
		return fmt.Sprintf("misfire: late by %s%s, %s (misfire policy %s)", f.Late.Round(time.Millisecond), when, what, f.Policy)
	case AtPickUp:
		switch o {
		case Skip:
			return fmt.Sprintf("trigger reached worker %s %s after its fire time (misfire threshold %s, policy %s): not run",
				f.Worker, roundLateness(f.Late), f.Threshold, f.Policy)
		case Superseded:
			return fmt.Sprintf("trigger reached worker %s %s after its fire time (misfire threshold %s, policy %s): not run, run %d of the job runs instead",
				f.Worker, roundLateness(f.Late), f.Threshold, f.Policy, f.NewerRun)
		}
	}
	return ""
}

// CatchupSummary is the message of the SKIPPED run that stands for the
// missed fires past max_catchup the planner does not record one by one:
// count of them (a number, or "at least N") from first to last; newest, when
// not zero, is the newest missed fire, which ran instead (fire_once).
func CatchupSummary(count string, first, last time.Time, maxCatchup int, mp Misfire, newest time.Time) string {
	msg := fmt.Sprintf("misfire: %s more missed fires from %s to %s, past max_catchup %d, not recorded one by one: skipped (misfire policy %s)",
		count, first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339), maxCatchup, mp)
	if !newest.IsZero() {
		msg += fmt.Sprintf("; the newest missed fire, %s, ran instead", newest.UTC().Format(time.RFC3339))
	}
	return msg
}

// SkippedRange is the message of the SKIPPED run that stands for several
// missed fires of a job the planner does not run, recorded as one run (see
// ParseSkipped): count of them (a number, or "at least N") from first to
// last, by policy mp; ran, when not zero, is the newest missed fire, which
// runs instead (fire_once). Times to the nanosecond, so that the fires a
// run stands for can be told from its message alone.
func SkippedRange(count string, first, last time.Time, mp Misfire, ran time.Time) string {
	msg := fmt.Sprintf("misfire: %s missed fires from %s to %s, skipped (misfire policy %s)",
		count, first.UTC().Format(time.RFC3339Nano), last.UTC().Format(time.RFC3339Nano), mp)
	if !ran.IsZero() {
		msg += fmt.Sprintf("; the newest missed fire, %s, runs instead", ran.UTC().Format(time.RFC3339Nano))
	}
	return msg
}

// skippedRE matches the messages of SkippedRange and CatchupSummary: the
// count, the first and the last fire.
var skippedRE = regexp.MustCompile(`^misfire: (at least )?([0-9]+) (?:more )?missed fires from (\S+) to (\S+?),? `)

// ParseSkipped reads, from a SKIPPED run's message, the missed fires the
// run stands for when it stands for more than its own (SkippedRange, or a
// max_catchup summary, CatchupSummary): how many (at least, when exact is
// false), the first and the last. ok is false for any other message.
func ParseSkipped(msg string) (n int, exact bool, first, last time.Time, ok bool) {
	m := skippedRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, false, time.Time{}, time.Time{}, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return 0, false, time.Time{}, time.Time{}, false
	}
	if first, err = time.Parse(time.RFC3339Nano, m[3]); err != nil {
		return 0, false, time.Time{}, time.Time{}, false
	}
	if last, err = time.Parse(time.RFC3339Nano, m[4]); err != nil {
		return 0, false, time.Time{}, time.Time{}, false
	}
	return n, m[1] == "", first, last, true
}

// roundLateness keeps a lateness readable: tenths of a second from one
// second on, milliseconds below (a threshold may be that small).
func roundLateness(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
