package planner

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
)

// Admission: the planner plans no further ahead than the stages after it
// can take (issue #27). Planning is where overload is cheapest to meet: a
// fire not planned yet is nothing but a job's next_fire_at, and one found
// late when it is planned is shed by its job's misfire policy in the
// planning statement itself (fires.go: one SKIPPED row, written once, for
// all the fires of a job a pass skips). A fire
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
// So before each pass the planner asks how far behind those stages are
// (Deps.Pressure): dispatch, by how long the oldest due run has waited in
// the wheel to be published (wheel.Wheel.Lag), and the applier, by how
// long the oldest run event has waited in JETJOB_EVENTS (backlog.Events.Lag).
// Past Config.MaxLag it waits, checking again every admitPoll, and plans
// nothing; then it plans every shard it holds, asking again before each
// how far ahead (admit: less the further behind they are, one interval
// when they fell behind again meanwhile). Waiting delays planning and
// nothing else: it holds no lease, lock or transaction, and what is
// already in the wheel is still fired on time. A pass, once begun, visits
// every shard without waiting, so that a wait delays every shard alike
// (waiting before each shard let a pass take a minute, and a shard's jobs
// waited that long between two visits), and the fires that pass their
// misfire threshold meanwhile are shed, per job, by the next pass: the
// stages after planning see only what they can take, and lag stays bounded
// by the jobs' thresholds. Lateness is judged when a worker can be
// expected to take the fire (admission.wait: dispatch's lag and the
// group's queue), so that a fire that would reach its worker late is shed
// here too.
//
// A worker group is a stage of its own: what its workers cannot take
// waits in JETJOB_TRIGGERS, and a group whose workers are few or slow must
// not stop the planning of every other group. So its lag (the age of its
// oldest trigger no worker has taken, from the backlog sampler) holds back
// only its own jobs: past twice MaxLag (a queue in front of workers drains
// in bursts, each second's aligned fires at once) a pass leaves out the
// group's jobs whose policy sheds late fires (skip, fire_once), and their
// fires that pass the threshold meanwhile are shed at planning like the
// others'. fire_all jobs are planned all the same: their policy runs every
// fire however late, and their triggers wait in the stream as they always
// did. A group without live workers is not reported (scheduler/wiring.go):
// it is away, not slow, and its triggers wait for its workers' return,
// when fire_once runs the newest of them.

// Pressure is how far the stages after planning are behind, as
// Deps.Pressure reports it.
type Pressure struct {
	// Dispatch is how long the oldest due run has waited to be published
	// (wheel.Wheel.Lag).
	Dispatch time.Duration
	// Results is how long the oldest run event not yet applied has waited
	// (backlog.Events.Lag); 0 while that is not known.
	Results time.Duration
	// Groups is, per worker group with triggers no worker has taken yet,
	// how long the oldest of them has waited (backlog.Group.OldestPending);
	// nil while that is not known.
	Groups map[string]time.Duration
}

// Lag is how far the stages every fire goes through are behind: the
// larger of Dispatch and Results.
func (p Pressure) Lag() time.Duration { return max(p.Dispatch, p.Results) }

// admission is what admit decides for a shard's pass: how far ahead to
// plan, the groups whose jobs wait (sorted), and the pressure it was
// decided on.
type admission struct {
	ahead    time.Duration
	behind   []string
	pressure Pressure
}

// wait is how long a trigger of group published now is expected to wait
// before a worker takes it: dispatch's lag, then the group's queue (its
// oldest pending trigger's wait so far). A fire that will be late by then
// is shed at planning (planJob).
func (a admission) wait(group string) time.Duration {
	return a.pressure.Dispatch + a.pressure.Groups[group]
}

// DefaultMaxLag is Config.MaxLag's default. Dispatch holds a published
// run's TRIGGERED write back (6 s by default) and drops it if the applier
// recorded the run meanwhile; an applier kept within a second of its
// events keeps those writes dropped.
const DefaultMaxLag = time.Second

// admitPoll is how often a waiting planner asks again.
const admitPoll = 100 * time.Millisecond

// admit decides, from the pressure p, whether a pass may begin now (ok),
// and how far ahead a shard is planned and which groups' jobs are left
// out: the whole window while the lag is at most a quarter of maxLag
// (bursts of fires due at one instant come and go within that), then less
// in proportion, down to least, from maxLag on (not ok: a pass waits, one
// under way plans that far). least is the least that still plans each fire
// before it is due: a planning interval past the time the passes take
// (Planner.least). Planning less far ahead when the stages after it fall
// behind keeps what is already planned from carrying on at the offered
// rate for a whole window after they said so. The groups whose oldest
// waiting trigger waited twice maxLag or more are behind.
func admit(p Pressure, window, least, maxLag time.Duration) (a admission, ok bool) {
	a.pressure = p
	for g, wait := range p.Groups {
		if wait >= 2*maxLag {
			a.behind = append(a.behind, g)
		}
	}
	slices.Sort(a.behind)
	least = min(least, window)
	lag := p.Lag()
	if lag >= maxLag {
		a.ahead = least
		return a, false
	}
	if lag <= maxLag/4 {
		a.ahead = window
		return a, true
	}
	// From window at maxLag/4 down to least at maxLag.
	span := maxLag - maxLag/4
	ahead := window - time.Duration(float64(window-least)*float64(lag-maxLag/4)/float64(span))
	a.ahead = max(min(ahead, window), least)
	return a, true
}

// least is the least a pass plans ahead: until the next pass, as far as
// the last one tells (from its start to this one's, its wait and its
// shards included), and a planning interval more; a shard planned less far
// ahead than its next visit would have its jobs' fires planned late, and
// shed as late, by a planner that only works slowly. Never past the
// window.
func (p *Planner) least() time.Duration {
	return min(p.cfg.Window, max(p.cfg.Interval, p.period)+p.cfg.Interval)
}

// await waits, before a pass, until the stages after planning have room
// (admit); false when ctx ended first.
func (p *Planner) await(ctx context.Context) bool {
	if p.pressure == nil {
		return true
	}
	var since time.Time
	for {
		pr := p.pressure(ctx)
		if _, ok := admit(pr, p.cfg.Window, p.least(), p.cfg.MaxLag); ok {
			if !since.IsZero() {
				waited := p.now().Sub(since)
				// A wait of a second or more delays fires: worth an
				// operator's reading (once per wait, not per poll).
				lvl := zap.DebugLevel
				if waited >= time.Second {
					lvl = zap.InfoLevel
				}
				p.log.Log(lvl, "planning resumed after waiting for the stages after it", zap.Duration("waited", waited))
				if p.held != nil {
					p.held(waited)
				}
			}
			return true
		}
		if since.IsZero() {
			since = p.now()
			p.log.Debug("planning waits for the stages after it",
				zap.Duration("dispatch_lag", pr.Dispatch), zap.Duration("results_lag", pr.Results))
			p.signals.Held.Signal(pr)
		}
		if backoff.Sleep(ctx, admitPoll) != nil {
			return false
		}
	}
}

// admission is how a shard of the pass under way is planned: as admit
// says now, never waiting.
func (p *Planner) admission(ctx context.Context) admission {
	if p.pressure == nil {
		return admission{ahead: p.cfg.Window}
	}
	a, _ := admit(p.pressure(ctx), p.cfg.Window, p.least(), p.cfg.MaxLag)
	// Said when the groups left out change, not at every shard: their
	// skip and fire_once jobs' fires are shed while it lasts.
	if !slices.Equal(a.behind, p.behind) {
		p.log.Info("groups whose workers are behind: their skip and fire_once jobs are not planned",
			zap.Strings("groups", a.behind), zap.Strings("before", p.behind))
		p.behind = a.behind
	}
	return a
}
