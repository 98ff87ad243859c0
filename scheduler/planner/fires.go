package planner

import (
	"fmt"
	"time"

	"github.com/jetjob/jetjob/shared/policy"
	"github.com/jetjob/jetjob/shared/schedule"
	"github.com/jetjob/jetjob/shared/wire"
)

// fire is one run to write for a job.
type fire struct {
	at      time.Time
	typ     wire.TriggerType
	status  wire.Status // SCHEDULED, or SKIPPED by the misfire policy
	message string
}

// plan is what one pass decides for one job.
type plan struct {
	fires []fire
	// next is the job's new next_fire_at: the first fire after the window,
	// nil when the schedule has no further fire of its own.
	next *time.Time
	// overflow is set when more fires were missed than maxCatchup; the
	// ones past the cap are not recorded (logged instead).
	overflow bool
}

// planJob computes the fires of one job from its next fire up to horizon.
// Fires before now-threshold are misfires and follow the policy.
func planJob(s *schedule.Schedule, next, now, horizon time.Time, mp policy.Misfire, threshold time.Duration, maxCatchup int) plan {
	var p plan
	lateBefore := now.Add(-threshold)
	t, ok := next, true
	var missed []time.Time
	for ok && t.Before(lateBefore) {
		if len(missed) == maxCatchup {
			// Past the cap: resume the schedule from the threshold instead
			// of walking, e.g., a year of one-second fires.
			p.overflow = true
			t, ok = s.Next(lateBefore.Add(-time.Nanosecond))
			break
		}
		missed = append(missed, t)
		t, ok = s.Next(t)
	}
	p.fires = misfires(missed, now, mp)
	oneShot := s.Type() == schedule.FixDelay || s.Type() == schedule.Once
	if oneShot && len(p.fires) > 0 {
		// Its single fire is taken. fix_delay's next comes when that run
		// ends, unless the policy skipped it: then the delay runs from now.
		if s.Type() == schedule.FixDelay && p.fires[len(p.fires)-1].status == wire.StatusSkipped {
			if t, ok := s.Next(now); ok {
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
		t, ok = s.Next(t)
	}
	if ok {
		p.next = &t
	}
	return p
}

// misfires turns missed fire times into runs by the misfire policy.
func misfires(missed []time.Time, now time.Time, mp policy.Misfire) []fire {
	out := make([]fire, 0, len(missed))
	for i, at := range missed {
		late := now.Sub(at).Round(time.Millisecond)
		switch {
		case mp == policy.MisfireFireAll,
			mp == policy.MisfireFireOnce && i == len(missed)-1:
			out = append(out, fire{at: at, typ: wire.TriggerMisfire, status: wire.StatusScheduled,
				message: fmt.Sprintf("misfire: late by %s, fired now (misfire policy %s)", late, mp)})
		case mp == policy.MisfireFireOnce:
			out = append(out, fire{at: at, typ: wire.TriggerSchedule, status: wire.StatusSkipped,
				message: fmt.Sprintf("misfire: late by %s, skipped: a later missed fire ran instead (misfire policy fire_once)", late)})
		default:
			out = append(out, fire{at: at, typ: wire.TriggerSchedule, status: wire.StatusSkipped,
				message: fmt.Sprintf("misfire: late by %s, skipped (misfire policy skip)", late)})
		}
	}
	return out
}
