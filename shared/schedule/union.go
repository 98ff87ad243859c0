package schedule

import "time"

// MaxUnion bounds the schedules of one union: a job's schedules are a few
// wall-clock rules ("weekdays at 9, Saturdays at 12"), and each one costs
// every Next of the union a step.
const MaxUnion = 16

// Union is the schedule that fires whenever any of parts fires: a job with
// several schedules (weekdays at 9:00 in one zone, Saturdays at 12:00 in
// another). Two parts that fire at the same instant make one fire, so a
// union never fires twice at once (and the runs' unique key on (job,
// scheduled_at) would refuse a second run anyway). Only cron and quartz
// schedules combine: each is a rule on its own zone's wall clock, and
// Next of one is independent of the others' fires; an interval schedule's
// phase comes from its previous fire, which a union would shift. The first
// part is the union's Type, Expr and TimeZone; one part is itself.
func Union(parts ...*Schedule) (*Schedule, error) {
	switch {
	case len(parts) == 0:
		return nil, invalidf(nil, "schedules: want at least one")
	case len(parts) == 1:
		return parts[0], nil
	case len(parts) > MaxUnion:
		return nil, invalidf(nil, "schedules: %d given, at most %d", len(parts), MaxUnion)
	}
	for i, p := range parts {
		if p.typ != Cron && p.typ != Quartz {
			return nil, invalidf(nil, "schedules[%d]: type %s cannot be combined with other schedules (only cron and quartz can)", i, p.typ)
		}
		if _, ok := p.eval.(everySchedule); ok {
			return nil, invalidf(nil, "schedules[%d]: %q cannot be combined with other schedules: @every counts from the previous fire, which another schedule's fire would move", i, p.expr)
		}
	}
	u := *parts[0]
	u.eval = unionEval(parts)
	u.parts = parts
	return &u, nil
}

// Parts are the schedules of a union, nil for a single schedule.
func (s *Schedule) Parts() []*Schedule { return s.parts }

// LocationAt is the zone of the schedule that fires at t: for a union, the
// first of its parts that fires at t (that part's wall clock is the day t
// falls on, for calendars); otherwise, and when no part fires at t, the
// schedule's own zone.
func (s *Schedule) LocationAt(t time.Time) *time.Location {
	for _, p := range s.parts {
		if n, ok := p.Next(t.Add(-time.Nanosecond)); ok && n.Equal(t) {
			return p.Location()
		}
	}
	return s.Location()
}

// unionEval fires at the earliest next fire of its parts.
type unionEval []*Schedule

func (u unionEval) next(after time.Time) (time.Time, bool) {
	var best time.Time
	found := false
	for _, p := range u {
		if t, ok := p.Next(after); ok && (!found || t.Before(best)) {
			best, found = t, true
		}
	}
	return best, found
}
