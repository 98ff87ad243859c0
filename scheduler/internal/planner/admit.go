package planner

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
)

// Admission: the planner plans no further ahead than the stages after it
// can take (issue #27). Planning is where overload is cheapest to meet: a
// fire not planned yet is nothing but a job's next_fire_at, and one found
// late when it is planned is shed by its job's misfire policy in the
// planning statement itself (fires.go: a SKIPPED row, written once). A fire
// planned beyond what dispatch can publish or the results applier can
// record costs far more: its SCHEDULED row, then a SKIPPED update when
// dispatch finds it late, or a trigger, a worker's judgement, a question
// to the schedulers and an EXPIRED event when a worker does; meanwhile the
// wheel holds it in memory, and dispatch's deferred TRIGGERED writes (the
// runs whose events were not applied in time) add an update per run to a
// PostgreSQL that is already the bottleneck. Past the edge that fed itself
// (a scheduler at 20,000 fires/s on two cores planned 15,000/s, published
// 10,000/s, succeeded 8,000/s, shed the rest after planning it and grew to
// 1.1 GB).
//
// So before each shard's pass the planner asks how far behind those stages
// are (Deps.Pressure): dispatch, by how long the oldest due run has waited
// in the wheel to be published (wheel.Wheel.Lag), and the applier, by how
// long the oldest run event has waited in JETJOB_EVENTS (results.Lag).
// Past Config.MaxLag it waits, checking again every admitPoll, and plans
// nothing; below it, it plans ahead less the further behind they are
// (admit). Waiting delays planning and nothing else: it holds no lease,
// lock or transaction, and what is already in the wheel is still fired on
// time. Every pass still visits every shard it holds, in the same order,
// so a wait delays all of them alike, and the fires that pass their
// misfire threshold meanwhile are shed, per job, by the pass that reaches
// them: the stages after planning see only what they can take, and lag
// stays bounded by the jobs' thresholds.
//
// What a worker group cannot take (its workers too few, or gone) is not
// measured: a group's triggers wait in JETJOB_TRIGGERS, durably, and a
// group without workers must not stop the planning of every other group;
// its late triggers meet their misfire policy at the worker, as before.

// Pressure is how far the stages after planning are behind, as
// Deps.Pressure reports it.
type Pressure struct {
	// Dispatch is how long the oldest due run has waited to be published
	// (wheel.Wheel.Lag).
	Dispatch time.Duration
	// Results is how long the oldest run event not yet applied has waited
	// (results.Lag); 0 while that is not known.
	Results time.Duration
}

// Lag is the larger of the two.
func (p Pressure) Lag() time.Duration { return max(p.Dispatch, p.Results) }

// DefaultMaxLag is Config.MaxLag's default. Dispatch holds a published
// run's TRIGGERED write back 2 s and drops it if the applier recorded the
// run meanwhile; an applier kept within a second of its events keeps most
// of those writes dropped (a run's events come a few hundred milliseconds
// after its publish).
const DefaultMaxLag = time.Second

// admitPoll is how often a waiting planner asks again.
const admitPoll = 100 * time.Millisecond

// admit decides, from the pressure p, whether a shard may be planned now
// and how far ahead: the whole window while the lag is at most a quarter
// of maxLag (bursts of fires due at one instant come and go within that),
// then less in proportion, down to interval, the least that still plans
// each fire before it is due; from maxLag on, not now. Planning less far
// ahead when the stages after it fall behind keeps what is already planned
// from carrying on at the offered rate for a whole window after they said
// so.
func admit(p Pressure, window, interval, maxLag time.Duration) (ahead time.Duration, ok bool) {
	lag := p.Lag()
	switch {
	case lag >= maxLag:
		return 0, false
	case lag <= maxLag/4:
		return window, true
	}
	// From window at maxLag/4 down to interval at maxLag.
	span := maxLag - maxLag/4
	ahead = window - time.Duration(float64(window-interval)*float64(lag-maxLag/4)/float64(span))
	return max(min(ahead, window), min(interval, window)), true
}

// admitted waits until the stages after planning have room (admit) and
// returns how far ahead to plan; false when ctx ended first.
func (p *Planner) admitted(ctx context.Context) (time.Duration, bool) {
	if p.pressure == nil {
		return p.cfg.Window, true
	}
	var since time.Time
	for {
		pr := p.pressure(ctx)
		if ahead, ok := admit(pr, p.cfg.Window, p.cfg.Interval, p.cfg.MaxLag); ok {
			if !since.IsZero() {
				waited := p.now().Sub(since)
				p.log.Debug("planning resumed", zap.Duration("waited", waited), zap.Duration("ahead", ahead))
				if p.held != nil {
					p.held(waited)
				}
			}
			return ahead, true
		}
		if since.IsZero() {
			since = p.now()
			p.log.Debug("planning waits for the stages after it",
				zap.Duration("dispatch_lag", pr.Dispatch), zap.Duration("results_lag", pr.Results))
			p.signals.Held.Signal(pr)
		}
		if backoff.Sleep(ctx, admitPoll) != nil {
			return 0, false
		}
	}
}
