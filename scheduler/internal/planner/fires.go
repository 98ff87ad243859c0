package planner

import (
	"fmt"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

// fire is one run to write for a job.
type fire struct {
	at      time.Time
	typ     wire.TriggerType
	status  wire.Status // SCHEDULED, or SKIPPED by the misfire policy
	message string
	// skip is, for a SKIPPED run, the missed fires it stands for: at alone,
	// or a range of them (skipRange).
	skip skipRange
	// params are the run's own params (a template rendered for it), nil
	// for the job's.
	params *string
}

// skipRange is a range of a job's missed fires that one SKIPPED run
// stands for: n of them (at least n when not exact), the first at the
// run's time, the last at last.
type skipRange struct {
	n     int
	exact bool
	last  time.Time
}

// plan is what one pass decides for one job.
type plan struct {
	fires []fire
	// next is the job's new next_fire_at: the first fire after the window,
	// nil when the schedule has no further fire of its own.
	next *time.Time
	// overflow is set when the policy would have run more missed fires
	// than maxCatchup (fire_all): the ones past the cap did not run.
	overflow bool
}

// summaryCountLimit bounds the walk that counts the fires a catch-up
// summary stands for (a year of one-second fires is 31 M steps).
const summaryCountLimit = 100_000

// planJob computes the fires of one job from its next fire up to horizon,
// in nominal times (see package timing). A fire that will be more than the
// threshold late when a worker can take it — now plus wait, how long the
// stages after planning make a trigger published now wait (admit.go; 0
// while they keep up) — is a misfire and follows the policy: shed here,
// in the row planning writes anyway, rather than published to expire at
// the worker after a question to the schedulers and an event.
//
// Past maxCatchup missed fires the walk stops: fire_once runs the newest
// missed fire (found by probing back from the threshold, not by walking),
// and the fires past the cap are counted, not walked. The schedule resumes
// at the threshold.
//
// The missed fires the policy does not run (skip: all; fire_once: all but
// the newest; fire_all: those past the cap) are written as one SKIPPED run
// when they are more than one, at the first of them, whose message says
// how many and which range (skipped): a pass that finds a job minutes
// behind — every scheduler was down, or planning waited for the stages
// after it (admit.go) — writes a row or two for it, not one per second
// missed, so that shedding stays cheap exactly when there is most to shed.
func planJob(tp timing.Plan, next, now, horizon time.Time, wait time.Duration, mp policy.Misfire, threshold time.Duration, maxCatchup int) plan {
	var p plan
	pickUp := now.Add(wait)
	lateBefore := policy.LateBefore(pickUp, threshold)
	t, ok := next, true
	var missed []time.Time
	var summary *fire
	var newest time.Time
	for ok && policy.Late(t, pickUp, threshold) {
		if len(missed) == maxCatchup {
			summary, newest = overflow(tp, t, missed[len(missed)-1], lateBefore, mp, maxCatchup)
			t, ok = tp.Next(lateBefore.Add(-time.Nanosecond))
			break
		}
		missed = append(missed, t)
		t, ok = tp.Next(t)
	}
	if !newest.IsZero() {
		missed = append(missed, newest)
	}
	p.fires = misfires(missed, pickUp, mp)
	if summary != nil {
		// Keep the fires in time order: the summary comes before the
		// newest fire it leaves out.
		at := len(p.fires)
		if !newest.IsZero() {
			at--
		}
		p.fires = append(p.fires[:at], append([]fire{*summary}, p.fires[at:]...)...)
		// Fires past the cap that the policy would have run did not.
		p.overflow = policy.Decide(policy.Facts{Stage: policy.AtPlanning, Policy: mp, Newer: policy.HasNewer}).Outcome == policy.Run
	}
	p.fires = skipped(tp, p.fires, mp)
	st := tp.Sched.Type()
	oneShot := st == schedule.FixDelay || st == schedule.Once
	if oneShot && len(p.fires) > 0 {
		// Its single fire is taken. fix_delay's next comes when that run
		// ends, unless the policy skipped it: then the delay runs from now.
		if st == schedule.FixDelay && p.fires[len(p.fires)-1].status == wire.StatusSkipped {
			if t, ok := tp.Next(now); ok {
				p.next = &t
			}
		}
		return p
	}
	for ok && !t.After(horizon) {
		p.fires = append(p.fires, fire{at: t, typ: wire.TriggerSchedule, status: wire.StatusScheduled})
		if oneShot {
			return p
		}
		t, ok = tp.Next(t)
	}
	if ok {
		p.next = &t
	}
	return p
}

// overflow handles the missed fires past the cap, from first (the first
// not recorded one by one) up to lateBefore: for fire_once the newest of
// them, which runs, and the SKIPPED summary of the others (nil when there
// are none).
func overflow(tp timing.Plan, first, lastRecorded, lateBefore time.Time, mp policy.Misfire, maxCatchup int) (*fire, time.Time) {
	var newest time.Time
	end := lateBefore
	if mp == policy.MisfireFireOnce {
		if n, ok := tp.Newest(lastRecorded, lateBefore); ok {
			newest, end = n, n
		}
	}
	n, exact := tp.Count(lastRecorded, end, summaryCountLimit)
	if n == 0 {
		return nil, newest
	}
	count := fmt.Sprint(n)
	if !exact {
		count = "at least " + count
	}
	last := first
	if n > 1 {
		if l, ok := tp.Newest(lastRecorded, end); ok {
			last = l
		}
	}
	msg := policy.CatchupSummary(count, first, last, maxCatchup, mp, newest)
	return &fire{at: first, typ: wire.TriggerSchedule, status: wire.StatusSkipped, message: msg,
		skip: skipRange{n: n, exact: exact, last: last}}, newest
}

// skipped merges each stretch of consecutive SKIPPED fires of missed (the
// fires misfires and overflow decided, in time order) into one SKIPPED run
// at its first fire, standing for all of them, with a message that says
// how many and which range (policy.SkippedRange, naming the newest missed
// fire when it runs: fire_once's catch-up). A stretch of one keeps its own
// run and message.
func skipped(tp timing.Plan, missed []fire, mp policy.Misfire) []fire {
	var ran time.Time
	if n := len(missed); n > 0 && missed[n-1].status == wire.StatusScheduled {
		ran = tp.At(missed[n-1].at)
	}
	out := missed[:0]
	for i := 0; i < len(missed); {
		f := missed[i]
		j := i + 1
		for f.status == wire.StatusSkipped && j < len(missed) && missed[j].status == wire.StatusSkipped {
			g := missed[j].skip
			f.skip.n += g.n
			f.skip.exact = f.skip.exact && g.exact
			f.skip.last = g.last
			j++
		}
		if j > i+1 {
			count := fmt.Sprint(f.skip.n)
			if !f.skip.exact {
				count = "at least " + count
			}
			f.message = policy.SkippedRange(count, tp.At(f.at), tp.At(f.skip.last), mp, ran)
		}
		out = append(out, f)
		i = j
	}
	return out
}

// misfires turns missed fire times into runs by the misfire policy: under
// fire_once the last of missed is the newest.
func misfires(missed []time.Time, now time.Time, mp policy.Misfire) []fire {
	out := make([]fire, 0, len(missed))
	for i, at := range missed {
		newer := policy.HasNewer
		if i == len(missed)-1 {
			newer = policy.NoNewer
		}
		d := policy.Decide(policy.Facts{Stage: policy.AtPlanning, Policy: mp, Late: now.Sub(at), Newer: newer})
		if d.Outcome == policy.Run {
			out = append(out, fire{at: at, typ: wire.TriggerMisfire, status: wire.StatusScheduled, message: d.Message})
		} else {
			out = append(out, fire{at: at, typ: wire.TriggerSchedule, status: wire.StatusSkipped, message: d.Message,
				skip: skipRange{n: 1, exact: true, last: at}})
		}
	}
	return out
}
