// Package timing computes the fire times of one job: its schedule, bounded
// by the job's start_at and end_at, each fire offset by the job's jitter.
//
// The planner (what fires), a new job's first fire, the next-fires preview
// (GET /jobs/{id}/next) and backfills all walk a Plan, so that what the
// preview lists is what fires. Fire times come in two forms:
//
//   - nominal: the schedule's own time. jobs.next_fire_at holds a nominal
//     time, and schedules advance from nominal times (a cron "@every 5s" is a
//     constant delay from its argument, so walking from anything else shifts
//     its phase).
//   - actual (At): nominal plus the job's jitter offset. A run's scheduled_at
//     is the actual time: it is when the trigger is published, what the
//     handler sees, and what misfire checks and the run's unique key use.
//
// The jitter offset is a hash of the job id and the nominal time, not a
// random draw: planning the same fire again (a replay after a failover, a
// re-enable) gives the same scheduled_at, which the runs' unique key then
// de-duplicates, and a retry of a fire keeps its time.
package timing

import (
	"encoding/binary"
	"hash/fnv"
	"time"

	"github.com/jetjob/jetjob/shared/schedule"
)

// Plan is one job's fire times. The zero Start and End mean unbounded.
type Plan struct {
	Sched  *schedule.Schedule
	JobID  int64
	Jitter time.Duration
	Start  time.Time
	End    time.Time
}

// Next returns the first nominal fire strictly after `after` that lies in
// [Start, End], false when there is none.
func (p Plan) Next(after time.Time) (time.Time, bool) {
	interval := p.Sched.Type() == schedule.FixRate || p.Sched.Type() == schedule.FixDelay
	if !p.Start.IsZero() && after.Before(p.Start) && !interval {
		after = p.Start.Add(-time.Nanosecond)
	}
	t, ok := p.Sched.Next(after)
	if !ok {
		return time.Time{}, false
	}
	if interval && t.Before(p.Start) {
		// An interval schedule starts at start_at itself.
		t = p.Start
	}
	if !p.End.IsZero() && t.After(p.End) {
		return time.Time{}, false
	}
	return t, true
}

// Offset is the jitter offset of the fire at nominal time t: in
// [0, Jitter), whole microseconds (PostgreSQL's resolution), the same every
// time it is asked.
func (p Plan) Offset(t time.Time) time.Duration {
	us := p.Jitter.Microseconds()
	if us <= 0 {
		return 0
	}
	h := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(p.JobID))
	binary.BigEndian.PutUint64(b[8:], uint64(t.UnixMicro()))
	_, _ = h.Write(b[:])
	return time.Duration(h.Sum64()%uint64(us)) * time.Microsecond
}

// At is the actual time of the fire at nominal time t: t (to the
// microsecond) plus its offset.
func (p Plan) At(t time.Time) time.Time {
	return t.Truncate(time.Microsecond).Add(p.Offset(t))
}

// NextN returns up to n actual fire times after the nominal fire `after`
// (exclusive), walking the nominal schedule. first, when not zero, is
// itself the first nominal fire (next_fire_at) and is included.
func (p Plan) NextN(first, after time.Time, n int) []time.Time {
	out := make([]time.Time, 0, min(n, 16))
	t, ok := first, !first.IsZero()
	if !ok {
		t, ok = p.Next(after)
	}
	for ok && len(out) < n {
		out = append(out, p.At(t))
		t, ok = p.Next(t)
	}
	return out
}

// Newest returns the newest nominal fire in (after, before), false when
// there is none. It probes backwards from before in doubling windows, so
// a daily job missed for 200 days costs a handful of steps, not 200.
func (p Plan) Newest(after, before time.Time) (time.Time, bool) {
	for w := time.Second; ; w *= 2 {
		lo := before.Add(-w)
		if !lo.After(after) || w > 1<<31*time.Second {
			lo = after
		}
		t, ok := p.Next(lo)
		if ok && t.Before(before) {
			for {
				u, ok := p.Next(t)
				if !ok || !u.Before(before) {
					return t, true
				}
				t = u
			}
		}
		if lo.Equal(after) {
			return time.Time{}, false
		}
	}
}

// Count counts the nominal fires in (after, before), stopping at limit:
// exact is false when it stopped there.
func (p Plan) Count(after, before time.Time, limit int) (n int, exact bool) {
	t, ok := p.Next(after)
	for ok && t.Before(before) {
		if n == limit {
			return n, false
		}
		n++
		t, ok = p.Next(t)
	}
	return n, true
}

// MinGap is the shortest interval between the schedule's first n fires
// after from, 0 when it has fewer than two: what a jitter must stay below,
// so that jittered fires keep their order and never collide.
func MinGap(s *schedule.Schedule, from time.Time, n int) time.Duration {
	times := s.NextN(from, n)
	var gap time.Duration
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); gap == 0 || d < gap {
			gap = d
		}
	}
	return gap
}
